"""A session's share of the machine: its uid, its cgroup, its scratch folder and
workspace access, and how to list and kill every one of its processes.

Everything here is synchronous and done once per sandbox before its launcher starts (a few
syscalls, plus the workspace ACL walk as root), so a pool can prepare sessions ahead of need::

    res = SessionResources(config, tier, workspace, scratch)
    res.prepare()                 # uid, cgroup, scratch, ACLs (raises ResourceError)
    res.identity                  # (uid, gid) of the session's processes, or None
    res.pids(root) / res.kill_all(root)   # root: the launcher's host pid (no cgroup case)
    res.release()
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
from pathlib import Path

from . import envpaths, launch
from .cgroups import SessionCgroup, sweep_stale
from .config import SandboxConfig
from .launcher import descendants
from .limits import LimitRow, describe_limits
from .tiers import Tier
from .uids import UidLease, UidRangeExhausted, acquire_uid, kill_uid, try_uid


class ResourceError(RuntimeError):
    """The session could not get its uid, or its uid could not reach the Python install."""


class SessionResources:
    """The uid lease, the cgroup and the process bookkeeping of one sandbox."""

    def __init__(self, config: SandboxConfig, tier: Tier, workspace: Path, scratch: Path):
        self.config = config
        self.tier = tier
        self.workspace = workspace
        self.scratch = scratch
        self.uid_lease: UidLease | None = None
        self.cgroup: SessionCgroup | None = None
        #: Why a cgroup (or one of its controllers) is missing, for %think_status.
        self.cgroup_notes: list[str] = []
        self._known: list[int] = []

    @property
    def identity(self) -> tuple[int, int] | None:
        """(uid, gid) of the session's sandboxed processes; None when the kernel is not root."""
        if os.geteuid() != 0:
            return None
        if self.uid_lease is not None:
            return self.uid_lease.uid, self.config.sandbox_gid
        return self.config.sandbox_uid, self.config.sandbox_gid

    def prepare(self) -> None:
        """Take a uid and a cgroup, make the scratch folder, grant workspace access."""
        cfg = self.config
        if os.geteuid() == 0 and cfg.session_uids:
            try:
                self.uid_lease = acquire_uid(cfg.uid_range_start, cfg.uid_range_size,
                                             cfg.uid_lock_dir)  # fmt: skip
            except (UidRangeExhausted, OSError) as e:
                raise ResourceError(f"cannot give this session its own uid: {e}") from None
        if cfg.cgroups:
            name = (f"think-u{self.uid_lease.uid}" if self.uid_lease
                    else f"think-p{os.getpid()}-{secrets.token_hex(4)}")  # fmt: skip
            self.cgroup, self.cgroup_notes = SessionCgroup.create(
                name,
                memory_bytes=cfg.session_memory_mb << 20,
                max_pids=cfg.max_processes,
                cpu_weight=cfg.cpu_weight,
                parent=cfg.cgroup_parent,
            )
        if self.cgroup is not None:
            sweep_stale([d.parent for d in self.cgroup.dirs.values()], self._is_stale)
        for sub in ("home", "tmp"):
            (self.scratch / sub).mkdir(mode=0o700, exist_ok=True)
        launch.ensure_private(cfg)
        ident = self.identity
        if ident is None:
            return
        uid, gid = ident
        for p in (self.scratch, self.scratch / "home", self.scratch / "tmp"):
            os.chown(p, uid, gid)  # 0700: private to this session's uid
        if cfg.grant_acl:
            launch.ensure_search(self.scratch, gid)
            # Never the Python environment (a project's .venv): code the session uid could
            # write there would run in the kernel next.
            ws = str(self.workspace)
            env = [p for p in envpaths.core_paths() if p.startswith(ws.rstrip("/") + "/")]
            keep_out = [*launch.private_paths(cfg), *env]
            launch.grant_tree(self.workspace, gid, keep_out)
        if self.tier != Tier.BUBBLEWRAP:  # tier 1 re-binds these under a readable tmpfs
            self._reach_python(gid)

    def _reach_python(self, gid: int) -> None:
        """Tiers 2 and 3 have no mounts of their own: the session's group must be able to
        traverse every folder on the way to the interpreter (search-only ACLs), else the
        session fails now, with the fix, instead of every import failing later."""
        if self.config.grant_acl:
            try:
                for needed in [*launch.python_paths(), str(launch.INSIDE_DIR)]:
                    launch.ensure_search(Path(needed) / "x", gid)
            except OSError as e:
                raise ResourceError(f"{launch.unreachable_env(gid)} ({e})") from None
        why = launch.unreachable_env(gid)
        if why:
            raise ResourceError(why)

    def _is_stale(self, name: str) -> bool:
        """A session cgroup whose owner is gone: its uid's lock is free, or (kernels that are
        not root) the kernel pid in its name is dead."""
        if name.startswith("think-u") and name[7:].isdigit():
            uid = int(name[7:])
            if self.uid_lease is not None and uid == self.uid_lease.uid:
                return False
            try:
                lease = try_uid(uid, self.config.uid_lock_dir) if os.geteuid() == 0 else None
            except OSError:
                return False
            if lease is None:
                return False
            lease.release()  # held just long enough to know nobody else does
            return True
        pid = name[7:].split("-")[0] if name.startswith("think-p") else ""
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                return True
            except OSError:
                return False
        return False

    def pids(self, root: int | None) -> list[int]:
        """Host pids of the session's processes: its cgroup, else ``root`` (the launcher's
        host pid) and its descendants, a /proc scan."""
        if self.cgroup is not None:
            return self.cgroup.pids()
        if root is None:
            return []
        self._known = [root, *descendants(root)]
        return self._known

    def known_pids(self, root: int | None) -> list[int]:
        """The session's processes as last listed (no /proc scan without a cgroup)."""
        if self.cgroup is not None:
            return self.cgroup.pids()
        if root is not None and root not in self._known:
            self._known = [root]
        return self._known

    def kill_all(self, root: int | None) -> None:
        """SIGKILL every process of the session: by cgroup, by its own uid, or by tree."""
        if self.cgroup is not None:
            self.cgroup.kill_all()
        elif self.uid_lease is not None:
            kill_uid(self.uid_lease.uid)
        elif root is not None:
            for _ in range(10):
                pids = descendants(root)
                if not pids:
                    break
                for pid in pids:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)

    def limits(self) -> list[LimitRow]:
        """Every limit in force and the mechanism enforcing it."""
        return describe_limits(self.config, self.tier, self.identity, self.uid_lease is not None,
                               self.cgroup, self.cgroup_notes)  # fmt: skip

    def release(self) -> None:
        """Remove the cgroup (killing what is left) and give the uid back."""
        if self.cgroup is not None:
            self.cgroup.remove()
        if self.uid_lease is not None:
            self.uid_lease.release()
