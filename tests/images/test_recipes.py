"""The image recipes' pure parts, without an engine: where the base image's packages come from
(the host's apt sources), and what the leak check searches for (markers from the task files)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "env" / "srez_env" / "tasks"


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


base = _load("build_base", ROOT / "images" / "base" / "build_base.py")
build = _load("srez_image_build", ROOT / "images" / "build.py")
leaks = sys.modules["leaks"]  # build.py imports its sibling by name

DEB822 = """\
Types: deb
# a comment
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
"""


def _sources(tmp_path: Path, files: dict[str, str]) -> list[object]:
    folder = tmp_path / "sources.list.d"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    result: list[object] = base.host_apt_sources(tmp_path / "sources.list", folder)
    return result


def test_the_mirror_comes_from_the_hosts_deb822_sources(tmp_path: Path) -> None:
    plan = base.plan_mirror(_sources(tmp_path, {"debian.sources": DEB822}))
    assert plan.mirror == "http://mirror.example/debian"
    assert plan.lines == (
        "deb http://mirror.example/debian bookworm main",
        "deb http://mirror.example/debian bookworm-updates main",
        "deb http://mirror.example/debian-security bookworm-security main",
    )


def test_one_line_sources_with_options_and_other_vendors(tmp_path: Path) -> None:
    sources = _sources(
        tmp_path,
        {
            # a vendor's repository that borrows Debian's suite name: not a mirror of Debian
            "0vendor.list": "deb [arch=amd64 signed-by=/k.gpg] https://vendor.example/linux/debian bookworm stable\n",
            "1vendor.list": "deb https://vendor.example/apt stable-x main\n",
            "debian.list": "# deb http://old.example/debian buster main\n"
            "deb [ signed-by=/k.gpg ] http://mirror.example/debian/ trixie main\n",
            "ignored.list.disabled": "deb http://elsewhere.example/debian bookworm main\n",
        },
    )
    plan = base.plan_mirror(sources)
    # any Debian suite names a Debian mirror; the image's own suite is asked of it
    assert plan.lines == ("deb http://mirror.example/debian bookworm main",)


def test_a_disabled_entry_is_not_used(tmp_path: Path) -> None:
    disabled = DEB822.replace("Types: deb\n# a comment", "Types: deb\nEnabled: no", 1)
    with pytest.raises(base.BuildError):
        base.plan_mirror(_sources(tmp_path, {"debian.sources": disabled.split("\n\n")[0]}))


def test_no_debian_mirror_is_a_one_line_error(tmp_path: Path) -> None:
    ubuntu = "deb http://archive.example/ubuntu jammy main\ndeb-src http://x.example/debian bookworm main\n"
    with pytest.raises(base.BuildError) as caught:
        base.plan_mirror(_sources(tmp_path, {"ubuntu.list": ubuntu}))
    message = str(caught.value)
    assert "no Debian mirror" in message and "\n" not in message


def test_every_task_has_its_own_markers_and_none_is_public() -> None:
    markers, names = leaks.secret_markers()
    assert len(names) == 40
    specific = [m for m in markers if m not in leaks.GENERIC_MARKERS]
    for name in names:
        text = (TASKS / name).read_text()
        assert any(m in text for m in specific), f"{name}: no task-specific marker"
    shipped = ("srez_env", "srez_daemon", "srez_client")
    public = [
        (ROOT / rel).read_text(errors="replace")
        for rel in build.source_files()
        if rel.parts[1:2] and rel.parts[1] in shipped and not leaks.root_only(ROOT / rel)
    ]
    assert len(public) > 50
    assert not [m for m in markers if any(m in text for text in public)]
    # the field names in task.py are not mistaken for a task file's keys
    assert "ground_truth: GroundTruth" not in "".join(markers)


def test_the_content_hash_follows_sources_pins_and_base(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    files = [Path("a.py")]
    first = build.content_hash(files, ["pydantic==2"], "sha256:1", root=tmp_path)
    assert first == build.content_hash(files, ["pydantic==2"], "sha256:1", root=tmp_path)
    assert first != build.content_hash(files, ["pydantic==3"], "sha256:1", root=tmp_path)
    assert first != build.content_hash(files, ["pydantic==2"], "sha256:2", root=tmp_path)
    (tmp_path / "a.py").write_text("x = 2\n")
    assert first != build.content_hash(files, ["pydantic==2"], "sha256:1", root=tmp_path)


def test_caches_are_not_sources() -> None:
    files = build.source_files()
    assert Path("pyproject.toml") in files
    assert not [f for f in files if "__pycache__" in f.parts or f.suffix == ".pyc"]
