"""A cgroup per session: memory, process count and CPU share across all its processes.

cgroup v2 where the kernel can create one with the controllers it needs (a delegated cgroup
with no processes of its own, see ``SandboxConfig.cgroup_parent``), otherwise cgroup v1 (the
``memory``, ``pids`` and ``cpu`` hierarchies, writable by root), otherwise nothing: the tier
then relies on per-process rlimits, and :attr:`SessionCgroup.mechanisms` says so::

    cg = SessionCgroup.create("think-u1600000007", memory_bytes=4 << 30, max_pids=256,
                              cpu_weight=100)
    fds = cg.attach_fds()       # the zygote writes "0" to each: it and every child join
    cg.pids(); cg.oom_kills(); cg.peak_memory()
    cg.remove()                 # kills what is left, removes the directories

Creating one is a few ``mkdir``/``write`` calls, cheap enough to do ahead of need.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

V1_CONTROLLERS = ("memory", "pids", "cpu")


@dataclass(frozen=True)
class Hierarchy:
    """A mounted cgroup hierarchy and this process's cgroup in it."""

    version: int
    controllers: tuple[str, ...]
    mountpoint: Path
    own: str  # this process's cgroup, relative to the mountpoint, starting with "/"


def hierarchies() -> list[Hierarchy]:
    """The cgroup hierarchies mounted here (from /proc/self/mountinfo and /proc/self/cgroup)."""
    try:
        with open("/proc/self/cgroup") as f:
            membership = [line.rstrip("\n").split(":", 2) for line in f if line.count(":") >= 2]
        with open("/proc/self/mountinfo") as f:
            mounts = f.read().splitlines()
    except OSError:
        return []
    own_v1 = {c: path for _, ctrls, path in membership for c in ctrls.split(",") if c}
    own_v2 = next((path for hid, ctrls, path in membership if hid == "0" and not ctrls), None)
    found: list[Hierarchy] = []
    for line in mounts:
        pre, _, post = line.partition(" - ")
        fields, tail = pre.split(), post.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        root, mountpoint, fstype, superopts = fields[3], fields[4], tail[0], tail[2]
        if fstype == "cgroup2" and own_v2 is not None:
            own = own_v2
        elif fstype == "cgroup":
            ctrls = tuple(o for o in superopts.split(",") if o in V1_CONTROLLERS)
            if not ctrls or ctrls[0] not in own_v1:
                continue
            own = own_v1[ctrls[0]]
        else:
            continue
        # In a cgroup namespace or a bind mount, the mount shows a subtree: strip its root.
        if root != "/" and (own == root or own.startswith(root + "/")):
            own = own[len(root) :] or "/"
        mp = mountpoint.replace("\\040", " ")
        if fstype == "cgroup2":
            try:
                ctrls = tuple((Path(mp) / own.lstrip("/") / "cgroup.controllers").read_text()
                              .split())  # fmt: skip
            except OSError:
                ctrls = ()
            found.append(Hierarchy(2, ctrls, Path(mp), own))
        else:
            found.append(Hierarchy(1, ctrls, Path(mp), own))
    return found


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def read_small(path: str) -> bytes:
    """A small kernel file in one read (no Path or text layers: this runs on every run)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 65536)
    finally:
        os.close(fd)


def _read_ints(path: Path) -> list[int]:
    try:
        return [int(x) for x in read_small(str(path)).split()]
    except (OSError, ValueError):
        return []


@dataclass(eq=False)
class SessionCgroup:
    """The session's cgroup directories and what each enforces."""

    version: int
    dirs: dict[str, Path]  # controller -> directory (v2: every controller maps to one dir)
    #: controller -> human text of the mechanism, for %think_status
    mechanisms: dict[str, str] = field(default_factory=dict)
    _procs_file: str | None = None

    @classmethod
    def create(
        cls, name: str, *, memory_bytes: int, max_pids: int, cpu_weight: int, parent: str = ""
    ) -> tuple[SessionCgroup | None, list[str]]:
        """Create (or reset) cgroup ``name`` with these limits; ``None`` and the reasons
        when no controller could be set up. A zero limit leaves that controller out."""
        wanted = {"memory": memory_bytes > 0, "pids": max_pids > 0, "cpu": cpu_weight > 0}
        if not any(wanted.values()):
            return None, []
        notes: list[str] = []
        hs = hierarchies()
        v2 = next((h for h in hs if h.version == 2 and "memory" in h.controllers), None)
        if v2 is None:
            v2 = next((h for h in hs if h.version == 2 and parent), None)
        if v2 is not None:
            cg, why = cls._create_v2(v2, name, parent, memory_bytes, max_pids, cpu_weight)
            if cg is not None:
                return cg, notes
            notes.append(why)
        cg = cls(1, {})
        for ctrl in V1_CONTROLLERS:
            if not wanted[ctrl]:
                continue
            h = next((h for h in hs if h.version == 1 and ctrl in h.controllers), None)
            if h is None:
                notes.append(f"no cgroup v1 {ctrl} hierarchy is mounted")
                continue
            d = h.mountpoint / (parent or h.own).strip("/") / name
            try:
                _fresh_dir(d)
                if ctrl == "memory":
                    _write(d / "memory.limit_in_bytes", str(memory_bytes))
                    with contextlib.suppress(OSError):  # no swap accounting: nothing to cap
                        _write(d / "memory.memsw.limit_in_bytes", str(memory_bytes))
                    cg.mechanisms[ctrl] = "cgroup v1 memory.limit_in_bytes"
                elif ctrl == "pids":
                    _write(d / "pids.max", str(max_pids))
                    cg.mechanisms[ctrl] = "cgroup v1 pids.max"
                else:
                    shares = max(2, cpu_weight * 1024 // 100)
                    _write(d / "cpu.shares", str(shares))
                    cg.mechanisms[ctrl] = f"cgroup v1 cpu.shares={shares}"
            except OSError as e:
                notes.append(f"cannot create a cgroup v1 {ctrl} group under {d.parent}: "
                             f"{e.strerror}")  # fmt: skip
                with contextlib.suppress(OSError):
                    d.rmdir()
                continue
            cg.dirs[ctrl] = d
        return (cg if cg.dirs else None), notes

    @classmethod
    def _create_v2(
        cls, h: Hierarchy, name: str, parent: str, memory_bytes: int, max_pids: int, weight: int
    ) -> tuple[SessionCgroup | None, str]:
        base = h.mountpoint / (parent or h.own).strip("/")
        need = [c for c, v in (("memory", memory_bytes), ("pids", max_pids), ("cpu", weight)) if v]
        try:
            have = (base / "cgroup.controllers").read_text().split()
            enabled = (base / "cgroup.subtree_control").read_text().split()
            for c in need:
                if c in have and c not in enabled:
                    # EBUSY when ``base`` holds processes (the "no internal processes" rule).
                    _write(base / "cgroup.subtree_control", f"+{c}")
            d = base / name
            _fresh_dir(d)
            active = (d / "cgroup.controllers").read_text().split()
        except OSError as e:
            return None, (
                f"cannot create a cgroup v2 group under {base}: {e.strerror} (set "
                "SandboxConfig.cgroup_parent to a delegated cgroup without processes)"
            )
        cg = cls(2, {})
        try:
            if memory_bytes and "memory" in active:
                _write(d / "memory.max", str(memory_bytes))
                with contextlib.suppress(OSError):
                    _write(d / "memory.swap.max", "0")
                cg.mechanisms["memory"] = "cgroup v2 memory.max"
            if max_pids and "pids" in active:
                _write(d / "pids.max", str(max_pids))
                cg.mechanisms["pids"] = "cgroup v2 pids.max"
            if weight and "cpu" in active:
                _write(d / "cpu.weight", str(weight))
                cg.mechanisms["cpu"] = f"cgroup v2 cpu.weight={weight}"
        except OSError as e:
            with contextlib.suppress(OSError):
                d.rmdir()
            return None, f"cannot set cgroup v2 limits in {d}: {e.strerror}"
        if not cg.mechanisms:
            with contextlib.suppress(OSError):
                d.rmdir()
            return None, f"cgroup v2 at {base} offers none of {', '.join(need)}"
        cg.dirs = dict.fromkeys(cg.mechanisms, d)
        return cg, ""

    # ------------------------------------------------------------------ use

    def _unique_dirs(self) -> list[Path]:
        return list(dict.fromkeys(self.dirs.values()))

    def attach_fds(self) -> list[int]:
        """One ``cgroup.procs`` fd per directory, opened for writing: a process that writes
        ``0`` to them joins the session (permission is checked against us, the opener)."""
        flags = os.O_WRONLY | os.O_CLOEXEC
        return [os.open(d / "cgroup.procs", flags) for d in self._unique_dirs()]

    def pids(self) -> list[int]:
        """Every process in the session (host pids)."""
        if self._procs_file is None:
            d = self.dirs.get("pids") or self._unique_dirs()[0]
            self._procs_file = f"{d}/cgroup.procs"
        try:
            return [int(x) for x in read_small(self._procs_file).split()]
        except (OSError, ValueError):
            return []

    def oom_kills(self) -> int:
        """How many processes the kernel killed for reaching the memory limit so far."""
        d = self.dirs.get("memory")
        if d is None:
            return 0
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            for line in read_small(f"{d}/{name}").splitlines():
                key, _, value = line.partition(b" ")
                if key == b"oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def peak_memory(self) -> int:
        """The most memory the session used at once, in bytes (0 if unknown)."""
        d = self.dirs.get("memory")
        if d is None:
            return 0
        name = "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"
        vals = _read_ints(d / name)
        return vals[0] if vals else 0

    def kill_all(self, wait: float = 2.0) -> None:
        """SIGKILL every process in the session and wait (briefly) until they are gone."""
        end = time.monotonic() + wait
        while True:
            pids = {p for d in self._unique_dirs() for p in _read_ints(d / "cgroup.procs")}
            if not pids or time.monotonic() > end:
                return
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)

    def remove(self) -> None:
        """Kill what is left and remove the directories (safe to call twice)."""
        self.kill_all()
        for d in self._unique_dirs():
            with contextlib.suppress(OSError):
                d.rmdir()
        self.dirs = {}


def sweep_stale(parents: list[Path], is_stale: Callable[[str], bool]) -> int:
    """Remove sibling session cgroups (``think-*``) that ``is_stale(name)`` says nobody owns
    any more (their kernel crashed); return how many were removed."""
    removed = 0
    for parent in dict.fromkeys(parents):
        try:
            names = [n for n in os.listdir(parent) if n.startswith("think-")]
        except OSError:
            continue
        for name in names:
            if is_stale(name):
                SessionCgroup(1, {"x": parent / name}).remove()
                removed += not (parent / name).exists()
    return removed


def _fresh_dir(d: Path) -> None:
    """Make ``d`` (a cgroup); one left by a crashed owner of the same name is emptied."""
    try:
        d.mkdir()
    except FileExistsError:
        SessionCgroup(1, {"x": d}).kill_all()
