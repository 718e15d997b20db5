"""How the zygote is started on each tier: scrubbed environment, bwrap arguments, Landlock
paths, private paths, workspace ACLs."""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import pwd
import stat
import struct
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from . import envpaths
from .config import SandboxConfig
from .tiers import Tier

if TYPE_CHECKING:
    from .review import ViewMount

INSIDE_DIR = Path(__file__).resolve().parent / "inside"
ZYGOTE = INSIDE_DIR / "_think_zygote.py"

#: Environment names never copied into the sandbox, whatever the configuration says.
SECRET_PATTERNS = ("*KEY*", "*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*", "*CREDENTIAL*",
                   "*AUTH*", "*COOKIE*", "*SESSION*", "JPY_*", "JUPYTER_*")  # fmt: skip


def is_secret_name(name: str) -> bool:
    """True for names that look like credentials (matched case-insensitively)."""
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, p) for p in SECRET_PATTERNS)


def python_paths() -> list[str]:
    """Everything the sandboxed interpreter needs to read: its prefixes, standard library,
    site-packages and the folders their ``.pth`` files and editable installs add."""
    return envpaths.env_paths()


def jupyter_private_paths() -> list[str]:
    """The Jupyter runtime dir (connection files, server token), config dir, and the folder of
    Think's store (``<jupyter data dir>/think``)."""
    try:
        from jupyter_core.paths import jupyter_config_dir, jupyter_data_dir, jupyter_runtime_dir

        return [jupyter_runtime_dir(), jupyter_config_dir(),
                str(Path(jupyter_data_dir()) / "think")]  # fmt: skip
    except ImportError:
        home = Path.home()
        return [str(home / ".local/share/jupyter/runtime"), str(home / ".jupyter"),
                str(home / ".local/share/jupyter/think")]  # fmt: skip


def private_paths(config: SandboxConfig) -> list[str]:
    """Every path sandboxed code may neither read nor write, absolute and normalised."""
    out = []
    for p in [*jupyter_private_paths(), *config.private_paths]:
        p = os.path.abspath(os.path.expanduser(p))
        if p not in out:
            out.append(p)
    return out


def store_root() -> Path:
    """``<jupyter data dir>/think``, where the store lives (one folder per workspace)."""
    return Path(jupyter_private_paths()[2])


def ensure_private(config: SandboxConfig) -> None:
    """Create the store folder (so tier 1 has a mount point to hide) and make it, and the
    configured private paths, 0700: on tier 3 a root kernel's file modes are all that stands
    between a session uid and the store."""
    root = store_root()
    with contextlib.suppress(OSError):
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
    for p in [str(root), *config.private_paths]:
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and st.st_mode & 0o077:
            os.chmod(p, stat.S_IMODE(st.st_mode) & 0o700)


def exclude(paths: Iterable[str], private: Iterable[str]) -> list[str]:
    """``paths`` with every ``private`` path carved out: a path that contains a private one is
    replaced by its entries minus the branch leading there (recursively); a path inside a
    private one is dropped. Landlock only adds access, so this is how tier 2 hides a folder
    that lies under an allowed one (e.g. a Jupyter data dir inside the Python prefix)."""
    private = [p.rstrip("/") or "/" for p in private]
    out: list[str] = []

    def visit(path: str) -> None:
        if _under(path, private):
            return
        inner = [p for p in private if p != path and _under(p, [path])]
        if not inner:
            out.append(path)
            return
        try:
            entries = os.listdir(path)
        except OSError:
            return
        for name in entries:
            child = os.path.join(path, name)
            if os.path.isdir(child) and not os.path.islink(child):
                visit(child)
            elif not _under(child, private):
                out.append(child)

    for p in paths:
        visit(os.path.abspath(p))
    return out


