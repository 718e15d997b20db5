"""REST API: shapes, auth, bad input, pagination, blobs."""

from __future__ import annotations

import asyncio
import gc
import json

from tornado.httpclient import HTTPClientError

from tests.waiting import until


async def test_session_crud(api):
    code, s = await api("POST", "sessions", {"title": "first", "path": "nb.ipynb"})
    assert code == 201 and s["id"] and s["title"] == "first" and s["path"] == "nb.ipynb"
    code, body = await api("GET", "sessions")
    assert code == 200 and [x["id"] for x in body["sessions"]] == [s["id"]]
    code, got = await api("PATCH", f"sessions/{s['id']}", {"title": "renamed"})
    assert code == 200 and got["title"] == "renamed"
    code, got = await api("GET", f"sessions/{s['id']}")
    assert code == 200 and got["title"] == "renamed" and got["run"] is None
    code, _ = await api("DELETE", f"sessions/{s['id']}")
    assert code == 204
    code, err = await api("GET", f"sessions/{s['id']}")
    assert code == 404 and s["id"] in err["message"]


async def test_history_pages_with_cursor(api, think):
    _, s = await api("POST", "sessions", {})
    store = think.services.store
    for i in range(25):
        await store.add_message(s["id"], "user" if i % 2 == 0 else "assistant", f"m{i}")
    code, page = await api("GET", f"sessions/{s['id']}/messages", limit=10)
    assert code == 200
    assert [m["content"] for m in page["messages"]] == [f"m{i}" for i in range(15, 25)]
    seen = [m["content"] for m in page["messages"]]
    while page["next_cursor"] is not None:
        _, page = await api(
            "GET", f"sessions/{s['id']}/messages", limit=10, before=page["next_cursor"]
        )
        seen = [m["content"] for m in page["messages"]] + seen
    assert seen == [f"m{i}" for i in range(25)]


async def test_blob_round_trip(api, think):
    _, s = await api("POST", "sessions", {})
    big = "".join(f"line {i} " + "x" * 80 + "\n" for i in range(1500))  # ~130 KB
    msg = await think.services.store.add_message(s["id"], "tool", big)
    assert msg["content_blob"] and len(msg["content"]) < len(big)
    code, page = await api("GET", f"sessions/{s['id']}/messages")
    row = page["messages"][0]
    assert row["content_size"] == len(big.encode()) and row["result_summary"]
    code, full = await api("GET", f"sessions/{s['id']}/messages/{msg['id']}/content")
    assert code == 200 and full["content"] == big and full["size"] == len(big.encode())
    code, _ = await api("GET", f"sessions/other/messages/{msg['id']}/content")
    assert code == 404


async def test_actions_filters_tasks_events(api, think):
    _, s = await api("POST", "sessions", {})
    store = think.services.store
    await store.log_actions(
        [
            {
                "session_id": s["id"],
                "tool": "bash",
                "ts": 10.0,
                "success": True,
                "message_id": "m1",
            },
            {
                "session_id": s["id"],
                "tool": "read_file",
                "ts": 20.0,
                "success": False,
                "error": "no such file",
                "message_id": "m2",
            },
            {"session_id": s["id"], "tool": "bash", "ts": 30.0, "success": False},
        ]
    )

    async def tools(**q):
        code, body = await api("GET", f"sessions/{s['id']}/actions", **q)
        assert code == 200, body
        return [(a["tool"], a["ts"]) for a in body["actions"]]

    assert await tools() == [("bash", 10.0), ("read_file", 20.0), ("bash", 30.0)]
    assert await tools(tool="bash") == [("bash", 10.0), ("bash", 30.0)]
    assert await tools(success="false") == [("read_file", 20.0), ("bash", 30.0)]
    assert await tools(since="15", until="25") == [("read_file", 20.0)]
    assert await tools(message_id="m1") == [("bash", 10.0)]
    code, body = await api("GET", f"sessions/{s['id']}/tasks")
    assert code == 200 and body == {"tasks": [], "progress": 0.0}
    seq = await think.services.pipeline.emit(s["id"], {"type": "status", "status": "idle"})
    code, body = await api("GET", f"sessions/{s['id']}/events", after=seq - 1)
    assert code == 200 and [e["seq"] for e in body["events"]] == [seq]
    assert body["events"][0]["data"]["status"] == "idle"


