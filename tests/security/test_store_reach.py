"""Attack class: reach the store (sessions, action log, edit history) from the workspace.

The store used to live in ``<workspace>/.think/``, where the loopback overwrote it and tier 2
and 3 code renamed it. Now it is ``<jupyter data dir>/think/<name>-<hash>/``. On
every tier, sandboxed code, the file tools and the loopback must fail to read, write, rename
or create anything there, while the workspace next to it stays fully usable; users find no
``.think/`` folder; an old ``.think/`` is moved over once, even by two processes at once.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sqlite3
import stat
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from security_server import *  # noqa: F403  (a real server: jp_*, think, peers)
from security_server import InProcessLink
from traitlets.config import Config

from think_kernel.collab.workspace import CollabWorkspace
from think_kernel.collab.ystore import YStore
from think_kernel.config import ThinkConfig
from think_kernel.kernel.resume import remember_session, remembered_session
from think_kernel.runtime import Runtime
from think_kernel.sandbox import Tier
from think_kernel.store import Store, location

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow


@pytest.fixture
async def runtime(tier: Tier, workspace: Path) -> AsyncIterator[Runtime]:
    """A session on ``workspace`` whose sandbox runs on ``tier``."""
    cfg = Config()
    cfg.SandboxConfig.force_tier = int(tier)
    cfg.SandboxConfig.timeout = 30
    rt = Runtime(ThinkConfig(config=cfg), workspace, extensions=[])
    await rt.start()
    try:
        yield rt
    finally:
        await rt.close()


async def tool(rt: Runtime, name: str, **args: object) -> object:
    """Call one of the agent's tools as the model would."""
    return (await rt.tools.call(name, args, rt.make_context("m", "c"))).output


def intact(store: Path, session_id: str) -> None:
    db = sqlite3.connect(store / "think.db")
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("SELECT id FROM sessions WHERE id=?", (session_id,)).fetchone()
    finally:
        db.close()
    assert not (store / "planted.txt").exists()


async def test_sandboxed_code_cannot_touch_the_store(runtime: Runtime, workspace: Path) -> None:
    store = runtime.store_dir
    assert workspace not in store.parents and (store / "think.db").exists()
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    sandbox = await runtime.ensure_sandbox()
    code = textwrap.dedent(f"""
        import json, os
        S = {str(store)!r}
        attempts = {{
            "list": lambda: os.listdir(S),
            "read": lambda: open(S + "/think.db", "rb").read(1),
            "write": lambda: open(S + "/think.db", "r+b").write(b"x"),
            "create": lambda: open(S + "/planted.txt", "w").write("x"),
            "rename": lambda: os.rename(S + "/think.db", S + "/gone.db"),
            "rename_folder": lambda: os.rename(S, S + "-gone"),
            "link_in": lambda: os.symlink("/etc/passwd", S + "/planted.txt"),
        }}
        out = {{}}
        for name, attempt in attempts.items():
            try:
                attempt()
                out[name] = "DONE"
            except OSError as e:
                out[name] = type(e).__name__
        open("in_workspace.txt", "w").write("fine")
        print(json.dumps(out))
    """)
    res = await sandbox.run_python(code, fresh=True)
    assert res.ok, res
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert "DONE" not in out.values(), out
    assert (workspace / "in_workspace.txt").read_text() == "fine"
    intact(store, runtime.session_id)