def sandbox_env(config: SandboxConfig, session_id: str, scratch: Path, tier: Tier) -> dict:
    """A fresh environment: nothing secret from the kernel, only what code needs."""
    pybin = str(Path(sys.executable).parent)
    env = {
        "PATH": f"{pybin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(scratch / "home"),
        "TMPDIR": str(scratch / "tmp"),
        "TERM": "dumb",
        # Set, so bash does not look the session uid up (getpwuid) to fill $SHELL in: that
        # lookup is not in /etc/passwd and goes on to load libnss_systemd, whose socket the
        # sandbox refuses anyway: wasted work on every command.
        "SHELL": config.bash_path,
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(INSIDE_DIR),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": str(scratch / "home" / ".matplotlib"),
        # One BLAS thread: threads do not survive fork and count against RLIMIT_NPROC.
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "THINK_SANDBOX": session_id,
        "THINK_SANDBOX_TIER": str(int(tier)),
    }
    for name in config.env_passthrough:
        if name in os.environ and not is_secret_name(name):
            env[name] = os.environ[name]
    for name, value in config.extra_env.items():
        if is_secret_name(name):
            raise ValueError(f"refusing to pass secret-looking variable {name} into the sandbox")
        env[name] = str(value)
    return env


def home_dirs() -> list[str]:
    """$HOME and the kernel user's home in the password database (they differ when Jupyter
    runs with $HOME set elsewhere), by their real paths (a tmpfs there hides a home reached
    through a link too); never ``/``."""
    homes = [str(Path.home())]
    with contextlib.suppress(KeyError):
        homes.append(pwd.getpwuid(os.geteuid()).pw_dir)
    out = []
    for h in homes:
        h = os.path.realpath(h)
        if h != "/" and os.path.isdir(h) and h not in out:
            out.append(h)
    return out


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def bwrap_argv(
    bwrap: str,
    config: SandboxConfig,
    workspace: Path,
    scratch: Path,
    as_root: bool,
    view: ViewMount | None = None,
) -> list[str]:
    """The bwrap command line that wraps the zygote (tier 1); ``view`` (review mode) is
    mounted at the workspace's path instead of the live workspace."""
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if as_root:
        # Root: no user namespace (uid 0 inside would still be root for RLIMIT_NPROC). The
        # zygote keeps only what it needs to give its children the session uid and to kill
        # them (a launcher its children cannot signal).
        argv += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
                 "--unshare-cgroup-try", "--cap-drop", "ALL", "--cap-add", "CAP_SETUID",
                 "--cap-add", "CAP_SETGID", "--cap-add", "CAP_KILL"]  # fmt: skip
    else:
        argv += ["--unshare-all"]
    argv += ["--die-with-parent", "--new-session"]
    # Hiding tmpfs get a small size: in a user namespace they would be writable.
    small = ["--size", str(1 << 20)]
    covered = ["/tmp"]
    private = private_paths(config)
    for p in [*home_dirs(), *private, *config.hidden_paths]:
        if os.path.exists(p) and not os.path.islink(p) and not _under(p, covered):
            covered.append(p)
    needed = [*python_paths(), str(INSIDE_DIR)]
    if as_root:
        # A folder the session uid cannot traverse (a Python under a 0700 /root while $HOME
        # points elsewhere) would hide the interpreter: a tmpfs takes its place and what is
        # needed below it is bound back in, read-only. Nothing else of it was reachable.
        for p in blocked_ancestors(needed, config.sandbox_gid):
            if not _under(p, covered):
                covered.append(p)
    covered = [c for c in covered if not _under(c, [o for o in covered if o != c])]
    # /tmp is the session's own, writable like a real one (some code ignores $TMPDIR).
    scratch_size = str((config.scratch_mb or 1024) << 20)
    for p in covered:
        if p == "/tmp":
            argv += ["--perms", "01777", "--size", scratch_size, "--tmpfs", p]
        elif os.path.isdir(p):
            argv += [*small, "--tmpfs", p]
        elif os.path.exists(p):
            argv += ["--ro-bind", "/dev/null", p]
    made: set[str] = set()

    def parents_0755(p: str) -> None:
        # bwrap creates missing parents of a mount point as 0700 root dirs, which the sandbox
        # uid could not traverse; create them 0755 first.
        root = next((c for c in covered if _under(p, [c])), None)
        if root is None:
            return
        for parent in reversed(Path(p).parents):
            sp = str(parent)
            if _under(sp, [root]) and sp != root and sp not in made:
                made.add(sp)
                argv.extend(["--perms", "0755", "--dir", sp])

    # Re-expose what lives under a hidden path and is needed: the interpreter and our code.
    rebound = [str(workspace), str(scratch)]
    for p in needed:
        if _under(p, covered):
            parents_0755(p)
            argv += ["--ro-bind", p, p]
            rebound.append(p)
    # POSIX semaphores (multiprocessing locks and queues, joblib) live in /dev/shm: a
    # private, size-limited one, writable by the session uid.
    argv += ["--perms", "01777", "--size", scratch_size, "--tmpfs", "/dev/shm"]
    parents_0755(str(workspace))
    ws = str(workspace)
    if view is None:
        argv += ["--bind", ws, ws]
    elif view.mode == "overlay":
        # The live workspace is the read-only lower layer: writes land in the upper folder.
        argv += ["--overlay-src", ws, "--overlay", str(view.source), str(view.work), ws]
    else:
        argv += ["--bind", str(view.source), ws]
    # The interpreter and its packages stay read-only also inside the workspace (a project's
    # .venv): whatever sandboxed code wrote there would run in the kernel next.
    for p in envpaths.outermost(envpaths.core_paths()):
        if p != str(workspace) and _under(p, [str(workspace)]):
            argv += ["--ro-bind", p, p]
    parents_0755(str(scratch))
    if config.scratch_mb > 0:
        # A size-limited tmpfs, private to this session's mount namespace (its pages count
        # in the session's memory cgroup); the zygote makes home/ and tmp/ in it as the
        # session uid.
        argv += ["--perms", "01777", "--size", str(config.scratch_mb << 20), "--tmpfs",
                 str(scratch)]  # fmt: skip
    else:
        argv += ["--bind", str(scratch), str(scratch)]
    for p in private:  # again after the binds: a private folder inside a re-exposed one
        if _under(p, rebound) and os.path.isdir(p):
            argv += [*small, "--tmpfs", p]
    argv += ["--chdir", str(workspace), "--"]
    return argv


