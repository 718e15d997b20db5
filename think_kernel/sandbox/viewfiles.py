"""The files of a review view, read by a privileged kernel without following a link.

A review view (an overlay's upper folder, or a copy of the workspace) is written by sandboxed
code: whatever it holds may be a link planted to make the kernel read or write elsewhere. So
every walk and read here starts from a held directory fd and opens each component with
``O_NOFOLLOW``; links are listed as links, never followed; only regular files are read::

    with ViewDir.open(upper) as view:
        entries = view.scan()                   # {"src/a.py": Entry("file", sig), ...}
        data = view.read("src/a.py")            # bytes, or None if missing / not a file
    live = scan_live(workspace)                 # {"src/a.py": sig} of the live files

Tool state is skipped as the workspace's file watch skips it (``.git``, virtual
environments, ``node_modules``, every hidden folder): what runs write there stays in the
view and never reaches the proposal.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

#: Folders that hold tools' state, not work (the same rule as the workspace's file watch).
IGNORED_DIRS = frozenset({".git", ".hg", ".svn", ".think", ".ipynb_checkpoints", "__pycache__",
                          "node_modules", ".venv", "venv", ".tox", ".mypy_cache",
                          ".pytest_cache", ".ruff_cache", ".cache"})  # fmt: skip
#: overlayfs marks a folder that hides the lower one's entries with this (``user.`` in a user
#: namespace mount).
OPAQUE_XATTRS = ("trusted.overlay.opaque", "user.overlay.opaque")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

Sig = tuple[int, int, int]  # (inode, size, mtime_ns): changed when the file changed


def ignored(name: str) -> bool:
    """True for a folder whose contents are tool state (not walked, never proposed)."""
    return name in IGNORED_DIRS or name.startswith(".") or name.endswith(".egg-info")


def check_path(path: str) -> str:
    """``path`` if it is a plain workspace-relative POSIX path, else ValueError (absolute,
    ``..``, empty components, NUL)."""
    parts = path.split("/")
    if not path or "\0" in path or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{path!r} is not a plain path inside the workspace")
    return path


@dataclass(frozen=True)
class Entry:
    """One entry of a view: ``file`` (with its sig), ``link``, ``whiteout`` (overlayfs's mark
    of a deleted lower entry) or ``opaque`` (a folder hiding the lower one's entries)."""

    kind: str
    sig: Sig | None = None


def _sig(st: os.stat_result) -> Sig:
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class ViewDir:
    """A folder held open by fd; every access below it refuses links."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @classmethod
    def open(cls, path: Path) -> ViewDir:
        """Hold ``path`` (itself must not be a link)."""
        return cls(os.open(path, _DIR_FLAGS))

    def close(self) -> None:
        """Let go of the folder."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> ViewDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def scan(self, skip: frozenset[str] = frozenset()) -> dict[str, Entry]:
        """Every file, link, whiteout and opaque folder below, by relative path (folders in
        ``skip``, relative paths, are not walked)."""
        out: dict[str, Entry] = {}
        self._scan(os.dup(self.fd), "", out, skip)
        return out

    def _scan(self, fd: int, prefix: str, out: dict[str, Entry], skip: frozenset[str]) -> None:
        try:
            with os.scandir(fd) as it:
                entries = list(it)
        except OSError:
            os.close(fd)
            return
        try:
            for e in entries:
                rel = prefix + e.name
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    if ignored(e.name) or rel in skip:
                        continue
                    try:
                        sub = os.open(e.name, _DIR_FLAGS, dir_fd=fd)
                    except OSError:
                        continue
                    if _opaque(sub):
                        out[rel] = Entry("opaque")
                    self._scan(sub, rel + "/", out, skip)
                elif stat.S_ISREG(st.st_mode):
                    out[rel] = Entry("file", _sig(st))
                elif stat.S_ISLNK(st.st_mode):
                    out[rel] = Entry("link")
                elif stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
                    out[rel] = Entry("whiteout")
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def _parent(self, path: str) -> Iterator[tuple[int, str]]:
        """The held fd of ``path``'s folder and its last name (OSError through a link)."""
        *dirs, name = check_path(path).split("/")
        fd = os.dup(self.fd)
        try:
            for d in dirs:
                nfd = os.open(d, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = nfd
            yield fd, name
        finally:
            os.close(fd)

    def read(self, path: str, limit: int) -> bytes | None:
        """The content of the regular file ``path``; None if it is missing, a link or not a
        file; OSError(EFBIG) past ``limit`` bytes."""
        try:
            with self._parent(path) as (dfd, name):
                fd = os.open(name, _FILE_FLAGS, dir_fd=dfd)
        except OSError as e:
            if e.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR, errno.EISDIR):
                return None
            raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None
            if st.st_size > limit:
                raise OSError(errno.EFBIG, f"{path} is larger than {limit} bytes")
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)


def _opaque(fd: int) -> bool:
    for name in OPAQUE_XATTRS:
        with contextlib.suppress(OSError):
            if os.getxattr(fd, name) == b"y":
                return True
    return False


def scan_live(root: Path, skip: frozenset[str] = frozenset()) -> dict[str, Sig]:
    """The live workspace's regular files and their sigs (links are not followed)."""
    try:
        view = ViewDir.open(root)
    except OSError:
        return {}
    with view:
        return {p: e.sig for p, e in view.scan(skip).items() if e.kind == "file" and e.sig}


def under(path: str, folder: str) -> bool:
    """True if ``path`` is ``folder`` or lies below it."""
    return path == folder or path.startswith(folder + "/")
