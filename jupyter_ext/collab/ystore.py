"""The collaboration rooms' Yjs history store: its class, where it lives, an old one moved out.

    place_ystore(serverapp, store_dir, root_dir)   # at link time, before any room exists

jupyter-collaboration keeps the Yjs updates of every room in ``SQLiteYStore``: a file named
``.jupyter_ystore.db`` relative to the server's working directory, which is the workspace.
Sandboxed code can write the workspace: it replaced that file with a link, and the server then
wrote its database wherever the link pointed; and each room write showed up as a change of
whatever sandboxed run was going on. Server files never live in the workspace, so the history
goes to ``ystore.db`` in the workspace's private store folder (next to ``think.db``).

Why this is code and not a ``jupyter_server_config.d/*.json`` file: jupyter_server reads those
folders only to find ``ServerApp.jpserver_extensions`` (``ExtensionConfigManager``); the
configuration proper is traitlets' ``load_config_file``, which reads
``jupyter_server_config.py`` and ``.json`` in each config folder and never a ``.d`` folder, so
a ``YDocExtension`` section in one is silently ignored. :func:`place_ystore` writes the
setting into the server's configuration when ``ThinkExtension`` is linked: extensions are
linked in sorted name order, so ``jupyter_ext`` comes before ``jupyter_server_ydoc``, which
copies the server configuration when it is linked and builds its rooms' stores from it (a
host that links it first gets the settings pushed to it). A setting the user made
(``YDocExtension.ystore_class``, ``ThinkYStore.db_path`` or ``SQLiteYStore.db_path`` in a
config file or on the command line) is kept, with a warning when it puts the history in the
workspace.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import stat
import time
from pathlib import Path
from typing import Any

from jupyter_core.paths import jupyter_data_dir
from jupyter_server_ydoc.stores import SQLiteYStore
from traitlets import Unicode, default
from traitlets.config import Config
from traitlets.utils.importstring import import_item

from think_kernel.store import location

log = logging.getLogger(__name__)

#: The history store's file in the store folder.
YSTORE_FILE = "ystore.db"
#: Where jupyter-collaboration keeps it by default: the server's working directory.
LEGACY_NAME = ".jupyter_ystore.db"
#: SQLite's side files of a database (a hot journal holds committed data to roll back).
_SIDECARS = ("-journal", "-wal")


class ThinkYStore(SQLiteYStore):
    """The collaboration ystore at a known, absolute, configurable path (not the cwd)."""

    db_path = Unicode(
        config=True,
        help="""Path of the Yjs update store of the collaboration rooms. Default: 'ystore.db'
        in the workspace's store folder ('<jupyter data dir>/think/<workspace>/', set by the
        Think server extension; '<jupyter data dir>/think/ystore.db' without it). A relative
        path is taken relative to the jupyter data dir.""",
    )

    @default("db_path")
    def _default_db_path(self) -> str:
        return str(Path(jupyter_data_dir()) / "think" / YSTORE_FILE)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("config") is None:
            # YDocExtension.get_document() (rooms the server opens for the agent) passes no
            # config; take the running server's, so both kinds of room use one database.
            kwargs["config"] = _server_config()
        super().__init__(*args, **kwargs)
        path = Path(os.path.expanduser(self.db_path))
        if not path.is_absolute():
            path = Path(jupyter_data_dir()) / path
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.db_path = str(path)


def _server_config() -> Config | None:
    from jupyter_server.serverapp import ServerApp

    return ServerApp.instance().config if ServerApp.initialized() else None


def place_ystore(serverapp: Any, store_dir: Path, root_dir: str) -> Path | None:
    """Put the rooms' history in ``store_dir`` unless the user chose a place, move an old
    ``.jupyter_ystore.db`` out of the workspace, and return the database in force (None for
    a store class that is not an SQLite file)."""
    config = serverapp.config
    default_to_store(config, store_dir)
    # A host that links jupyter_server_ydoc first: it has copied the config already.
    manager = getattr(serverapp, "extension_manager", None)
    point = manager.extension_points.get("jupyter_server_ydoc") if manager else None
    if point is not None and point.linked and point.app is not None:
        point.app.update_config(config)
    logger = getattr(serverapp, "log", log)
    try:
        path = ystore_in_force(config)
    except Exception as e:  # a configured store class that cannot be imported or built
        logger.warning("Think: cannot tell where the collaboration history is kept: %s", e)
        return None
    if path is None:
        logger.info("Think: the collaboration history is kept by %s",
                    config.YDocExtension.ystore_class)  # fmt: skip
    elif exposed(path, root_dir):
        logger.warning(
            "Think: the collaboration history %s is in the workspace, where code the agent "
            "runs can replace it with a link; remove YDocExtension.ystore_class / "
            "SQLiteYStore.db_path from your configuration to keep it in %s.",
            path,
            store_dir,
        )
    else:
        logger.info("Think: collaboration history in %s", path)
        move_legacy(root_dir, path, logger)
    return path


def default_to_store(config: Config, store_dir: Path) -> None:
    """Set ``ThinkYStore`` in ``store_dir`` in ``config`` where the user set nothing."""
    if "ystore_class" not in config.get("YDocExtension", {}):
        config.YDocExtension.ystore_class = ThinkYStore
    if not any("db_path" in config.get(c, {}) for c in ("ThinkYStore", "SQLiteYStore")):
        config.ThinkYStore.db_path = str(store_dir / YSTORE_FILE)


def check_workspace(root: str) -> tuple[bool, str]:
    """Whether a server started in ``root`` with this machine's configuration files keeps the
    rooms' history outside the workspace, and where (for ``jupyter think doctor``)."""
    from jupyter_server.serverapp import ServerApp

    app = ServerApp()
    app.load_config_file()  # the files `jupyter server` / `jupyter lab` read
    config = app.config
    root = config.get("ServerApp", {}).get("root_dir") or root
    store_path = config.get("ThinkExtension", {}).get("store_path", "")
    folder = (
        Path(os.path.abspath(os.path.expanduser(store_path))).parent
        if store_path
        else location.default_store_dir(root)
    )
    default_to_store(config, folder)
    path = ystore_in_force(config)
    if path is None:
        return True, f"kept by {config.YDocExtension.ystore_class} (not an SQLite file)"
    if exposed(path, root):
        return False, f"{path} is in the workspace {root}"
    if os.path.lexists(os.path.join(root, LEGACY_NAME)):
        return True, f"{path} (the {LEGACY_NAME} in the workspace moves there at next start)"
    return True, str(path)