def zygote_config(
    config: SandboxConfig,
    tier: Tier,
    workspace: Path,
    scratch: Path,
    ctl_fd: int,
    identity: tuple[int, int] | None,
    cgroup_fds: Sequence[int] = (),
    defer_preload: bool = False,
    view: ViewMount | None = None,
) -> str:
    """The JSON handed to the zygote in argv[1]. ``identity`` is the (uid, gid) its children
    take (root kernels); ``cgroup_fds`` are the session's cgroup.procs files to join;
    ``defer_preload``: the heavy imports wait for a "preload" request or a Python run;
    ``view`` (review mode): tiers 2 and 3 work in its copy, never in the live workspace."""
    if view is not None and tier != Tier.BUBBLEWRAP:
        workspace = view.source
    cfg: dict = {
        "ctl_fd": ctl_fd,
        "cwd": str(workspace),
        "bash": config.bash_path,
        "prefork": config.prefork,
        "preload": list(config.preload_modules),
        "preload_code": config.preload_code if config.preload_modules else "",
        "preload_deferred": defer_preload,
        "seccomp": tier in (Tier.BUBBLEWRAP, Tier.LANDLOCK),
        # No socket() at all, only socketpairs and the inherited channels:
        # tier 2 has no network namespace, and even tier 1's read-only view of the host
        # file system shows sockets (connect() ignores read-only mounts).
        "no_sockets": tier in (Tier.BUBBLEWRAP, Tier.LANDLOCK),
        # A live app that binds its own port (serve_app's port) may make inet sockets, on
        # tier 1 only: bwrap_argv always unshares the network there, and the new namespace
        # holds no interface but lo, so nothing outside the sandbox is reachable (not the
        # internet, not the host's own 127.0.0.1). AF_UNIX stays refused to it.
        "app_net": tier == Tier.BUBBLEWRAP,
        "drop_uid": identity[0] if identity else None,
        "drop_gid": identity[1] if identity else None,
        "cgroup_fds": list(cgroup_fds),
        "make_dirs": [str(scratch / "home"), str(scratch / "tmp")],
    }
    if tier == Tier.LANDLOCK:
        # /dev/shm holds POSIX semaphores (multiprocessing); on tier 2 it is the host's,
        # shared with other processes and guarded by file modes only (README, Security).
        devices = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
                   "/dev/shm"]  # fmt: skip
        private = private_paths(config)
        cfg["landlock"] = {
            "read": exclude([*config.readable_paths, *python_paths(), str(INSIDE_DIR)], private),
            "write": exclude([str(workspace), str(scratch), *devices], private),
        }
    return json.dumps(cfg)


