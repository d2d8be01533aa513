"""``env_number``: the one reader of numeric ``SREZ_*`` variables (daemon, LLM agent, managed)."""

from __future__ import annotations

import pytest

from srez_env.env_vars import env_number


class BadSetting(ValueError):
    pass


@pytest.mark.parametrize(
    ("raw", "expected"), [(None, 7.0), ("", 7.0), ("  ", 7.0), ("2.5", 2.5), (" 1 ", 1.0)]
)
def test_env_number_reads_a_number_or_gives_the_default(raw: str | None, expected: float) -> None:
    environ = {} if raw is None else {"SREZ_X": raw}
    assert env_number(environ, "SREZ_X", 7.0, low=1.0) == expected
    assert env_number({}, "SREZ_X", None) is None


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("soon", "SREZ_X='soon' is not a number"),
        ("nan", "is not a number"),
        ("inf", "is not a number"),
        ("0.5", "SREZ_X='0.5' must be at least 1"),
    ],
)
def test_env_number_refuses_with_the_callers_error(raw: str, says: str) -> None:
    with pytest.raises(BadSetting, match=says):
        env_number({"SREZ_X": raw}, "SREZ_X", None, low=1.0, error=BadSetting)
