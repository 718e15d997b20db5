"""Where a workspace's store lives: outside the workspace, in the Jupyter data directory.

    folder = store_dir("/home/me/project")   # <jupyter data dir>/think/project-3f2a.../
    folder / "think.db"                      # sessions, messages, action log (Store)
    folder / "blobs"                         # large contents (next to think.db)
    folder / "ydocs.db"                      # standalone Yjs history (collab.local)
    folder / "kernel-sessions.json"          # which session a kernel resumes (resume.py)

Sandboxed code may write anywhere in the workspace, so nothing of ours may live there (issue
9: the store was overwritten through the loopback). The folders are created 0700. A
configured ``store_path`` (``ThinkConfig.store_path``, ``ThinkExtension.store_path``) names
the SQLite file; the rest goes next to it.

Workspaces from before this change kept all of it in ``<root>/.think/``: the first process
to open the default store of such a workspace moves that folder's contents over, once, under
an exclusive lock (a second process starting at the same moment waits, then finds the work
done). A name that already exists in the new folder is not overwritten: the old copy goes to
``legacy-<time>/``, so nothing is lost.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import stat
import threading
import time
from pathlib import Path

from ..safefs import SafeRoot

log = logging.getLogger(__name__)

STORE_FILE = "think.db"
LEGACY_DIR = ".think"
#: What people keep in ``<root>/.think/`` today (skills, self-written tools, agent types):
#: never part of an old store, so never moved out of the workspace.
WORKSPACE_ENTRIES = frozenset({"skills", "tools", "agents"})
MARKER = "workspace.json"
_prepared: set[Path] = set()
_lock = threading.Lock()


def data_dir() -> Path:
    """``<jupyter data dir>/think``: every workspace's store folder is in here."""
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "think"


def workspace_key(root: str | os.PathLike[str]) -> str:
    """A stable folder name for a workspace: its name (readable) and a hash of its real path."""
    real = os.path.realpath(root)
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", os.path.basename(real))[:40].strip("._")
    return f"{name}-{digest}" if name else digest


def default_store_dir(root: str | os.PathLike[str]) -> Path:
    """The store folder of a workspace when none is configured."""
    return data_dir() / workspace_key(root)


def store_dir(root: str | os.PathLike[str], store_path: str = "") -> Path:
    """The folder of the store in use (created, private, and the legacy folder moved in).

    ``store_path`` is a configured SQLite file; empty means the default for ``root``.
    """
    if store_path:
        folder = Path(os.path.abspath(os.path.expanduser(store_path))).parent
        _make_private(folder)
        return folder
    folder = default_store_dir(root)
    if folder not in _prepared:
        with _lock:
            if folder not in _prepared:
                prepare(folder, root)
                _prepared.add(folder)
    return folder


def store_file(root: str | os.PathLike[str], store_path: str = "") -> Path:
    """The SQLite file of the store in use for ``root``."""
    if store_path:
        return Path(os.path.abspath(os.path.expanduser(store_path)))
    return store_dir(root) / STORE_FILE


def private_paths(store: str | os.PathLike[str] | None = None) -> list[Path]:
    """Folders the file tools must never touch, even when the workspace contains them
    (``jupyter lab`` started in the home folder): our stores, Jupyter's runtime files
    (connection keys, server tokens) and its configuration."""
    from jupyter_core.paths import jupyter_config_dir, jupyter_runtime_dir

    out = [data_dir(), Path(jupyter_runtime_dir()), Path(jupyter_config_dir())]
    if store is not None:
        out.append(Path(store))
    return out


