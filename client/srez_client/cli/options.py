"""What the run commands share: ``--backend``/``--any`` and the backend they name.

``--backend`` (default :data:`~srez_client.backends.registry.DEFAULT_BACKEND`) says where runs
live and ``--any`` lets a command act on runs this state did not launch (docs/design.md §8). The
backend is made through the registry from the environment (:mod:`srez_client.backends.config`),
so a command never needs to know which backend it holds.

The argument parser is built from this module, so it stays light: a backend's config and class
are imported by the functions that make them, when a command runs.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Final

from srez_client.backends.registry import BACKEND_NAMES, DEFAULT_BACKEND, ENTRIES
from srez_client.errors import UsageError

if TYPE_CHECKING:
    from srez_client.backends.base import Backend
    from srez_client.backends.config import BackendConfig


def backend_options(
    parser_class: type[argparse.ArgumentParser], *, any_owner: bool = True
) -> argparse.ArgumentParser:
    """A parent parser with ``--backend``, and ``--any`` unless ``any_owner`` is false (a command
    that launches its own run has no other owner's run to act on)."""
    where = parser_class(add_help=False)
    where.add_argument(
        "--backend",
        default=DEFAULT_BACKEND,
        choices=BACKEND_NAMES,
        help=f"default {DEFAULT_BACKEND}",
    )
    if any_owner:
        where.add_argument(
            "--any", action="store_true", help="act on runs this state did not launch"
        )
    add_backend_settings(where)
    return where


def add_backend_settings(parser: argparse.ArgumentParser) -> None:
    """The options backends declare for their settings (their registry entries' ``options``,
    e.g. ``--ray-address``), each standing for its ``SREZ_*`` variable."""
    for entry in ENTRIES:
        for option in entry.options:
            variable = option.variable
            where = f"the {entry.name} backend's {option.setting} (${variable})"
            parser.add_argument(
                option.flag, dest=f"setting_{variable}", metavar="VALUE", help=where
            )


def environment_of(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` with the backend settings given as options in their variables' place."""
    given = {
        name.removeprefix("setting_"): value
        for name, value in vars(args).items()
        if name.startswith("setting_") and value is not None
    }
    return {**environ, **given}


def comma_list(option: str, text: str) -> list[str]:
    """The items of a comma list option (``--tasks a,b``), stripped.

    Raises:
        UsageError: If an item is empty (``a,,b``, a trailing comma): a typo that would otherwise
            run fewer things than the user wrote, without a word.
    """
    items = [part.strip() for part in text.split(",")]
    if not all(items):
        msg = f"{option} {text!r} has an empty item; give a comma list without blanks, e.g. a,b"
        raise UsageError(msg)
    return items


def config_of(args: argparse.Namespace) -> BackendConfig:
    """The config of the backend the options name, read from the environment."""
    from srez_client.backends.config import BackendSettings
    from srez_client.backends.registry import config_for

    environ = environment_of(args, os.environ)
    settings = BackendSettings.from_env(environ, any_owner=getattr(args, "any", False))
    return config_for(getattr(args, "backend", DEFAULT_BACKEND), settings)


def backend_of(args: argparse.Namespace) -> Backend:
    """The backend the options name, configured from the environment."""
    from srez_client.backends.registry import make_backend

    return make_backend(config_of(args))


_INTEGER: Final = re.compile(r"[+-]?[0-9]{1,20}")
SECONDS_MAX: Final = 30 * 86_400.0
"""The longest time an option takes (30 days): beyond, a timer overflows or never ends."""
SEED_MAX: Final = 2**53 - 1
"""The largest seed (of a run or of a task set): JSON numbers stay exact up to here, in a browser
too, and every record that holds a seed can encode it."""


def positive_float(text: str) -> float:
    """An option value that must be a number of seconds > 0 (at most :data:`SECONDS_MAX`)."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value <= SECONDS_MAX:  # NaN and infinity fail too
        msg = (
            f"must be a number of seconds > 0 and at most {SECONDS_MAX:.0f} (30 days), got {text!r}"
        )
        raise argparse.ArgumentTypeError(msg)
    return value


def int_between(low: int, high: int, what: str = "an integer") -> Callable[[str], int]:
    """An argparse type: ``what``, an integer from ``low`` to ``high`` (a huge one is refused
    before anything sizes a list by it)."""

    def parse(text: str) -> int:
        value = int(text) if _INTEGER.fullmatch(text.strip()) else None
        if value is None or not low <= value <= high:
            msg = f"must be {what} from {low} to {high}, got {text[:40]!r}"
            raise argparse.ArgumentTypeError(msg)
        return value

    return parse


run_seed = int_between(0, SEED_MAX, "a run seed")
"""``--seed`` of a run: 0 to :data:`SEED_MAX`."""


def say(line: str) -> None:
    """One line of progress on stderr."""
    sys.stderr.write(f"srez: {line}\n")
    sys.stderr.flush()


def run_async(make: Callable[[], Awaitable[int]]) -> int:
    """The exit status of the coroutine ``make()`` returns, run on a fresh event loop."""
    import asyncio

    async def main() -> int:
        return await make()

    return asyncio.run(main())


def model_for(agents: list[str], model: str | None) -> str:
    """The model of runs of ``agents``: ``--model`` is required by the LLM agents and refused
    without one (a baseline has no model, and a slug no agent uses is a mistake worth saying)."""
    from srez_client.models_catalog import valid_slug
    from srez_env.agents import CUSTOM_PREFIXES
    from srez_env.agents.llm import LLM_SPECS

    wants = [a for a in agents if a in LLM_SPECS]
    # a custom agent may call a model: then the slug names its results folder
    custom = bool(agents) and all(a.startswith(CUSTOM_PREFIXES) for a in agents)
    if model is None:
        if wants:
            msg = f"--agent {wants[0]} needs --model SLUG (a litellm slug, e.g. openai/gpt-4o-mini)"
            raise UsageError(msg)
        return "none"
    if not (wants or custom):
        msg = f"--model {model!r} is only for --agent llm, llm-json, cmd:NAME or mcp:NAME"
    elif not valid_slug(model):
        msg = f"--model {model!r} is not a model slug (provider/model, e.g. openai/gpt-4o-mini)"
    else:
        return model
    raise UsageError(msg)