async def test_approvals(api, think):
    _, s = await api("POST", "sessions", {})
    await think.services.store.db.execute(
        "INSERT INTO approvals (id, session_id, tool, input, status, created_at)"
        " VALUES ('ap1', ?, 'bash', '{\"command\": \"rm -rf x\"}', 'pending', 1.0)",
        (s["id"],),
    )
    tab_code, ap = await api("GET", f"sessions/{s['id']}/approvals/ap1")
    assert tab_code == 200 and ap["status"] == "pending" and ap["input"]["command"]
    code, err = await api("POST", f"sessions/{s['id']}/approvals/ap1", {"decision": "maybe"})
    assert code == 400 and "decision" in err["message"]
    code, ap = await api(
        "POST",
        f"sessions/{s['id']}/approvals/ap1",
        {"decision": "approve", "input": {"command": "rm x"}},
    )
    assert code == 200 and ap["status"] == "approved"
    assert ap["decision"]["input"] == {"command": "rm x"}
    code, _ = await api("POST", f"sessions/{s['id']}/approvals/ap1", {"decision": "reject"})
    assert code == 409
    code, body = await api("GET", f"sessions/{s['id']}/approvals")
    assert [a["id"] for a in body["approvals"]] == ["ap1"]
    code, body = await api("GET", f"sessions/{s['id']}/events")
    assert body["events"][-1]["type"] == "approval_resolved"


async def test_bad_input_is_4xx_with_a_message(api, think):
    _, s = await api("POST", "sessions", {})
    sid = s["id"]
    cases = [
        ("POST", "sessions", "{not json"),
        ("POST", "sessions", "[1, 2]"),
        ("POST", "sessions", {"title": 5}),
        ("POST", "sessions", '{"title": "\\ud800"}'),
        ("POST", "sessions", '{"title": NaN}'),
        ("PATCH", f"sessions/{sid}", {}),
        ("POST", f"sessions/{sid}/messages", {}),
        ("POST", f"sessions/{sid}/messages", {"content": ["x"]}),
        ("POST", f"sessions/{sid}/messages", {"content": "hi", "context": "nope"}),
        ("POST", f"sessions/{sid}/truncate", {}),
        ("POST", f"sessions/{sid}/truncate", {"message_id": "nope"}),
        ("GET", f"sessions/{sid}/messages?limit=0", None),
        ("GET", f"sessions/{sid}/messages?before=abc", None),
        ("GET", f"sessions/{sid}/actions?success=perhaps", None),
        ("GET", f"sessions/{sid}/actions?since=inf", None),
        ("GET", "sessions/nope/messages", None),
        ("POST", "sessions/nope/messages", {"content": "hi"}),
        ("GET", f"sessions/{sid}/approvals/nope", None),
        ("POST", "sessions", "x" * (think.max_body_size + 1)),
    ]
    for method, path, body in cases:
        params = {}
        if "?" in path:
            path, query = path.split("?")
            params = dict([query.split("=")])
        code, err = await api(method, path, body, **params)
        assert 400 <= code < 500, (method, path, body, code, err)
        assert isinstance(err, dict) and err.get("message"), (method, path, err)


async def test_auth_is_required(jp_fetch, http_server_client, jp_base_url, api):
    await api("GET", "sessions")  # the store is ready
    for method, body in (("GET", None), ("POST", "{}")):
        for headers in ({}, {"Authorization": "token wrong"}):
            try:
                resp = await http_server_client.fetch(
                    f"{jp_base_url}api/think/sessions",
                    method=method,
                    body=body,
                    headers=headers,
                    raise_error=False,
                )
                code = resp.code
            except HTTPClientError as e:
                code = e.code
            assert code == 403, (method, headers, code)


async def test_xsrf_rules_for_cookie_auth(http_server_client, jp_base_url, api):
    """A browser-style request (cookie, no token) needs the _xsrf token on unsafe methods."""
    await api("GET", "sessions")
    resp = await http_server_client.fetch(
        f"{jp_base_url}api/think/sessions",
        method="POST",
        body="{}",
        headers={"Cookie": "_xsrf=abc"},
        raise_error=False,
    )
    assert resp.code == 403


