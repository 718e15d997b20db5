"""Migration m008: saved settings, and each session's kind and notebook path."""

from __future__ import annotations

from pathlib import Path

from think_kernel.config import ThinkConfig
from think_kernel.endpoint import SETTING, public, resolve
from think_kernel.runtime import Runtime
from think_kernel.store import Store
from think_kernel.store.loopdb import LoopConnection
from think_kernel.store.migrations import MIGRATIONS, migrate


async def test_sessions_from_before_get_a_kind(tmp_path: Path) -> None:
    db_path = tmp_path / "old.db"
    db = await LoopConnection.connect(db_path)
    saved = list(MIGRATIONS)
    try:
        MIGRATIONS[:] = [m for m in saved if m[0] != "m008_settings"]
        await migrate(db)  # a store as an older version left it
    finally:
        MIGRATIONS[:] = saved
    for sid, path in (("chat1", ""), ("chat2", "notes"), ("kern", "/home/me/project")):
        await db.execute(
            "INSERT INTO sessions (id, title, path, status, options, created_at,"
            " updated_at) VALUES (?, '', ?, 'idle', '{}', 0, 0)",
            (sid, path),
        )
    await db.close()
    s = await Store.open(db_path)
    try:
        kinds = {x["id"]: x["kind"] for x in await s.list_sessions()}
        assert kinds == {"chat1": "chat", "chat2": "chat", "kern": "notebook"}
        assert [x["id"] for x in await s.list_sessions(kind="notebook")] == ["kern"]
    finally:
        await s.close()


async def test_settings_round_trip(tmp_path: Path) -> None:
    s = await Store.open(tmp_path / "t.db")
    try:
        assert await s.get_setting(SETTING) is None
        await s.set_setting(SETTING, {"base_url": "http://h/v1", "api_key": "k" * 20})
        await s.set_setting(SETTING, {"base_url": "http://h2/v1", "api_key": "", "model": "m"})
        assert await s.get_setting(SETTING) == {
            "base_url": "http://h2/v1",
            "api_key": "",
            "model": "m",
        }
        await s.set_setting(SETTING, None)
        assert await s.get_setting(SETTING) is None
    finally:
        await s.close()


def test_resolve_prefers_the_saved_endpoint_and_hides_the_key(monkeypatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "THINK_MODEL"):
        monkeypatch.delenv(name, raising=False)
    cfg = ThinkConfig()
    assert not resolve(cfg).configured and resolve(cfg).source == ""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-000000000000")
    env = resolve(ThinkConfig())
    assert env.source == "environment" and env.model == "gpt-4o-mini"
    saved = resolve(ThinkConfig(), {"base_url": "http://h/v1", "api_key": "sk-card-1234567890ab"})
    assert (saved.source, saved.base_url, saved.model) == ("saved", "http://h/v1", "gpt-4o-mini")
    view = public(saved)
    assert "sk-card" not in str(view) and view["api_key_hint"] == "…90ab"
    # An empty saved endpoint (neither URL nor key) does not hide the environment's.
    assert resolve(ThinkConfig(), {"model": "x"}).source == "environment"


async def test_runtime_records_kind_and_notebook_path(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    cfg = ThinkConfig()
    cfg.store_path = str(tmp_path / "store" / "think.db")
    rt = Runtime(cfg, ws, extensions=[], kind="magic", session_path="sub/a.ipynb")
    await rt.start()
    try:
        assert rt.store is not None
        row = await rt.store.get_session(rt.session_id)
        assert row is not None and (row["kind"], row["path"]) == ("magic", "sub/a.ipynb")
        await rt.switch_session(None)  # %think_session new: same kind and notebook
        row = await rt.store.get_session(rt.session_id)
        assert row is not None and (row["kind"], row["path"]) == ("magic", "sub/a.ipynb")
    finally:
        await rt.close()


async def test_a_notebook_named_by_its_absolute_path_is_recorded_by_its_workspace_path(
    tmp_path: Path,
) -> None:
    # Jupyter names a kernel's notebook by its absolute path (JPY_SESSION_NAME); the sidebar,
    # "Ask Think" and AGENTS.md lookups know notebooks by their path in the workspace.
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    cfg = ThinkConfig()
    cfg.store_path = str(tmp_path / "store" / "think.db")
    rt = Runtime(cfg, ws, extensions=[], session_path=str(ws / "sub" / "a.ipynb"))
    await rt.start()
    try:
        assert rt.store is not None
        row = await rt.store.get_session(rt.session_id)
        assert row is not None and row["path"] == "sub/a.ipynb"
    finally:
        await rt.close()