# ----------------------------------------------------------------------------- POSIX ACLs

_ACL_USER_OBJ, _ACL_USER, _ACL_GROUP_OBJ, _ACL_GROUP, _ACL_MASK, _ACL_OTHER = (
    1, 2, 4, 8, 0x10, 0x20)  # fmt: skip
_ACL_UNDEFINED_ID = 0xFFFFFFFF


def _read_acl(path: str, name: str, mode: int) -> dict[tuple[int, int], int]:
    try:
        raw = os.getxattr(path, name, follow_symlinks=False)
    except OSError:
        raw = b""
    entries: dict[tuple[int, int], int] = {}
    for off in range(4, len(raw) - 7, 8):
        tag, perm, ident = struct.unpack_from("<HHI", raw, off)
        entries[(tag, ident)] = perm
    if not entries:
        u = _ACL_UNDEFINED_ID
        entries = {(_ACL_USER_OBJ, u): (mode >> 6) & 7, (_ACL_GROUP_OBJ, u): (mode >> 3) & 7,
                   (_ACL_OTHER, u): mode & 7}  # fmt: skip
    return entries


def _write_acl(path: str, name: str, entries: dict[tuple[int, int], int]) -> None:
    body = b"".join(struct.pack("<HHI", t, p, i) for (t, i), p in sorted(entries.items()))
    os.setxattr(path, name, struct.pack("<I", 2) + body, follow_symlinks=False)


def grant_gid(path: str, gid: int, perm: int, default: bool) -> None:
    """Add ``group:gid:perm`` to the access ACL of ``path`` (and its default ACL). A group,
    not a user: every session has its own uid but all share the sandbox group."""
    st = os.lstat(path)
    names = ["system.posix_acl_access"]
    if default and os.path.isdir(path):
        names.append("system.posix_acl_default")
    for name in names:
        entries = _read_acl(path, name, st.st_mode)
        u = _ACL_UNDEFINED_ID
        mask = entries.get((_ACL_MASK, u), 7)  # a chmod since our last grant may lower it
        if entries.get((_ACL_GROUP, gid), 0) & mask & perm == perm:
            continue
        entries[(_ACL_GROUP, gid)] = entries.get((_ACL_GROUP, gid), 0) | perm
        entries[(_ACL_MASK, u)] = entries.get((_ACL_MASK, u), 0) | perm
        _write_acl(path, name, entries)


def group_can_search(path: str, gid: int) -> bool:
    """True when a process of group ``gid`` alone (a session uid owns nothing) may traverse
    the directory ``path``: its mode and its POSIX access ACL decide."""
    real = os.path.realpath(path)
    st = os.stat(real)
    acl = _read_acl(real, "system.posix_acl_access", st.st_mode)
    u = _ACL_UNDEFINED_ID
    mask = acl.get((_ACL_MASK, u), 7)
    groups = []
    if st.st_gid == gid:
        groups.append(acl.get((_ACL_GROUP_OBJ, u), 0) & mask)
    if (_ACL_GROUP, gid) in acl:
        groups.append(acl[(_ACL_GROUP, gid)] & mask)
    if groups:  # a matching group entry decides, "other" is not consulted
        return any(g & 1 for g in groups)
    return bool(acl.get((_ACL_OTHER, u), 0) & 1)