def ystore_in_force(config: Config) -> Path | None:
    """The database file the rooms' stores use under ``config`` (None: not an SQLite file)."""
    cls = config.get("YDocExtension", {}).get("ystore_class", SQLiteYStore)
    if isinstance(cls, str):
        cls = import_item(cls)
    if not (isinstance(cls, type) and issubclass(cls, SQLiteYStore)):
        return None
    store = cls(path="", config=config)
    if store.db_path == ":memory:":
        return None
    # SQLite opens a relative path from the working directory, as the server does.
    return Path(os.path.abspath(os.path.expanduser(store.db_path)))


def exposed(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """Whether sandboxed code working in ``root`` could reach ``path``: it is in the
    workspace, and not in Think's store folders (private even inside a workspace, as when
    ``jupyter lab`` starts in the home folder)."""
    return inside(path, root) and not inside(path, location.data_dir())


def inside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """Whether ``path`` (which may not exist yet) is in the folder ``root`` (links resolved)."""
    real = Path(os.path.realpath(Path(path).parent)) / Path(path).name
    top = Path(os.path.realpath(root))
    return real == top or top in real.parents


def move_legacy(root_dir: str, dest: Path, logger: Any = log) -> str:
    """Move ``<root>/.jupyter_ystore.db`` (and its journal) to ``dest`` once, never through a
    link: a link is removed, anything but a regular file of ours is left. Returns what was
    done: ``absent``, ``moved``, ``link removed`` or ``left``."""
    try:
        dfd = os.open(root_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return "absent"
    try:
        where = f"{root_dir.rstrip('/')}/{LEGACY_NAME}"
        found = _examine(dfd, LEGACY_NAME, where, logger)
        if found != "ours":
            return found
        if os.path.lexists(dest):  # the new store is in use: keep the old one beside it
            dest = dest.parent / f"legacy-{int(time.time())}" / "jupyter_ystore.db"
            dest.parent.mkdir(mode=0o700, exist_ok=True)
        # The journal first: SQLite rolls a hot journal back into the database it finds
        # next to it, so the database file must not arrive without it.
        for suffix in _SIDECARS:
            if _examine(dfd, LEGACY_NAME + suffix, where + suffix, logger) == "ours":
                _copy_out(dfd, LEGACY_NAME + suffix, Path(f"{dest}{suffix}"))
        _copy_out(dfd, LEGACY_NAME, dest)
        for name in (LEGACY_NAME, *(LEGACY_NAME + s for s in _SIDECARS)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=dfd)
        logger.warning("Think moved the collaboration history %s to %s", where, dest)
        return "moved"
    except OSError as e:
        logger.warning("Think could not move %s/%s out of the workspace: %s", root_dir,
                       LEGACY_NAME, e)  # fmt: skip
        return "left"
    finally:
        os.close(dfd)


def _examine(dfd: int, name: str, where: str, logger: Any) -> str:
    """``ours`` (a regular file this process owns), ``absent``, ``link removed`` or ``left``."""
    try:
        st = os.lstat(name, dir_fd=dfd)
    except FileNotFoundError:
        return "absent"
    if stat.S_ISLNK(st.st_mode):
        # Planted by code in the sandbox (the server never makes one): never followed.
        with contextlib.suppress(OSError):
            target = os.readlink(name, dir_fd=dfd)
            os.unlink(name, dir_fd=dfd)
            logger.warning("Think removed %s, a link to %s (not followed)", where, target)
            return "link removed"
        return "left"
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
        logger.warning("Think left %s as it is: not a history store of this server", where)
        return "left"
    return "ours"


def _copy_out(dfd: int, name: str, dest: Path) -> None:
    """Copy the regular file ``name`` to a new private file at ``dest`` (no link followed).

    A copy, not a rename: the inode stays in the workspace, so a hard link someone made to
    it there cannot reach the store."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.moving")
    with os.fdopen(os.open(name, flags, dir_fd=dfd), "rb") as src:
        st = os.fstat(src.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            raise OSError(f"{name} changed while it was moved")
        wflags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            with os.fdopen(os.open(tmp, wflags, 0o600), "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, dest)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
