"""bench.startup and ``python -m bench --only``: the sections can be measured alone, and the
startup figures are each given against ``python -c pass``."""

from __future__ import annotations

from pathlib import Path

import bench.__main__ as bench_main
import pytest
from bench import startup


def test_only_measures_the_sections_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "startup" in bench_main.SECTIONS
    measured: list[str] = []
    monkeypatch.setattr(bench_main, "section", lambda name: measured.append(name) or {})
    bench_main.main(["--only", "startup,report"])
    assert measured == ["startup", "report"]
    assert '"startup": {}' in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        bench_main.main(["--only", "nope"])
    assert refused.value.code == 2


def test_startup_figures_are_ratios_to_python(monkeypatch: pytest.MonkeyPatch) -> None:
    timed: list[list[str]] = []

    def median(argv: list[str], _repeats: int, _cwd: Path) -> float:
        timed.append(list(argv))
        return 0.02 if argv[1:] == ["-c", "pass"] else 0.08

    monkeypatch.setattr(startup, "_median", median)
    monkeypatch.setattr(startup, "_sweep", lambda agents, _n, _work: 1.0)
    monkeypatch.setattr(startup, "_inline_runs_per_s", lambda _work: (50.0, 40))
    figures = startup.startup_figures()
    assert figures["python_c_pass_s"] == 0.02
    for name in ("version", "help", "tasks_list", "tasks_show"):
        assert figures[name] == {"s": 0.08, "vs_python": 4.0}
    assert figures["eval_scripted"] == {"s": 1.0, "vs_python": 50.0}
    assert figures["make_run"]["vs_python"] == 50.0
    assert figures["inline_runs_per_s"] == {
        "runs": 40,
        "runs_per_s": 50.0,
        "ms_per_run": 20.0,
        "run_vs_python": 1.0,
    }
    assert [a[1:] for a in timed[1:]] == list(startup.QUICK.values())
