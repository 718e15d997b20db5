"""One uid per session, unique across every kernel on the machine.

When the kernel runs as root, each sandbox takes a uid from a configured range and holds it
with an exclusive ``flock`` on ``<lock dir>/<uid>.lock`` for its whole life; the lock dies
with the process, so a crashed kernel frees its uid. Sessions with different uids cannot
signal or trace each other, and ``RLIMIT_NPROC`` counts each session on its own::

    lease = acquire_uid(start=1_600_000_000, size=4096, lock_dir="")
    lease.uid                  # e.g. 1600000007
    lease.release()            # kills what still runs as that uid, frees the lock

Taking a uid is a few ``open``/``flock`` calls and one scan of ``/proc`` (for processes a
crashed owner left behind), so a pool can take uids ahead of need.
"""

from __future__ import annotations

import errno
import fcntl
import os
import random
import signal
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path


class UidRangeExhausted(RuntimeError):
    """Every uid of the configured range is held by a live sandbox."""


def default_lock_dir() -> Path:
    """``/run/think-sandbox`` where ``/run`` exists, else a folder in the system temp dir."""
    if os.path.isdir("/run"):
        return Path("/run/think-sandbox")
    return Path(tempfile.gettempdir()) / "think-sandbox-locks"


def _safe_lock_dir(path: Path) -> int:
    """Open (creating) the lock dir, refusing anything but a root-owned 0700 directory: the
    folder may sit in a world-writable temp dir where someone could have planted it."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    st = os.fstat(fd)
    if st.st_uid != 0 or stat.S_IMODE(st.st_mode) & 0o077:
        os.close(fd)
        raise PermissionError(f"uid lock dir {path} must be owned by root with mode 0700")
    return fd


def processes_of_uid(uid: int) -> list[int]:
    """Live pids whose real, effective or saved uid is ``uid`` (from /proc/PID/status;
    zombies are dead already and only wait for their reaper)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as f:
                for line in f:
                    if line.startswith(b"State:") and line.split()[1] == b"Z":
                        break
                    if line.startswith(b"Uid:"):
                        if uid in [int(x) for x in line.split()[1:4]]:
                            found.append(int(name))
                        break
        except (OSError, ValueError, IndexError):
            continue
    return found


def kill_uid(uid: int, rounds: int = 20) -> None:
    """SIGKILL every process running as ``uid`` (repeat: one may fork while we scan)."""
    for _ in range(rounds):
        pids = processes_of_uid(uid)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


@dataclass(eq=False)
class UidLease:
    """A uid held by this process until :meth:`release`."""

    uid: int
    _fd: int | None

    def release(self) -> None:
        """Kill whatever still runs as the uid, then give the uid back."""
        if self._fd is None:
            return
        kill_uid(self.uid)
        os.close(self._fd)
        self._fd = None


def _try_lock(dfd: int, uid: int) -> UidLease | None:
    fd = os.open(f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                 dir_fd=dfd)  # fmt: skip
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return None
        raise
    kill_uid(uid)  # whatever a crashed previous holder left running
    return UidLease(uid, fd)


def try_uid(uid: int, lock_dir: str = "") -> UidLease | None:
    """Take this very uid if no live sandbox holds it (to clean up after a crashed one)."""
    dfd = _safe_lock_dir(Path(lock_dir) if lock_dir else default_lock_dir())
    try:
        return _try_lock(dfd, uid)
    finally:
        os.close(dfd)


def acquire_uid(start: int, size: int, lock_dir: str = "") -> UidLease:
    """Take a free uid from ``start .. start + size - 1`` (root only)."""
    dfd = _safe_lock_dir(Path(lock_dir) if lock_dir else default_lock_dir())
    try:
        # Start at a random slot: kernels starting together rarely contend for one lock, and
        # a uid just released is not handed out again at once.
        first = random.randrange(size)
        for i in range(size):
            lease = _try_lock(dfd, start + (first + i) % size)
            if lease is not None:
                return lease
    finally:
        os.close(dfd)
    raise UidRangeExhausted(
        f"all {size} sandbox uids from {start} are in use; raise SandboxConfig.uid_range_size"
    )
