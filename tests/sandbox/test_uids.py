"""Per-session uids are unique across processes (real flock locks, real processes), a
crashed holder frees its uid, and the lock folder cannot be planted."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from think_kernel.sandbox.launch import exclude
from think_kernel.sandbox.uids import UidRangeExhausted, acquire_uid

HOLDER = """
import sys, time
from think_kernel.sandbox.uids import acquire_uid
leases = [acquire_uid(int(sys.argv[1]), 2, sys.argv[2]) for _ in range(2)]
print(" ".join(str(l.uid) for l in leases), flush=True)
time.sleep(600)
"""


@pytest.fixture
def lock_dir() -> Iterator[str]:
    base = tempfile.mkdtemp(prefix="think-uid-locks-")
    yield os.path.join(base, "locks")
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.slow
def test_uids_are_unique_across_processes_and_freed_by_a_crash(lock_dir: str) -> None:
    start = 1_650_000_000  # a range no other test uses
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(start), lock_dir],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None
        held = sorted(int(x) for x in holder.stdout.readline().split())
        assert held == [start, start + 1]  # the other process holds the whole range
        with pytest.raises(UidRangeExhausted):
            acquire_uid(start, 2, lock_dir)
    finally:
        holder.kill()  # a crash: the kernel releases its locks
        holder.wait()
    mine = [acquire_uid(start, 2, lock_dir) for _ in range(2)]
    assert sorted(m.uid for m in mine) == [start, start + 1]
    with pytest.raises(UidRangeExhausted):  # and within one process, too
        acquire_uid(start, 2, lock_dir)
    for lease in mine:
        lease.release()
    assert acquire_uid(start, 2, lock_dir).uid in (start, start + 1)


def test_a_planted_lock_dir_is_refused(lock_dir: str, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.symlink(target, lock_dir)  # someone planted a link where the lock dir goes
    with pytest.raises(OSError):
        acquire_uid(1_650_000_100, 4, lock_dir)
    os.unlink(lock_dir)
    os.mkdir(lock_dir, 0o777)  # a folder others may write
    with pytest.raises(PermissionError, match="0700"):
        acquire_uid(1_650_000_100, 4, lock_dir)
    os.chmod(lock_dir, 0o700)
    assert acquire_uid(1_650_000_100, 4, lock_dir).uid >= 1_650_000_100


def test_landlock_paths_carve_out_a_private_folder(tmp_path: Path) -> None:
    """Landlock only grants access, so a private folder under an allowed one is carved out."""
    (tmp_path / "share" / "jupyter" / "think" / "abc").mkdir(parents=True)
    (tmp_path / "share" / "jupyter" / "kernels").mkdir()
    (tmp_path / "share" / "doc").mkdir()
    (tmp_path / "lib").mkdir()
    (tmp_path / "top.txt").write_text("x")
    private = str(tmp_path / "share" / "jupyter" / "think")
    got = sorted(exclude([str(tmp_path), "/usr"], [private]))
    assert got == sorted([str(tmp_path / "share" / "jupyter" / "kernels"),
                          str(tmp_path / "share" / "doc"), str(tmp_path / "lib"),
                          str(tmp_path / "top.txt"), "/usr"])  # fmt: skip
    assert exclude([private + "/abc"], [private]) == []