async def test_the_loopback_and_the_tools_cannot_reach_the_store(
    runtime: Runtime, workspace: Path
) -> None:
    store = runtime.store_dir
    sandbox = await runtime.ensure_sandbox()
    code = textwrap.dedent(f"""
        import json, os, think
        os.symlink({str(store)!r}, "st")   # a link into the store folder
        out = {{}}
        for name, call in {{
            "read_abs": lambda: think.read_file({str(store / "think.db")!r}),
            "read_up": lambda: think.read_file("../" * 12 + {str(store)!r}[1:] + "/think.db"),
            "read_link": lambda: think.read_file("st/think.db"),
            "write_link": lambda: think.write_file("st/planted.txt", "x"),
            "list_link": lambda: think.list_files("st"),
            "old_place": lambda: think.write_file(".think/think.db", "not the store"),
            "legit": lambda: think.write_file("notes.md", "hello"),
        }}.items():
            try:
                call()
                out[name] = "DONE"
            except think.ThinkError as e:
                out[name] = str(e)
        print(json.dumps(out))
    """)
    res = await sandbox.run_python(code, fresh=True)
    assert res.ok, res
    out = json.loads(res.stdout.strip().splitlines()[-1])
    for name in ("read_abs", "read_up", "read_link", "write_link", "list_link"):
        assert out[name] != "DONE", (name, out)
    # .think/ is an ordinary workspace folder now: writing there is legitimate and harmless
    assert out["old_place"] == "DONE" and out["legit"] == "DONE", out
    assert (workspace / "notes.md").read_text() == "hello"
    for path in ("st/think.db", "st/planted.txt"):
        assert not (await tool(runtime, "read_file", path=path)).ok  # type: ignore[attr-defined]
        written = await tool(runtime, "write_file", path=path, content="x")
        assert not written.ok  # type: ignore[attr-defined]
    intact(store, runtime.session_id)


async def test_users_find_no_think_folder(tmp_path: Path) -> None:
    """Standalone: the store, the edit history and the session pointer are all elsewhere."""
    ws = tmp_path / "repo"
    ws.mkdir()
    rt = Runtime(ThinkConfig(), ws, extensions=[])
    await rt.start()
    try:
        assert (await tool(rt, "write_file", path="a.py", content="x = 1\n")).ok  # type: ignore[attr-defined]
        assert (await tool(rt, "read_file", path="a.py")).ok  # type: ignore[attr-defined]
        edit = await tool(rt, "edit_file", path="a.py", old_string="1", new_string="2")
        assert edit.ok  # type: ignore[attr-defined]
        cell = await tool(rt, "insert_cell", path="nb.ipynb", index=0, source="1 + 1")
        assert cell.ok  # type: ignore[attr-defined]
        remember_session(rt.store_dir, "<default>", rt.session_id)
    finally:
        await rt.close()
    assert sorted(p.name for p in ws.iterdir()) == ["a.py", "nb.ipynb"]
    names = {p.name for p in rt.store_dir.iterdir()}
    assert {"think.db", "ydocs.db", "kernel-sessions.json"} <= names, names
    assert remembered_session(rt.store_dir, "<default>") == rt.session_id


async def test_server_mode_keeps_its_state_out_of_the_root(jp_root_dir: Path, think, peers) -> None:
    """The server's store and history, and jupyter-collaboration's session file."""
    root = jp_root_dir
    store = Path(think.resolved_store_path()).parent
    assert root not in store.parents and store == location.default_store_dir(root)
    (root / "a.txt").write_text("v1\n")
    await peers("a.txt")  # a person's tab: a collaboration session is recorded
    ws = CollabWorkspace(root, InProcessLink(think, root))
    await ws.write_text("a.txt", "v2\n")  # the agent: a version goes to the history
    assert sorted(p.name for p in root.iterdir()) == ["a.txt"]
    names = {p.name for p in store.iterdir()}
    assert {"think.db", "history.db", "collaboration_sessions.json"} <= names, names


# -- the one-time move of <root>/.think ------------------------------------------------------


async def _legacy(root: Path) -> str:
    """A store as older versions left it in ``<root>/.think``; returns a session id."""
    old = root / ".think"
    store = await Store.open(old / "think.db", blob_threshold=10)
    session = await store.create_session(title="before")
    await store.add_message(session["id"], "user", "x" * 100)  # goes to a blob
    await store.close()
    YStore(old / "ydocs.db").close()
    (old / "kernel-sessions.json").write_text(json.dumps({"<default>": session["id"]}))
    return str(session["id"])