async def test_authorizer_can_deny_think(jp_serverapp, api):
    class DenyThink(type(jp_serverapp.authorizer)):  # type: ignore[misc]
        def is_authorized(self, handler, user, action, resource):
            return resource != "think"

    original = jp_serverapp.web_app.settings["authorizer"]
    jp_serverapp.web_app.settings["authorizer"] = DenyThink(parent=jp_serverapp)
    try:
        code, err = await api("GET", "sessions")
        assert code == 403
    finally:
        jp_serverapp.web_app.settings["authorizer"] = original
    code, _ = await api("GET", "sessions")
    assert code == 200


async def test_openapi_document_lists_routes(api):
    code, doc = await api("GET", "openapi.json")
    assert code == 200 and doc["openapi"].startswith("3.")
    for path in ("/sessions", "/sessions/{session_id}/messages", "/sessions/{session_id}/actions"):
        assert path in doc["paths"]
    json.dumps(doc)


async def test_ws_sync_history_and_live_frames(api, ws, think):
    _, s = await api("POST", "sessions", {"title": "ws"})
    await think.services.store.add_message(s["id"], "user", "earlier")
    tab = await ws(s["id"])
    await until(lambda: tab.of("history"), what="history")
    assert [f["type"] for f in tab.frames[:2]] == ["sync", "history"]
    sync = tab.frames[0]
    assert sync["session"]["id"] == s["id"] and sync["status"] == "idle" and sync["run"] is None
    assert [m["content"] for m in tab.frames[1]["messages"]] == ["earlier"]
    # a live stream: a second tab joining mid-stream gets the partial message
    pipe = think.services.pipeline
    await pipe.emit(s["id"], {"type": "text_delta", "message_id": "m1", "delta": "Hel"})
    tab2 = await ws(s["id"])
    await until(lambda: tab2.of("partial"), what="partial")
    assert tab2.of("partial")[0]["message"]["content"] == "Hel"
    await pipe.emit(s["id"], {"type": "text_delta", "message_id": "m1", "delta": "lo"})
    for t in (tab, tab2):
        await until(lambda t=t: any(f.get("delta") == "lo" for f in t.frames), what="delta")
        assert all(f["session_id"] == s["id"] for f in t.of("text_delta"))
    assert [f["delta"] for f in tab.of("text_delta")] == ["Hel", "lo"]
    assert [f["delta"] for f in tab2.of("text_delta")] == ["lo"]  # "Hel" was in the partial
    # client frames
    await tab.send({"type": "ping"})
    await until(lambda: tab.of("pong"), what="pong")
    await tab.conn.write_message("not json")
    await tab.send({"type": "launch-missiles"})
    await until(lambda: len(tab.of("error")) == 2, what="errors")
    await tab.send({"type": "cancel"})
    await until(lambda: tab.of("cancelled"), what="cancelled")
    await tab.send({"type": "ping"})
    await until(lambda: len(tab.of("pong")) == 2, what="server still answers")


