"""The session sandbox's start grants its group access to the workspace while the workspace
lives: an agent's write creates a temp file and renames it into place at any moment of the
walk. The file must end up writable by sandboxed code whatever the moment: it used to fail
the sandbox's start ("... .hello.py.<hex>.think-tmp (killed)"), and then to leave the file
without the grant (written before its folder's default ACL was set, renamed after the walk
had listed the folder)."""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from think_kernel.sandbox import Sandbox, SandboxConfig, SandboxError, launch
from think_kernel.sandbox.launch import (
    _ACL_GROUP,
    _ACL_MASK,
    _ACL_UNDEFINED_ID,
    _read_acl,
    grant_tree,
)

GID = 1_650_100_000  # a group no file here has


def _has_grant(path: Path) -> bool:
    """True if group GID may read and write ``path`` (its ACL entry, under the mask)."""
    entries = _read_acl(str(path), "system.posix_acl_access", os.lstat(path).st_mode)
    mask = entries.get((_ACL_MASK, _ACL_UNDEFINED_ID), 7)
    return entries.get((_ACL_GROUP, GID), 0) & mask & 6 == 6


def _write(folder: Path, name: str, text: str) -> None:
    """An agent's write: a temp file created in the folder, then renamed over ``name``."""
    temp = folder / f".{name}.0123456789abcdef.think-tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    os.write(fd, text.encode())
    os.close(fd)
    temp.rename(folder / name)


class _Listing:
    """What os.scandir returns (a context manager and an iterator), over a fixed list."""

    def __init__(self, entries: list[Any]) -> None:
        self._it = iter(entries)

    def __enter__(self) -> _Listing:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        return next(self._it)

    def close(self) -> None:
        """Nothing to close."""


def _after_listing(monkeypatch: pytest.MonkeyPatch, folder: Path, then: Callable[[], None]) -> None:
    """Run ``then`` once, right after the walk has listed ``folder`` (and before it acts on
    what it found): the moment an agent's write may come."""
    scandir = os.scandir
    done = []

    def listing(path: Any = ".") -> Any:
        with scandir(path) as it:
            entries = list(it)
        if not done and os.path.realpath(path) == str(folder):
            done.append(True)
            then()
        return _Listing(entries)

    monkeypatch.setattr(launch.os, "scandir", listing)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with a file and a sub-folder."""
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "kept.py").write_text("x = 1\n")
    return ws


def test_a_file_renamed_away_during_the_walk_is_granted_under_its_new_name(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temp = ws / ".hello.py.0123456789abcdef.think-tmp"
    temp.write_text("print('hi')\n")  # listed by the walk: the write completes after
    _after_listing(monkeypatch, ws, lambda: temp.rename(ws / "hello.py"))
    grant_tree(ws, GID)
    assert _has_grant(ws / "kept.py") and _has_grant(ws / "sub")
    assert (ws / "hello.py").read_text() == "print('hi')\n"
    assert _has_grant(ws / "hello.py")


def test_a_file_written_while_the_walk_lists_its_folder_is_granted(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Created after the listing: it is not in it, so only the folder's default ACL can give
    # it the grant. It must be in force by then.
    _after_listing(monkeypatch, ws, lambda: _write(ws, "hello.py", "print('hi')\n"))
    grant_tree(ws, GID)
    assert _has_grant(ws / "hello.py") and _has_grant(ws / "kept.py")
    _write(ws / "sub", "later.py", "y = 2\n")  # after the walk: the default ACL gives it
    assert _has_grant(ws / "sub" / "later.py")


@pytest.mark.slow
async def test_a_start_that_cannot_prepare_fails_clearly_and_the_next_one_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Preparing the session (uid, cgroup, private paths, workspace ACLs) touches a live file
    # system. An error there is the sandbox's clear, passing refusal (the runtime tries again
    # on the next use), not an unexpected exception the session keeps answering with.
    ws = Path(tempfile.mkdtemp(prefix="think-grant-"))  # outside pytest's 0700 basetemp
    config = SandboxConfig(preload_modules=[])

    def refused(cfg: SandboxConfig) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted", str(ws / "locked"))

    try:
        with monkeypatch.context() as patch:
            patch.setattr(launch, "ensure_private", refused)
            with pytest.raises(SandboxError, match="locked"):
                await Sandbox.create(ws, "grant-prepare", config)
        async with await Sandbox.create(ws, "grant-prepare", config) as sb:
            res = await sb.run_python("print(6 * 7)")
            assert res.ok and res.stdout == "42\n", res
    finally:
        shutil.rmtree(ws, ignore_errors=True)