async def test_an_old_store_is_moved_once_and_nothing_is_lost(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    sid = await _legacy(root)
    rt = Runtime(ThinkConfig(), root, extensions=[])
    await rt.start()
    try:
        assert not (root / ".think").exists()
        assert await rt.store.get_session(sid) is not None  # type: ignore[union-attr]
        messages = await rt.store.get_messages(sid)  # type: ignore[union-attr]
        assert await rt.store.message_content(messages[0]) == "x" * 100  # type: ignore[union-attr]
        assert remembered_session(rt.store_dir, "<default>") == sid
        assert (rt.store_dir / "ydocs.db").exists()
    finally:
        await rt.close()
    # a .think/ that appears later (not ours any more) is left alone
    (root / ".think").mkdir()
    (root / ".think" / "think.db").write_text("planted")
    location._prepared.clear()
    assert location.store_dir(root) == rt.store_dir
    assert (root / ".think" / "think.db").read_text() == "planted"


def _open_store_dir(root: str, barrier: multiprocessing.synchronize.Barrier) -> None:
    barrier.wait()
    location.store_dir(root)


def test_two_processes_moving_at_once_lose_nothing(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".think" / "blobs" / "ab").mkdir(parents=True)
    files = {f"f{i}.bin": os.urandom(20_000) for i in range(20)}
    for name, data in files.items():
        (root / ".think" / name).write_bytes(data)
    (root / ".think" / "blobs" / "ab" / "abcdef").write_bytes(b"blob")
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(4)
    procs = [ctx.Process(target=_open_store_dir, args=(str(root), barrier)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    store = location.default_store_dir(root)
    assert not (root / ".think").exists()
    for name, data in files.items():
        assert (store / name).read_bytes() == data
    assert (store / "blobs" / "ab" / "abcdef").read_bytes() == b"blob"
    assert not [p for p in store.iterdir() if p.name.startswith("legacy-")]


def test_a_name_already_in_the_new_folder_is_kept_twice(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".think").mkdir(parents=True)
    (root / ".think" / "think.db").write_bytes(b"old")
    store = location.default_store_dir(root)
    store.mkdir(parents=True)
    (store / "think.db").write_bytes(b"new")  # e.g. a crash between a move and the marker
    assert location.store_dir(root) == store
    assert (store / "think.db").read_bytes() == b"new"
    [legacy] = [p for p in store.iterdir() if p.name.startswith("legacy-")]
    assert (legacy / "think.db").read_bytes() == b"old"


def test_a_planted_think_link_is_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret").write_text("keep")
    os.symlink(elsewhere, root / ".think")
    location.store_dir(root)
    assert (elsewhere / "secret").read_text() == "keep" and (root / ".think").is_symlink()
    assert not (location.default_store_dir(root) / "secret").exists()


async def test_a_data_dir_inside_the_workspace_stays_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``jupyter lab`` started in the home folder: the data dir (stores, runtime files with
    kernel keys and server tokens) is inside the workspace; the tools still cannot reach it."""
    home = tmp_path / "home"
    data = home / ".local" / "share" / "jupyter"
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(data))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(data / "runtime"))
    (data / "runtime").mkdir(parents=True)
    (data / "runtime" / "jpserver-1.json").write_text('{"token": "server-secret"}')
    rt = Runtime(ThinkConfig(), home, extensions=[])
    await rt.start()
    try:
        store = rt.store_dir.relative_to(home).as_posix()
        for path in (f"{store}/think.db", ".local/share/jupyter/runtime/jpserver-1.json"):
            out = await tool(rt, "read_file", path=path)
            assert not out.ok and "private" in out.error, out  # type: ignore[attr-defined]
            assert not (await tool(rt, "write_file", path=path, content="x")).ok  # type: ignore[attr-defined]
        listed = await tool(rt, "list_files", path=".local/share/jupyter")
        assert "think" not in listed.text and "runtime" not in listed.text  # type: ignore[attr-defined]
        os.symlink(data / "runtime", home / "r")
        out = await tool(rt, "read_file", path="r/jpserver-1.json")
        assert not out.ok and "server-secret" not in out.text  # type: ignore[attr-defined]
        assert (await tool(rt, "write_file", path="notes.md", content="ok")).ok  # type: ignore[attr-defined]
    finally:
        await rt.close()