async def test_ws_reconnect_shows_what_the_run_does(api, ws, think):
    """A tab that joins mid-run gets the agent's status (not just "running"), the tools
    that still run with their output so far, and a retry's countdown minus the time since."""
    store, pipe = think.services.store, think.services.pipeline
    _, s = await api("POST", "sessions", {"title": "reload"})
    sid = s["id"]
    msg = await store.add_message(sid, "user", "run it")
    await store.create_run("r_reload", sid, msg["id"], "test")
    await store.update_run("r_reload", status="running")

    await pipe.emit(sid, {"type": "status", "status": "executing", "detail": "bash"})
    await pipe.emit(
        sid,
        {"type": "tool_call", "id": "c1", "name": "bash", "input": {"command": "x"},
         "message_id": "m1"},
    )  # fmt: skip
    last = await pipe.emit(
        sid, {"type": "tool_progress", "call_id": "c1", "stream": "stdout", "text": "one\n"}
    )
    tab = await ws(sid)
    await until(lambda: tab.of("partial"), what="partial")
    sync = tab.of("sync")[0]
    assert (sync["status"], sync["detail"]) == ("executing", "bash")
    part = tab.of("partial")[0]
    assert part["message"] is None and part["upto"] == last
    assert [(t["id"], t["progress"]) for t in part["tools"]] == [("c1", "one\n")]
    # live output resumes after the snapshot, nothing twice
    await pipe.emit(
        sid, {"type": "tool_progress", "call_id": "c1", "stream": "stdout", "text": "two\n"}
    )
    await until(lambda: tab.of("tool_progress"), what="live progress")
    assert [f["text"] for f in tab.of("tool_progress")] == ["two\n"]

    await pipe.emit(sid, {"type": "status", "status": "waiting", "detail": "approval needed: x"})
    tab2 = await ws(sid)
    await until(lambda: tab2.of("partial"), what="partial")
    assert (tab2.of("sync")[0]["status"], tab2.of("sync")[0]["detail"]) == (
        "waiting",
        "approval needed: x",
    )
    assert tab2.of("partial")[0]["tools"][0]["progress"] == "one\ntwo\n"

    await pipe.emit(
        sid, {"type": "tool_result", "call_id": "c1", "name": "bash", "output": "", "ok": True,
              "duration_ms": 1.0},
    )  # fmt: skip
    await pipe.emit(
        sid, {"type": "status", "status": "waiting", "detail": "429; retry 1/3 in 30 s"}
    )
    tab3 = await ws(sid)
    await until(lambda: tab3.of("history"), what="history")
    detail = tab3.of("sync")[0]["detail"]
    assert detail in ("429; retry 1/3 in 30 s", "429; retry 1/3 in 29 s")
    assert not tab3.of("partial")  # no tool runs, nothing streams

    await pipe.emit(sid, {"type": "status", "status": "idle"})
    await store.update_run("r_reload", status="complete")
    tab4 = await ws(sid)
    await until(lambda: tab4.of("history"), what="history")
    assert (tab4.of("sync")[0]["status"], tab4.of("sync")[0]["detail"]) == ("idle", "")


async def test_ws_auth_and_unknown_session(
    jp_ws_fetch, http_server_client, jp_http_port, jp_base_url, api
):
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    await api("GET", "sessions")
    url = f"ws://127.0.0.1:{jp_http_port}{jp_base_url}api/think/sessions/x/ws"
    for headers in ({}, {"Authorization": "token wrong"}):
        try:
            await websocket_connect(HTTPRequest(url, headers=headers))
            raise AssertionError("connected without a token")
        except HTTPClientError as e:
            assert e.code == 403
    try:
        await jp_ws_fetch("api", "think", "sessions", "nope", "ws")
        raise AssertionError("connected to an unknown session")
    except HTTPClientError as e:
        assert e.code == 404


async def test_session_socket_sends_without_delay(api, ws, think):
    """A tab's socket has Nagle off on the server end (tornado turns it back on
    after the upgrade response), so small live frames never wait for the tab's delayed ACK."""
    import socket

    _, s = await api("POST", "sessions", {"title": "nodelay"})
    tab = await ws(s["id"])
    await until(lambda: tab.of("history"), what="history")
    handlers = list(think.services.hub._clients[s["id"]])
    assert handlers
    for handler in handlers:
        sock = handler.ws_connection.stream.socket
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


async def test_a_tab_that_vanishes_mid_stream_leaves_no_traceback(api, ws, think):
    """Frames on their way to a tab whose connection dropped fail in futures nobody awaits:
    their errors are read, so asyncio logs no "Task exception was never retrieved"."""
    loop = asyncio.get_running_loop()
    unhandled: list[dict] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, ctx: unhandled.append(ctx))
    try:
        _, s = await api("POST", "sessions", {"title": "vanish"})
        hub = think.services.hub
        tab = await ws(s["id"])
        tab.conn.protocol.stream.close()  # no close frame: the server learns it on a write
        big = "x" * 200_000  # larger than a socket buffer: the write is still pending
        for i in range(20):
            hub.publish(s["id"], {"type": "text_delta", "message_id": "m", "delta": big, "seq": i})
            await asyncio.sleep(0)
        await until(lambda: hub.client_count(s["id"]) == 0, 10, "the tab is forgotten")
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(previous)
    assert not unhandled, [c.get("message") for c in unhandled]
