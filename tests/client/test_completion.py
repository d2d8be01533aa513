"""``srez completion bash|zsh``: scripts built from the parser, driven through a real bash."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from srez_client.backends.registry import BACKEND_NAMES
from srez_client.cli import main
from srez_client.cli.completion import completion_script
from srez_client.cli.main import build_parser

BASH = shutil.which("bash")


def complete(script: Path, line: str) -> list[str]:
    """What bash offers for the last word of ``line`` (a trailing space: a new empty word)."""
    words = line.split() + ([""] if line.endswith(" ") else [])
    array = " ".join(f"'{w}'" for w in words)
    driver = (
        f"source {script}\nCOMP_WORDS=({array})\nCOMP_CWORD={len(words) - 1}\n"
        '_srez\nprintf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    assert BASH is not None
    out = subprocess.run(
        [BASH, "--norc", "-c", driver], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    return sorted(w for w in out.splitlines() if w)


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("completion") / "srez.bash"
    path.write_text(completion_script(build_parser(), "bash"))
    return path


@pytest.mark.skipif(BASH is None, reason="needs bash")
@pytest.mark.parametrize(
    ("line", "offered"),
    [
        ("srez ru", ["run", "runs"]),
        ("srez runs ", ["exec", "list", "logs", "prune", "results", "rm", "stop", "token", "url"]),
        ("srez runs results --st", ["--status"]),
        ("srez runs results --status ", ["error", "ok", "resolved", "unresolved"]),
        ("srez runs results --json --status r", ["resolved"]),
        ("srez -v runs list --backend ", sorted(BACKEND_NAMES)),
        ("srez managed run nightly --re", ["--results", "--retry-failed"]),
        ("srez completion ", ["bash", "zsh"]),
        ("srez eval --res", ["--results", "--resume"]),
    ],
)
def test_bash_completion_offers_what_the_parser_accepts(
    bash_script: Path, line: str, offered: list[str]
) -> None:
    assert complete(bash_script, line) == offered


@pytest.mark.skipif(BASH is None, reason="needs bash")
def test_bash_completion_after_a_path_option_offers_files(bash_script: Path) -> None:
    here = bash_script.parent
    (here / "results-a").mkdir()
    line = f"srez runs results --results {here}/res"
    assert complete(bash_script, line) == [f"{here}/results-a"]


def test_completion_command_prints_each_script(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "bash"]) == 0
    bash = capsys.readouterr().out
    assert "complete -o default -F _srez srez srez-client" in bash
    assert main(["completion", "zsh"]) == 0
    zsh = capsys.readouterr().out
    assert zsh.startswith("#compdef srez srez-client\n") and "compdef _srez srez" in zsh
    assert "compadd" in zsh and "local path" not in zsh  # $path is zsh's PATH
    # both read the same tables
    assert (
        bash.split("\n_srez() {")[0].split("\n", 1)[1]
        == zsh.split("\n_srez() {")[0].split("\n", 2)[2]
    )
    assert main(["completion", "fish"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "invalid choice: 'fish'" in err and "zsh" in err


ZSH = shutil.which("zsh")


def test_zsh_completion_finds_the_command_path(tmp_path: Path) -> None:
    if ZSH is None:  # .ci/run installs zsh and sets REQUIRE_ZSH=1: there a missing zsh fails
        if os.environ.get("REQUIRE_ZSH") == "1":
            pytest.fail("REQUIRE_ZSH=1 but zsh is not installed")
        pytest.skip("needs zsh")
    # compadd and _files are stubs that print what would be offered (zsh filters by prefix)
    script = tmp_path / "_srez"
    script.write_text(completion_script(build_parser(), "zsh"))
    driver = (
        'compdef() { :; }; compadd() { shift; print -l -- "$@"; }; _files() { print FILES; }\n'
        f"source {script}\n"
        'words=(srez runs results --status ""); CURRENT=5; _srez; print -- ---\n'
        "words=(srez -v managed run x --re); CURRENT=6; _srez; print -- ---\n"
        'words=(srez runs results --results ""); CURRENT=5; _srez\n'
    )
    assert ZSH is not None
    out = subprocess.run(
        [ZSH, "-f", "-c", driver], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    status, managed, files = (part.split() for part in out.split("---"))
    assert status == ["ok", "error", "resolved", "unresolved"]
    assert managed == ["-h", "--help", "--results", "--target", "--retry-failed", "--wait"]
    assert files == ["FILES"]
