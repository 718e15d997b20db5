"""``GET /api/think/search``: the workspace's sessions, clear errors, auth, deletion."""

from __future__ import annotations

from tornado.httpclient import HTTPClientError

from think_kernel.store import Store, location


async def test_search_finds_messages_of_every_session_and_forgets_deleted_ones(api, think) -> None:
    store = think.services.store
    code, first = await api("POST", "sessions", {"title": "formats"})
    assert code == 201
    await store.add_message(first["id"], "user", "We decided: results are stored as Parquet.")
    code, second = await api("POST", "sessions", {"title": "later"})
    await store.add_message(second["id"], "tool", "ok", name="write_file", result_summary="parquet")

    code, body = await api("GET", "search", q="parquet", limit="5")
    assert code == 200, body
    assert body["query"] == "parquet" and body["notice"] == ""
    assert {h["session_id"] for h in body["hits"]} == {first["id"], second["id"]}
    said = next(h for h in body["hits"] if h["session_id"] == first["id"])
    assert said["title"] == "formats" and said["role"] == "user" and said["kind"] == "chat"
    start, end = said["spans"][0]
    assert said["snippet"][start:end] == "Parquet"
    assert said["link"] == f"/api/think/sessions/{first['id']}/messages?before=2&limit=20"
    code, page = await api(
        "GET", f"sessions/{first['id']}/messages", before=str(said["seq"] + 1), limit="20"
    )
    assert code == 200 and page["messages"][-1]["id"] == said["message_id"]

    code, _ = await api("DELETE", f"sessions/{first['id']}")
    assert code == 204
    code, body = await api("GET", "search", q="parquet")
    assert [h["session_id"] for h in body["hits"]] == [second["id"]]


async def test_bad_queries_are_clear_answers_never_500(api, think) -> None:
    sid = (await think.services.store.create_session())["id"]
    await think.services.store.add_message(sid, "user", "we use c and c sharp")
    code, body = await api("GET", "search", q="c++")
    assert code == 200 and body["notice"].startswith("not valid search syntax") and body["hits"]
    for params in ({"q": "()"}, {"q": ""}, {}, {"q": "x", "limit": "0"}, {"q": "x", "limit": "a"}):
        code, body = await api("GET", "search", **params)
        assert code == 400, (params, code, body)
        assert body["message"], body


async def test_search_sees_neither_other_workspaces_nor_anonymous_callers(
    api, think, jp_root_dir, tmp_path, http_server_client, jp_base_url
) -> None:
    other_root = tmp_path / "other-workspace"
    other_root.mkdir()
    other = await Store.open(location.store_file(other_root))
    assert other.path != think.services.store.path
    await other.add_message((await other.create_session())["id"], "user", "zeppelin plans")
    await other.close()
    sid = (await think.services.store.create_session())["id"]
    await think.services.store.add_message(sid, "user", "blimp plans")
    code, body = await api("GET", "search", q="zeppelin OR blimp")
    assert code == 200 and [h["session_id"] for h in body["hits"]] == [sid]

    try:
        resp = await http_server_client.fetch(
            f"{jp_base_url}api/think/search?q=blimp", raise_error=False
        )
        code = resp.code
    except HTTPClientError as e:
        code = e.code
    assert code == 403


async def test_the_memory_file_and_an_undo_of_remember_over_rest(
    api, think, monkeypatch, tmp_path
) -> None:
    from think_kernel.agent.toolcalls import record_action
    from think_kernel.memory import MEMORY_TOOLS, MemoryFile
    from think_kernel.tools.base import ToolContext, ToolRegistry
    from think_kernel.tools.services import ToolServices
    from think_kernel.tools.workspace import LocalWorkspace

    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    memory = MemoryFile()  # the default file, as the server finds it
    store = think.services.store
    sid = (await store.create_session())["id"]
    (tmp_path / "ws").mkdir()
    ctx = ToolContext(
        sid, LocalWorkspace(tmp_path / "ws"), store=store, services=ToolServices(memory=memory)
    )
    outcome = await ToolRegistry(MEMORY_TOOLS).call("remember", {"text": "use uv"}, ctx)
    action = await record_action(store, sid, "remember", outcome, {"text": "use uv"}, "m_1")
    line = outcome.output.summary.removeprefix("remembered: ")

    code, body = await api("GET", "memory")
    assert code == 200 and body["path"] == str(memory.path) and body["text"] == f"{line}\n"
    assert body["notes"] == [
        {"action_id": action, "session_id": sid, "ts": body["notes"][0]["ts"], "line": line,
         "present": True}
    ]  # fmt: skip
    code, body = await api("POST", "memory/undo", {"line": line, "session_id": sid})
    assert code == 200 and body == {"removed": line} and memory.read() == ""
    code, body = await api("POST", "memory/undo", {"action_id": action})
    assert code == 409 and "nothing to undo" in body["message"]
    code, body = await api("POST", "memory/undo", {"action_id": "a_nope"})
    assert code == 404
    code, body = await api("POST", "memory/undo", {})
    assert code == 400
    rows = await store.list_actions(sid, tool="think_memory")
    assert [r["output_summary"] for r in rows] == [f"removed: {line}"]
