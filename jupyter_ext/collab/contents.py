"""A contents manager whose saves never follow a link planted in the workspace.

jupyter_server's file manager writes with ``atomic_writing``: it copies the file to ``.~NAME``
and writes the target in place, following links at every step (and resolving a link at the
target on purpose); its checkpoints copy into ``.ipynb_checkpoints/`` the same way. Sandboxed
code can write the workspace, so it could plant ``.~a.py`` (or ``.ipynb_checkpoints``) as a
link to a ``.pth`` file of the server's venv: the next save, by a person or by the agent
through a room, would write there with the server's privileges.

:class:`ThinkContentsManager` keeps everything of ``AsyncLargeFileManager`` but routes every
write, read, rename, delete and copy through :class:`~think_kernel.safefs.SafeRoot`; its
default checkpoints class is :class:`ThinkCheckpoints`. ``ThinkExtension`` installs it when no
other contents manager is configured and warns at start when another one is in use.

Reads follow links only while they stay inside the root (``allow_links_out_of_root`` restores
Jupyter's behaviour for links leading out, e.g. to a data volume, at the cost that sandboxed
code may plant a link to a secret file and have a person or the agent open it).
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
from base64 import decodebytes, encodebytes
from collections.abc import Iterator
from functools import partial
from typing import IO, Any

import nbformat
from anyio.to_thread import run_sync
from jupyter_server import _tz as tz
from jupyter_server.services.contents.filecheckpoints import AsyncFileCheckpoints
from jupyter_server.services.contents.fileio import path_to_intermediate, path_to_invalid
from jupyter_server.services.contents.filemanager import is_hidden
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from send2trash import send2trash
from tornado import web
from traitlets import Bool, default

from think_kernel.safefs import SafeRoot, UnsafePathError

_roots: dict[str, SafeRoot] = {}


def safe_root(root_dir: str) -> SafeRoot:
    """One SafeRoot per server root."""
    root = os.path.abspath(os.path.expanduser(root_dir))
    if root not in _roots:
        _roots[root] = SafeRoot(root)
    return _roots[root]


def api_path(root_dir: str, os_path: str) -> str:
    """The root-relative POSIX path of an OS path the manager built (404 if outside)."""
    rel = os.path.relpath(os.path.abspath(os_path), os.path.abspath(root_dir))
    if rel == ".":
        return ""
    if rel.startswith(".."):
        raise web.HTTPError(404, f"{os_path} is outside the root contents directory")
    return rel.replace(os.sep, "/")


@contextlib.contextmanager
def http_errors(path: str) -> Iterator[None]:
    """Filesystem refusals as 4xx answers with a message a person can act on."""
    try:
        yield
    except UnsafePathError as e:
        raise web.HTTPError(400 if e.errno != errno.EACCES else 403, str(e)) from None
    except FileNotFoundError:
        raise web.HTTPError(404, f"No such file or directory: {path}") from None
    except IsADirectoryError:
        raise web.HTTPError(400, f"{path} is a directory") from None
    except NotADirectoryError:
        raise web.HTTPError(400, f"{path}: a part of the path is not a directory") from None
    except FileExistsError:
        raise web.HTTPError(409, f"{path} already exists") from None


class ThinkCheckpoints(AsyncFileCheckpoints):
    """``.ipynb_checkpoints/NAME-checkpoint.ext`` next to each file, never through a link."""

    @property
    def fs(self) -> SafeRoot:
        """The root, reached without following links."""
        return safe_root(self.root_dir)

    def _cp(self, checkpoint_id: str, path: str) -> str:
        path = path.strip("/")
        parent, name = posixpath.split(path)
        base, ext = posixpath.splitext(name)
        return posixpath.join(parent, self.checkpoint_dir, f"{base}-{checkpoint_id}{ext}")

    def checkpoint_path(self, checkpoint_id: str, path: str) -> str:
        """The OS path of a checkpoint (nothing is created here)."""
        return os.path.join(self.root_dir, *self._cp(checkpoint_id, path).split("/"))

    def _model(self, checkpoint_id: str, rel: str) -> dict[str, Any] | None:
        st = self.fs.lstat(rel)
        if st is None or not stat.S_ISREG(st.st_mode):
            return None
        return {"id": checkpoint_id, "last_modified": tz.utcfromtimestamp(st.st_mtime)}

    async def create_checkpoint(self, contents_mgr: Any, path: str) -> dict[str, Any]:
        """Copy the file into its checkpoint."""
        cp = self._cp("checkpoint", path)
        with http_errors(path), self.perm_to_403():
            await run_sync(self.fs.copy_file, path.strip("/"), cp)
            model = await run_sync(self._model, "checkpoint", cp)
        assert model is not None
        return model

    async def restore_checkpoint(self, contents_mgr: Any, checkpoint_id: str, path: str) -> None:
        """Copy the checkpoint back over the file."""
        with http_errors(path), self.perm_to_403():
            await run_sync(self.fs.copy_file, self._cp(checkpoint_id, path), path.strip("/"))

    async def rename_checkpoint(self, checkpoint_id: str, old_path: str, new_path: str) -> None:
        """Move a checkpoint along with its file."""
        old, new = self._cp(checkpoint_id, old_path), self._cp(checkpoint_id, new_path)

        def move() -> None:
            if self._model(checkpoint_id, old) is None:
                return
            self.fs.makedirs(posixpath.dirname(new))
            self.fs.rename(old, new, replace=True)

        with http_errors(new_path), self.perm_to_403():
            await run_sync(move)

    async def delete_checkpoint(self, checkpoint_id: str, path: str) -> None:
        """Delete a file's checkpoint."""
        cp = self._cp(checkpoint_id, path)
        with http_errors(path), self.perm_to_403():
            if await run_sync(self._model, checkpoint_id, cp) is None:
                self.no_such_checkpoint(path.strip("/"), checkpoint_id)
            await run_sync(self.fs.unlink, cp)

    async def list_checkpoints(self, path: str) -> list[dict[str, Any]]:
        """The file's checkpoint, if it has one."""
        with http_errors(path):
            model = await run_sync(self._model, "checkpoint", self._cp("checkpoint", path))
        return [] if model is None else [model]