def blocked_ancestors(paths: Iterable[str], gid: int) -> list[str]:
    """For each of ``paths``, the outermost directory on the way there that group ``gid``
    cannot traverse (none listed for a path with a clear way)."""
    out: list[str] = []
    for p in paths:
        for parent in reversed(Path(p).parents):
            sp = str(parent)
            if sp == "/":
                continue
            try:
                if group_can_search(sp, gid):
                    continue
            except OSError:
                break
            if sp not in out:
                out.append(sp)
            break
    return out


def grant_tree(root: Path, gid: int, private: Iterable[str] = ()) -> None:
    """Make ``root`` writable by group ``gid``: rwX ACLs on everything below (and defaults on
    dirs), search permission on each ancestor it could not traverse. ``private`` folders (the
    store, Jupyter's runtime and config dirs) are never granted, also when the workspace
    contains them (``jupyter lab`` started in the home folder): on tier 3 their modes are all
    that keeps a session uid out."""
    skip = [os.path.abspath(p) for p in private]
    ensure_search(root, gid)
    folders = [str(root)]
    with contextlib.suppress(*_VANISHED):
        grant_gid(str(root), gid, 7, default=True)
    while folders:
        folders += _grant_entries(folders.pop(), gid, skip)


#: How a path of a live workspace fails once it was renamed or removed.
_VANISHED = (FileNotFoundError, NotADirectoryError)


def _grant_entries(folder: str, gid: int, skip: list[str]) -> list[str]:
    """Grant what ``folder`` holds (its own default ACL is set already); return its folders.

    The workspace is live while the session's sandbox starts (an agent writes a temp file and
    renames it into place). The folder's default ACL was set before this listing, so a file
    created after it inherits the grant and one created before is listed. One listed but
    renamed before its turn is looked for again, by inode, under its new name."""
    folders: list[str] = []
    missed: set[int] | None = None
    for _ in range(3):  # a file that keeps being renamed is given up (it had its chances)
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            return folders
        lost: set[int] = set()
        for entry in entries:
            if (missed is not None and entry.inode() not in missed) or _under(entry.path, skip):
                continue
            try:
                if entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    grant_gid(entry.path, gid, 7, default=True)
                    folders.append(entry.path)
                else:
                    mode = os.lstat(entry.path).st_mode
                    grant_gid(entry.path, gid, 7 if mode & 0o111 else 6, default=False)
            except _VANISHED:
                lost.add(entry.inode())
        if not lost:
            break
        missed = lost
    return folders


def unreachable_env(gid: int) -> str:
    """Why sandboxed code, as group ``gid`` without mounts of its own (tiers 2 and 3), cannot
    reach the kernel's Python, with the exact fix; empty when it can."""
    needed = [*python_paths(), str(INSIDE_DIR)]
    blocked = blocked_ancestors(needed, gid)
    if not blocked:
        return ""
    modes = ", ".join(f"{b} (mode {stat.S_IMODE(os.stat(b).st_mode):04o})" for b in blocked)
    fix = "; ".join(f"setfacl -m g:{gid}:x {b}" for b in blocked)
    return (f"sandboxed code cannot reach the kernel's Python ({sys.executable}): the sandbox "
            f"group {gid} cannot traverse {modes}. Fix: `{fix}` (search only, nothing becomes "
            "listable or readable), or set c.SandboxConfig.grant_acl = True to let the kernel "
            "do it, or install Python where every user may traverse (e.g. under /opt)")  # fmt: skip


def ensure_search(path: Path, gid: int) -> None:
    """Grant group ``gid`` search (x) on every ancestor of ``path`` it could not traverse."""
    for parent in reversed(Path(path).resolve().parents):
        if not group_can_search(str(parent), gid):
            grant_gid(str(parent), gid, 1, default=False)
