"""The session sandbox's start grants its group access to the workspace while the workspace
lives: a file the walk listed may be renamed away before its turn (an agent's write renames
its temp file into place). That used to fail the sandbox's start, and the first code cell
with it ("... .hello.py.<hex>.think-tmp (killed)")."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from think_kernel.sandbox import launch
from think_kernel.sandbox.launch import _ACL_GROUP, _read_acl, grant_tree

GID = 1_650_100_000  # a group no file here has


def _has_grant(path: Path) -> bool:
    entries = _read_acl(str(path), "system.posix_acl_access", os.lstat(path).st_mode)
    return (_ACL_GROUP, GID) in entries


def test_a_file_renamed_away_during_the_walk_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "kept.py").write_text("x = 1\n")
    temp = ws / ".hello.py.0123456789abcdef.think-tmp"
    temp.write_text("print('hi')\n")
    walk = os.walk

    def walk_then_rename(top: str) -> Iterator[tuple[str, list[str], list[str]]]:
        for entry in walk(top):
            if temp.exists():  # listed: now the write completes, as it can any time
                temp.rename(ws / "hello.py")
            yield entry

    monkeypatch.setattr(launch.os, "walk", walk_then_rename)
    grant_tree(ws, GID)
    assert _has_grant(ws / "kept.py") and _has_grant(ws / "sub")
    assert (ws / "hello.py").read_text() == "print('hi')\n"
