"""Server files never live in the workspace: the collaboration rooms' Yjs history store.

jupyter-collaboration keeps it in ``.jupyter_ystore.db`` in the server's working directory (the
workspace), and a ``jupyter_server_config.d`` file cannot move it (the server reads those
folders for ``jpserver_extensions`` only). Sandboxed code replaced it with a link and the server
wrote its database at the link's target; sandboxed runs listed the server's writes as their
own changes. Here: a real ``jupyter server`` started the way a person starts it (in the
project folder, with the installed config files) keeps the history in the private store
folder, never follows a planted link, moves an old history out once; both kinds of room (a
browser's and the agent's) use that file; a sandboxed run's file report leaves the server's
files out; ``jupyter think doctor`` checks where the history is.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from pycrdt.store import SQLiteYStore as PlainSQLiteYStore
from security_server import *  # noqa: F403  (a real server: jp_*, think, peers)
from traitlets.config import Config

from jupyter_ext.collab.ystore import LEGACY_NAME, ThinkYStore, move_legacy, place_ystore
from tests.collab.peers import Peer
from tests.waiting import until, wait_until
from think_kernel.collab.watch import InotifyWatcher, SnapshotWatcher
from think_kernel.config import ThinkConfig
from think_kernel.runtime import Runtime
from think_kernel.sandbox.probes import escapes
from think_kernel.store.location import workspace_key

TOKEN = "history-token"
pytestmark = pytest.mark.timeout(180)


def _rows(db: Path) -> int:
    """Yjs updates stored in an SQLite ystore (0 when it does not exist yet)."""
    if not db.exists():
        return 0
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(con.execute("SELECT count(*) FROM yupdates").fetchone()[0])
    except sqlite3.OperationalError:  # the table is not created yet
        return 0
    finally:
        con.close()


class UserServer:
    """``jupyter server`` started in the project folder, as a person starts it: the installed
    config files, no ystore setting of ours; Jupyter's own folders are temporary."""

    def __init__(self, tmp: Path, root: Path, command: str = "jupyter-server") -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        self.data = tmp / "data"
        self.log_path = tmp / "server.log"
        env = {
            **os.environ,
            "JUPYTER_DATA_DIR": str(self.data),
            "JUPYTER_CONFIG_DIR": str(tmp / "config"),  # empty: only the installed files
            "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
        }
        env.pop("JUPYTER_PATH", None)
        env.pop("JUPYTER_CONFIG_PATH", None)
        (tmp / "config").mkdir(exist_ok=True)
        self.log = open(self.log_path, "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [
                str(Path(sys.executable).parent / command),
                "--no-browser",
                "--allow-root",
                f"--port={self.port}",
                "--ServerApp.port_retries=0",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.token={TOKEN}",
                "--ThinkExtension.kernel_pool_size=0",  # no spare kernel: not needed here
            ],
            cwd=root,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.store = self.data / "think" / workspace_key(root)

    def _up(self) -> bool:
        assert self.proc.poll() is None, f"server exited:\n{self.text()}"
        req = urllib.request.Request(self.url + "api/status",
                                     headers={"Authorization": f"token {TOKEN}"})  # fmt: skip
        try:
            with urllib.request.urlopen(req, timeout=5):
                return True
        except (urllib.error.URLError, ConnectionError):
            return False

    def wait_up(self) -> None:
        """Block until the server answers."""
        wait_until(self._up, 90, "the server up")

    def text(self) -> str:
        """The server's log so far."""
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        """SIGTERM the server's process group (SIGKILL if it lingers)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.log.close()


@pytest.fixture
def project() -> Iterator[tuple[Path, Path]]:
    """(a temporary folder for Jupyter's own files, the project folder inside it)."""
    tmp = Path(tempfile.mkdtemp(prefix="think-hist-"))
    (tmp / "project").mkdir()
    try:
        yield tmp, tmp / "project"
    finally:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def user_server(project: tuple[Path, Path]) -> Iterator[Any]:
    """``start()`` a user-started server on ``project``; stopped at the end."""
    started: list[UserServer] = []

    def start(command: str = "jupyter-server") -> UserServer:
        server = UserServer(*project, command)
        started.append(server)
        server.wait_up()
        return server

    yield start
    for server in started:
        server.stop()


async def _type_in_room(
    server: UserServer, path: str, text: str, elsewhere: Path | None = None
) -> None:
    """Open ``path`` in a room as a browser tab does, type ``text`` into it and wait until
    the updates are stored (in the store folder, or in ``elsewhere``)."""
    tab = Peer(server.url, path, token=TOKEN)
    await tab.connect()
    try:
        tab.type_at(tab.text(), 0, text)
        stored = server.store / "ystore.db"
        landed = lambda: elsewhere is not None and any(elsewhere.iterdir())  # noqa: E731
        await until(lambda: _rows(stored) >= 2 or landed(), 20, "the updates stored")
    finally:
        await tab.close()


@pytest.mark.slow
@pytest.mark.parametrize("command", ["jupyter-server", "jupyter-lab"])
async def test_a_user_started_server_keeps_history_in_the_store_folder_past_a_planted_link(
    command: str, project: tuple[Path, Path], user_server: Any
) -> None:
    tmp, root = project
    outside = tmp / "elsewhere"
    outside.mkdir()
    (root / "a.txt").write_text("hello\n")
    # What sandboxed code did: the history's name in the workspace, a link out of it.
    os.symlink(outside / "stolen.db", root / LEGACY_NAME)
    server = user_server(command)
    await _type_in_room(server, "a.txt", "typed ", outside)
    assert list(outside.iterdir()) == [], "the server wrote through the planted link"
    assert not (root / LEGACY_NAME).is_symlink()  # the link was removed, not followed
    log = server.text()
    assert f"collaboration history in {server.store / 'ystore.db'}" in log, log
    assert "a link to" in log
    ours = [p.name for p in root.iterdir()]
    assert ours == ["a.txt"], ours  # nothing of the server's in the workspace


@pytest.mark.slow
async def test_an_old_history_in_the_workspace_moves_once_into_the_store_folder(
    project: tuple[Path, Path], user_server: Any
) -> None:
    _, root = project
    (root / "a.txt").write_text("hello\n")
    old = root / LEGACY_NAME

    class OldStore(PlainSQLiteYStore):
        db_path = str(old)

    async with OldStore(path="text:file:old-id") as store:  # as an older server left it
        for i in range(3):
            await store.write(f"update {i}".encode())
    before = old.read_bytes()
    server = user_server()
    moved = server.store / "ystore.db"
    assert not old.exists()
    assert moved.read_bytes() == before
    assert f"moved the collaboration history {old}" in server.text()
    await _type_in_room(server, "a.txt", "more ")
    con = sqlite3.connect(f"file:{moved}?mode=ro", uri=True)
    try:
        paths = {r[0] for r in con.execute("SELECT DISTINCT path FROM yupdates")}
    finally:
        con.close()
    assert "text:file:old-id" in paths and len(paths) == 2, paths  # old history kept, new added
    assert [p.name for p in root.iterdir()] == ["a.txt"]


@pytest.fixture
def jp_server_config(jp_root_dir: Path, jp_data_dir: Path) -> dict[str, Any]:  # noqa: F811
    """The attack suite's server, without any ystore setting: the extension's choice rules."""
    return {
        "ServerApp": {
            "jpserver_extensions": {
                "jupyter_ext": True,
                "jupyter_server_ydoc": True,
                "jupyter_server_fileid": True,
            },
            "token": "",
            "password": "",
            "allow_root": True,
            "disable_check_xsrf": True,
        },
        "YDocExtension": {"document_save_delay": 0.2},
        "BaseFileIdManager": {
            "root_dir": str(jp_root_dir),
            "db_path": str(jp_data_dir / "fileid.db"),
            "db_journal_mode": "OFF",
        },
        "ThinkExtension": {"kernel_name": "no-such-kernel", "kernel_pool_size": 0},
    }


async def test_browser_and_agent_rooms_both_keep_history_in_the_store_folder(
    jp_serverapp: Any, think: Any, peers: Any, jp_root_dir: Path
) -> None:
    ydoc = jp_serverapp.extension_manager.extension_points["jupyter_server_ydoc"].app
    want = think.store_dir() / "ystore.db"
    assert ydoc.ystore_class is ThinkYStore  # the value in force in the running server
    (jp_root_dir / "tab.txt").write_text("one\n")
    (jp_root_dir / "agent.txt").write_text("two\n")
    tab = await peers("tab.txt")  # a browser tab's room (the websocket route)
    doc = await ydoc.get_document(  # an agent edit's room (opened by the server)
        path="agent.txt", content_type="file", file_format="text", copy=False, create=True
    )
    rooms = list(ydoc.ywebsocket_server.rooms.values())
    assert len(rooms) == 2 and {r.ystore.db_path for r in rooms} == {str(want)}
    tab.type_at(tab.text(), 0, "x")
    doc.source = "two, edited\n"
    await until(lambda: _rows(want) >= 2, 10, "both rooms' updates in the store")
    assert not (jp_root_dir / LEGACY_NAME).exists()


LINK_YDOC_FIRST = """
import sys
from jupyter_server.extension.manager import ExtensionManager
from jupyter_server.serverapp import ServerApp
from jupyter_ext.collab.ystore import ThinkYStore

class YdocFirst(ServerApp):
    def init_server_extensions(self):
        self.extension_manager = ExtensionManager(log=self.log, serverapp=self)
        self.extension_manager.from_jpserver_extensions(self.jpserver_extensions)
        self.extension_manager.link_extension("jupyter_server_ydoc")
        self.extension_manager.link_all_extensions()

app = YdocFirst.instance()
app.initialize(argv=["--allow-root", "--ThinkExtension.kernel_pool_size=0"])
ydoc = app.extension_manager.extension_points["jupyter_server_ydoc"].app
print("IN FORCE", ydoc.ystore_class.__name__, ThinkYStore(path="", config=ydoc.config).db_path)
"""


@pytest.mark.slow
def test_a_host_that_links_the_rooms_first_gets_the_store_folder_too(
    project: tuple[Path, Path],
) -> None:
    tmp, root = project
    (tmp / "config").mkdir()
    env = {
        **os.environ,
        "JUPYTER_DATA_DIR": str(tmp / "data"),
        "JUPYTER_CONFIG_DIR": str(tmp / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "rt"),
    }
    proc = subprocess.run([sys.executable, "-c", LINK_YDOC_FIRST], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    want = tmp / "data" / "think" / workspace_key(root) / "ystore.db"
    assert f"IN FORCE ThinkYStore {want}" in proc.stdout, proc.stdout + proc.stderr


def test_a_store_class_that_cannot_be_imported_does_not_stop_the_extension(
    dirs: tuple[Path, Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    from jupyter_server.serverapp import ServerApp

    ws, store, _ = dirs
    app = ServerApp()  # not started: only its configuration is used
    app.log = logging.getLogger("think-test-history")  # type: ignore[assignment]
    app.config.YDocExtension.ystore_class = "no_such_module.NoStore"
    (ws / LEGACY_NAME).write_bytes(b"old")
    assert place_ystore(app, store, str(ws)) is None
    assert (ws / LEGACY_NAME).read_bytes() == b"old"  # nothing moved on a guess
    assert "cannot tell where the collaboration history is kept" in caplog.text


# -- an old history in the workspace, planted links ----------------------------------------


@pytest.fixture
def dirs() -> Iterator[tuple[Path, Path, Path]]:
    """(workspace, private store folder, a folder outside both)."""
    base = Path(tempfile.mkdtemp(prefix="think-hist-move-"))
    out = tuple(base / n for n in ("ws", "store", "outside"))
    for d in out:
        d.mkdir()
    try:
        yield out  # type: ignore[misc]
    finally:
        import shutil

        shutil.rmtree(base, ignore_errors=True)


def test_a_planted_history_link_is_removed_never_followed(dirs: tuple[Path, Path, Path]) -> None:
    ws, store, outside = dirs
    (outside / "secret.db").write_bytes(b"secret")
    os.symlink(outside / "secret.db", ws / LEGACY_NAME)
    assert move_legacy(str(ws), store / "ystore.db") == "link removed"
    assert not os.path.lexists(ws / LEGACY_NAME)
    assert list(store.iterdir()) == []  # nothing copied from the link's target
    assert (outside / "secret.db").read_bytes() == b"secret"


def test_an_old_history_moves_with_its_journal_and_never_over_the_new_one(
    dirs: tuple[Path, Path, Path],
) -> None:
    ws, store, outside = dirs
    (ws / LEGACY_NAME).write_bytes(b"old history")
    (ws / f"{LEGACY_NAME}-journal").write_bytes(b"hot journal")
    (outside / "target").write_bytes(b"untouched")
    os.symlink(outside / "target", ws / f"{LEGACY_NAME}-wal")  # a planted side file
    dest = store / "ystore.db"
    assert move_legacy(str(ws), dest) == "moved"
    assert dest.read_bytes() == b"old history"
    assert Path(f"{dest}-journal").read_bytes() == b"hot journal"
    assert not Path(f"{dest}-wal").exists()
    assert (outside / "target").read_bytes() == b"untouched"
    assert sorted(os.listdir(ws)) == []
    assert oct(dest.stat().st_mode & 0o777) == oct(0o600)
    assert move_legacy(str(ws), dest) == "absent"  # once
    # An older server ran again and left another one: the store in use is not overwritten.
    (ws / LEGACY_NAME).write_bytes(b"second")
    assert move_legacy(str(ws), dest) == "moved"
    assert dest.read_bytes() == b"old history"
    [legacy] = store.glob("legacy-*/jupyter_ystore.db")
    assert legacy.read_bytes() == b"second"


def test_odd_files_under_the_history_name_are_left(dirs: tuple[Path, Path, Path]) -> None:
    ws, store, _ = dirs
    os.mkfifo(ws / LEGACY_NAME)  # opening it would block
    assert move_legacy(str(ws), store / "ystore.db") == "left"
    os.unlink(ws / LEGACY_NAME)
    os.mkdir(ws / LEGACY_NAME)
    assert move_legacy(str(ws), store / "ystore.db") == "left"
    os.rmdir(ws / LEGACY_NAME)
    if os.geteuid() == 0:  # a session uid's file (the kernel runs as root): not ours to take
        (ws / LEGACY_NAME).write_bytes(b"someone else's")
        os.chown(ws / LEGACY_NAME, 12345, 12345)
        assert move_legacy(str(ws), store / "ystore.db") == "left"
        assert (ws / LEGACY_NAME).read_bytes() == b"someone else's"
    assert list(store.iterdir()) == []


# -- a sandboxed run's file report ---------------------------------------------------------

SERVER_WRITES = [
    LEGACY_NAME,
    f"{LEGACY_NAME}-journal",
    ".~notes.txt",  # jupyter_server's save backup
    ".notes.txt.0123456789abcdef.think-tmp",  # a safe write's temp file
    ".ipynb_checkpoints/notes-checkpoint.txt",
    ".jupyter/collaboration_sessions.json",
]


def _server_writes(ws: Path) -> None:
    """Write what a server set up the upstream way writes in the workspace."""
    for rel in SERVER_WRITES:
        (ws / rel).parent.mkdir(exist_ok=True)
        (ws / rel).write_bytes(b"server")


@pytest.mark.parametrize("kind", [InotifyWatcher, SnapshotWatcher])
async def test_the_watch_leaves_the_servers_files_out(kind: Any, workspace: Path) -> None:
    watcher = kind(workspace)
    await watcher.start()
    try:
        mark = await watcher.mark()
        _server_writes(workspace)
        (workspace / "result.csv").write_text("1,2\n")
        changes = await watcher.since(mark)
        assert changes.summary() == "created result.csv", changes
    finally:
        watcher.close()


@pytest.fixture
async def runtime(workspace: Path) -> AsyncIterator[Runtime]:
    """A standalone session on ``workspace`` (its best sandbox tier; no model needed)."""
    cfg = Config()
    cfg.SandboxConfig.timeout = 30
    rt = Runtime(ThinkConfig(config=cfg), workspace, extensions=[])
    await rt.start()
    try:
        yield rt
    finally:
        await rt.close()


@pytest.mark.slow
async def test_a_sandboxed_run_does_not_report_the_servers_writes(
    runtime: Runtime, workspace: Path
) -> None:
    (workspace / ".signal").mkdir()  # hidden folder: not watched
    os.chmod(workspace / ".signal", 0o777)
    script = "echo 1,2 > result.csv; while [ ! -e .signal/go ]; do sleep 0.01; done"
    call = asyncio.create_task(
        runtime.tools.call("bash", {"command": script}, runtime.make_context("m", "c"))
    )
    # While the run goes on, the server writes its own files next to it.
    await until(lambda: (workspace / "result.csv").exists() or call.done(), 60, "the run")
    _server_writes(workspace)
    (workspace / ".signal" / "go").write_text("")
    out = (await call).output
    assert "[files: created result.csv]" in out.text, out.text  # type: ignore[attr-defined]


# -- jupyter think doctor -------------------------------------------------------------------


async def test_the_doctor_finds_a_history_store_configured_into_the_workspace(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config"
    config.mkdir()
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(config))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(workspace)
    probe = await escapes.history_store()
    want = tmp_path / "data" / "think" / workspace_key(workspace) / "ystore.db"
    assert probe.contained and str(want) in probe.detail, probe
    # `jupyter lab` started in the home folder: the store folders are in the workspace, and
    # private there (sandboxes cannot reach them), so the history is not exposed.
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(workspace / ".local" / "share" / "jupyter"))
    probe = await escapes.history_store()
    assert probe.contained and str(workspace / ".local") in probe.detail, probe
    # A person's own configuration with jupyter-collaboration's default store: in the cwd.
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"YDocExtension": {"ystore_class": "jupyter_server_ydoc.stores.SQLiteYStore"}})
    )
    probe = await escapes.history_store()
    assert not probe.contained and "is in the workspace" in probe.detail, probe
    assert probe.attack.startswith("the history store")