def _make_private(folder: Path) -> None:
    """Create ``folder`` (and ``<data dir>/think``) as 0700, tightening ones we own."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    ours = [folder, data_dir()] if data_dir() in folder.parents else [folder]
    for d in ours:
        with contextlib.suppress(OSError):
            st = os.lstat(d)
            if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & 0o077:
                os.chmod(d, 0o700)


def prepare(folder: Path, root: str | os.PathLike[str]) -> None:
    """Create the store folder and, the first time, move ``<root>/.think/`` into it."""
    _make_private(folder)
    if (folder / MARKER).exists():
        return
    fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a second process starting now waits here
        if (folder / MARKER).exists():
            return
        moved = _move_legacy(Path(os.path.realpath(root)), folder)
        marker = {"root": os.path.realpath(root), "created": time.time(), "moved": moved}
        tmp = folder / f".{MARKER}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(marker, indent=1), "utf-8")
        os.replace(tmp, folder / MARKER)
    finally:
        os.close(fd)  # releases the lock


def _move_legacy(root: Path, folder: Path) -> list[str]:
    """Move the entries of ``<root>/.think`` into ``folder``; returns what moved."""
    fs = SafeRoot(root)
    try:
        st = fs.lstat(LEGACY_DIR)
    except OSError:
        return []
    if st is None:
        return []
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        # A link, a file, or a folder someone else made (sandboxed code can write the
        # workspace): not our old store, so it is left alone.
        log.warning("%s/%s is not a Think store folder; left as it is", root, LEGACY_DIR)
        return []
    moved: list[str] = []
    legacy_to = folder / f"legacy-{int(time.time())}"
    lfd = fs.open_dir([LEGACY_DIR])
    try:
        for entry in sorted(os.scandir(lfd), key=lambda e: e.name):
            if entry.is_symlink() or not (entry.is_file() or entry.is_dir()):
                continue
            if entry.name in WORKSPACE_ENTRIES:
                continue
            dest = folder / entry.name
            if os.path.lexists(dest):
                legacy_to.mkdir(mode=0o700, exist_ok=True)
                dest = legacy_to / entry.name
            _move(lfd, entry.name, dest)
            moved.append(entry.name)
    finally:
        os.close(lfd)
    try:
        if not _has_entries(fs):  # links and odd files were left: so is the folder
            fs.rmtree(LEGACY_DIR)
    except OSError as e:
        log.warning("could not remove %s/%s: %s", root, LEGACY_DIR, e)
    if moved:
        log.warning("Think moved its store from %s/%s to %s", root, LEGACY_DIR, folder)
    return moved


def _has_entries(fs: SafeRoot) -> bool:
    with fs.scandir(LEGACY_DIR) as entries:
        return bool(entries)


def _move(src_dfd: int, name: str, dest: Path) -> None:
    """Rename, or copy then delete when the data dir is on another file system."""
    try:
        os.rename(name, dest, src_dir_fd=src_dfd)
        return
    except OSError as e:
        if e.errno != errno.EXDEV:
            raise
    tmp = dest.with_name(f".{dest.name}.moving")
    _copy_at(src_dfd, name, tmp)
    os.replace(tmp, dest)
    st = os.stat(name, dir_fd=src_dfd, follow_symlinks=False)
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(name, dir_fd=src_dfd)
    else:
        os.unlink(name, dir_fd=src_dfd)


def _copy_at(src_dfd: int, name: str, dest: Path, depth: int = 0) -> None:
    """Copy a file or a folder tree below ``src_dfd`` without following links."""
    if depth > 8:  # the store nests two levels (blobs/ab/key); deeper is not ours
        return
    st = os.stat(name, dir_fd=src_dfd, follow_symlinks=False)
    if stat.S_ISREG(st.st_mode):
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=src_dfd)
        with os.fdopen(fd, "rb") as f, open(dest, "wb") as out:
            shutil.copyfileobj(f, out, 1 << 20)
        os.chmod(dest, 0o600)
    elif stat.S_ISDIR(st.st_mode):
        dest.mkdir(mode=0o700)
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                     dir_fd=src_dfd)  # fmt: skip
        try:
            for entry in os.scandir(fd):
                if not entry.is_symlink():
                    _copy_at(fd, entry.name, dest / entry.name, depth + 1)
        finally:
            os.close(fd)
