"""A full disk said where (:mod:`srez_client.disk`): the full device is found through the chain
of errors, its folder named, and any command that meets one says so in one line (a real 16 KiB
tmpfs as a command's output folder)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from client_helpers import srez_command

from srez_client.disk import full_folder, is_no_space, no_space_line
from tmpfs_kit import small_tmpfs


def _raised_from(cause: BaseException) -> RuntimeError:
    try:
        raise RuntimeError("the run could not start") from cause
    except RuntimeError as e:
        return e


def test_a_full_device_is_found_through_the_chain_and_its_folder_named(tmp_path: Path) -> None:
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "output.json"))
    assert is_no_space(full) and is_no_space(_raised_from(full))
    assert is_no_space(OSError(errno.EDQUOT, "quota"))
    assert not is_no_space(OSError(errno.EACCES, "denied")) and not is_no_space(None)
    assert full_folder(_raised_from(full), Path("/elsewhere")) == tmp_path  # the file's folder
    folder = OSError(errno.ENOSPC, "full", str(tmp_path))
    assert full_folder(folder, Path("/elsewhere")) == tmp_path  # a folder named as itself
    assert full_folder(OSError(errno.ENOSPC, "full"), tmp_path / "x") == tmp_path / "x"
    inner = OSError(errno.ENOSPC, "full", str(tmp_path / "a" / ".run.partial" / "dialog.jsonl"))
    assert no_space_line(inner, tmp_path, roots=(tmp_path,)).startswith(
        f"no space left on the device of {tmp_path} ("
    )
    line = no_space_line(full, Path("/elsewhere"))
    assert line.startswith(f"no space left on the device of {tmp_path} (") and "bytes free" in line


def test_any_command_on_a_full_disk_says_where_in_one_line(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "out", "16k") as out:
        done = srez_command(
            tmp_path / "state", "tasks", "generate", "--seed", "4242", "--count", "3",
            "--out", str(out), timeout=300,
        )  # fmt: skip
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1, done.stderr[-2000:]
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"srez: error: no space left on the device of {out} ("), lines
    assert "nothing already written is lost; free some space" in lines[0], lines