class ThinkContentsManager(AsyncLargeFileManager):
    """``AsyncLargeFileManager`` with every file operation made link-safe (module doc)."""

    allow_links_out_of_root = Bool(
        False,
        config=True,
        help="Follow symbolic links that lead out of the root when reading a file. Sandboxed "
        "code can plant such links, so a person or the agent opening one could read any file "
        "the server can. Writes never follow links. Default: False.",
    )

    @default("checkpoints_class")
    def _think_checkpoints_default(self) -> type:
        return ThinkCheckpoints

    @property
    def fs(self) -> SafeRoot:
        """The root, reached without following links."""
        return safe_root(self.root_dir)

    def _rel(self, os_path: str) -> str:
        return api_path(self.root_dir, os_path)

    # -- writing -------------------------------------------------------------------------

    @contextlib.contextmanager
    def atomic_writing(self, os_path: str, *args: Any, **kwargs: Any) -> Iterator[IO[Any]]:
        """A random temp file next to the target, renamed over it (no ``.~`` backup)."""
        rel = self._rel(os_path)
        text = kwargs.pop("text", args[0] if args else True)
        encoding = kwargs.pop("encoding", "utf-8")
        kwargs.pop("log", None)
        if text:
            kwargs.setdefault("newline", "\n")
        with self.perm_to_403(os_path), http_errors(rel):
            with self.fs.open_atomic(
                rel, text=text, encoding=encoding, mkdirs=False, **kwargs
            ) as f:
                yield f

    async def _save_large_file(self, os_path: str, content: str, format: str) -> None:
        """Append one chunk of an upload, never through a link."""
        if format not in {"text", "base64"}:
            raise web.HTTPError(400, "Must specify format of file contents as 'text' or 'base64'")
        try:
            data = content.encode("utf8") if format == "text" else decodebytes(content.encode())
        except Exception as e:
            raise web.HTTPError(400, f"Encoding error saving {os_path}: {e}") from e
        rel = self._rel(os_path)
        with self.perm_to_403(os_path), http_errors(rel):
            await run_sync(self.fs.append_bytes, rel, data)

    async def _save_directory(self, os_path: str, model: Any, path: str = "") -> None:
        """Create a directory (not through a link)."""
        if not self.allow_hidden and is_hidden(os_path, self.root_dir):
            raise web.HTTPError(400, f"Cannot create hidden directory {os_path!r}")
        rel = self._rel(os_path)
        with self.perm_to_403(os_path), http_errors(rel):
            st = await run_sync(self.fs.lstat, rel)
            if st is None:
                await run_sync(self.fs.mkdir, rel)
            elif not stat.S_ISDIR(st.st_mode):
                raise web.HTTPError(400, f"Not a directory: {os_path}")

    def _copy(self, src: str, dest: str) -> None:  # type: ignore[override]
        """Copy a file inside the root."""
        with self.perm_to_403(dest), http_errors(dest):
            self.fs.copy_file(self._rel(src), self._rel(dest))

    async def delete_file(self, path: str) -> None:
        """Delete (or send to the trash) a file or directory, never through a link."""
        path = path.strip("/")
        os_path = self._get_os_path(path)
        if not self.allow_hidden and is_hidden(os_path, self.root_dir):
            raise web.HTTPError(400, f"Cannot delete file or directory {os_path!r}")
        with self.perm_to_403(os_path), http_errors(path):
            st = await run_sync(self.fs.lstat, path)
            if st is None:
                raise web.HTTPError(404, f"File or directory does not exist: {os_path}")
            is_dir = stat.S_ISDIR(st.st_mode)
            if self.delete_to_trash:
                await run_sync(self._trash, path, os_path)
                return
            if is_dir:
                if not self.always_delete_dir and await run_sync(self._non_empty, path):
                    raise web.HTTPError(400, f"Directory {os_path} not empty")
                await run_sync(self.fs.rmtree, path)
            else:
                await run_sync(self.fs.unlink, path)

    def _non_empty(self, path: str) -> bool:
        cp_dir = getattr(self.checkpoints, "checkpoint_dir", None)
        with self.fs.scandir(path) as entries:
            return any(e.name != cp_dir for e in entries)

    def _trash(self, path: str, os_path: str) -> None:
        # send2trash takes a path; check no folder on the way is a link first. Residual: a
        # folder swapped for a link between this check and send2trash's rename would make
        # it move (never write into) the file the link points to.
        parts = path.split("/")
        os.close(self.fs.open_dir(parts[:-1]))
        try:
            send2trash(os_path)
        except OSError as e:
            raise web.HTTPError(400, f"send2trash failed: {e}") from e

    async def rename_file(self, old_path: str, new_path: str) -> None:
        """Rename inside the root; a link is moved itself, never followed."""
        old_path, new_path = old_path.strip("/"), new_path.strip("/")
        if new_path == old_path:
            return
        old_os, new_os = self._get_os_path(old_path), self._get_os_path(new_path)
        if not self.allow_hidden and (
            is_hidden(old_os, self.root_dir) or is_hidden(new_os, self.root_dir)
        ):
            raise web.HTTPError(400, f"Cannot rename file or directory {old_os!r}")
        with self.perm_to_403(old_os), http_errors(old_path):
            if await run_sync(self.fs.lstat, old_path) is None:
                raise web.HTTPError(404, f"File or directory does not exist: {old_path}")
            if await run_sync(self.fs.lstat, new_path) is not None:
                raise web.HTTPError(409, f"File already exists: {new_path}")
            try:
                await run_sync(self.fs.rename, old_path, new_path)
            except OSError as e:
                if e.errno != errno.EXDEV:
                    raise
                raise web.HTTPError(400, f"cannot move {old_path} to another device") from None

    async def _copy_dir(
        self, from_path: str, to_path_original: str, to_name: str, to_path: str
    ) -> dict[str, Any]:
        """Copy a directory tree; links inside are copied as links, never followed."""
        src = from_path.strip("/")
        dest = posixpath.join(to_path_original.strip("/"), to_name).strip("/")
        with http_errors(src):
            await run_sync(self._copy_tree, src, dest)
        return await self.get(to_path, content=False)  # type: ignore[no-any-return]

    def _copy_tree(self, src: str, dest: str) -> None:
        fs = self.fs
        fs.mkdir(dest)
        todo = [(src, dest)]
        while todo:  # iterative: a deep tree cannot exhaust the stack
            s, d = todo.pop()
            dfd = fs.open_dir(s.split("/") if s else [])
            try:
                entries = list(os.scandir(dfd))
                for e in entries:
                    sp, dp = f"{s}/{e.name}" if s else e.name, f"{d}/{e.name}"
                    if e.is_symlink():
                        fs.symlink(os.readlink(e.name, dir_fd=dfd), dp)
                    elif e.is_dir(follow_symlinks=False):
                        fs.mkdir(dp)
                        todo.append((sp, dp))
                    elif e.is_file(follow_symlinks=False):
                        with fs.open_read(sp, follow=False) as f, fs.open_atomic(dp) as out:
                            while chunk := f.read(1 << 20):
                                out.write(chunk)
            finally:
                os.close(dfd)

    # -- reading -------------------------------------------------------------------------

    def _read_bytes(self, os_path: str) -> bytes:
        rel = self._rel(os_path)
        try:
            with self.fs.open_read(rel) as f:
                return f.read()
        except UnsafePathError as e:
            if e.errno != errno.EXDEV or not self.allow_links_out_of_root:
                raise
        fd = os.open(os_path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise UnsafePathError(f"{rel} is not a regular file")
            os.set_blocking(fd, True)
            return f.read()

    async def _read_file(  # type: ignore[override]
        self, os_path: str, format: str | None, raw: bool = False
    ) -> tuple[Any, ...]:
        """Read a regular file inside the root (a FIFO or a device is refused at once)."""
        with self.perm_to_403(os_path), http_errors(self._rel(os_path)):
            data = await run_sync(self._read_bytes, os_path)
        if format == "byte":
            return (data, "byte", data) if raw else (data, "byte")
        if format is None or format == "text":
            try:
                text = data.decode("utf8")
                return (text, "text", data) if raw else (text, "text")
            except UnicodeError as e:
                if format == "text":
                    msg = f"{os_path} is not UTF-8 encoded"
                    raise web.HTTPError(400, msg, reason="bad format") from e
        b64 = encodebytes(data).decode("ascii")
        return (b64, "base64", data) if raw else (b64, "base64")

    async def _read_notebook(  # type: ignore[override]
        self, os_path: str, as_version: int = 4, capture_validation_error: Any = None,
        raw: bool = False,
    ) -> Any:  # fmt: skip
        """Read a notebook; a broken one is restored from a ``.~`` intermediate (as upstream),
        moving files without following links."""
        answer = await self._read_file(os_path, "text", raw=True)
        try:
            nb = await run_sync(
                partial(nbformat.reads, as_version=as_version,
                        capture_validation_error=capture_validation_error),
                answer[0],
            )  # fmt: skip
            return (nb, answer[2]) if raw else nb
        except Exception as e:
            e_orig = e
        rel = self._rel(os_path)
        tmp = self._rel(path_to_intermediate(os_path))
        st = await run_sync(self.fs.lstat, tmp)
        if not self.use_atomic_writing or st is None or not stat.S_ISREG(st.st_mode):
            raise web.HTTPError(400, f"Unreadable Notebook: {os_path} {e_orig!r}")
        with http_errors(rel):
            await run_sync(partial(self.fs.rename, replace=True), rel,
                           self._rel(path_to_invalid(os_path)))  # fmt: skip
            await run_sync(partial(self.fs.rename, replace=True), tmp, rel)
        return await self._read_notebook(os_path, as_version, capture_validation_error, raw)
