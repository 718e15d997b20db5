"""The kernel link: HMAC handshake, RPC, at-least-once delivery with server-side dedup.

The kernel end is the production ``think_kernel.kernel.link.KernelLink``, run in the test process
with the identity (connection file) of a real kernel the server started.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest
from tornado.websocket import websocket_connect

from tests.waiting import until
from think_kernel.kernel.link import KernelLink, LinkError, find_server, kernel_identity, link_mac

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow


class Recorder:
    """A runtime stand-in: only ``add_sink`` and ``session_id`` are used by the link."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.sinks = []

    def add_sink(self, sink) -> None:
        self.sinks.append(sink)

    def emit(self, frame) -> None:
        for sink in self.sinks:
            sink(frame)


@pytest.fixture
async def identity(think):
    km = think.serverapp.kernel_manager
    kid = await km.start_kernel(kernel_name="python3")
    yield kid, km.get_kernel(kid).connection_file
    await km.shutdown_kernel(kid, now=True)


@pytest.fixture
def server_url(think):
    return think.server_url()


async def test_rpc_round_trip_and_errors(think, identity, server_url, api):
    _, s = await api("POST", "sessions", {})
    calls = []

    async def echo(info, params):
        calls.append(info)
        return {"echo": params, "kernel": info.kernel_id}

    async def boom(info, params):
        raise ValueError("bad path")

    think.register_rpc("test.echo", echo)
    think.register_rpc("test.boom", boom)
    kid, cf = identity
    link = KernelLink(Recorder(s["id"]), server_url, *kernel_identity(cf))
    link.start()
    try:
        result = await asyncio.wait_for(link.request("test.echo", {"x": 1}), 10)
        assert result == {"echo": {"x": 1}, "kernel": kid}
        assert calls[0].kernel_id == kid and calls[0].epoch == link.epoch
        with pytest.raises(LinkError) as e:
            await asyncio.wait_for(link.request("test.boom"), 10)
        # a ValueError or TypeError is a request the kernel got wrong: a 4xx, not a crash
        assert e.value.code == "bad_params" and "bad path" in str(e.value)
        with pytest.raises(LinkError) as e:
            await asyncio.wait_for(link.request("nope"), 10)
        assert e.value.code == "unknown_method"
        with pytest.raises(ValueError):
            think.register_rpc("test.echo", echo)
    finally:
        await link.close()


async def test_events_survive_a_dropped_link_without_duplicates(
    think, identity, server_url, api, ws
):
    _, s = await api("POST", "sessions", {})
    tab = await ws(s["id"])
    rt = Recorder(s["id"])
    link = KernelLink(rt, server_url, *kernel_identity(identity[1]))
    link.start()
    try:
        await asyncio.wait_for(link.connected.wait(), 10)
        for i in range(50):
            rt.emit({"type": "text_delta", "message_id": "m", "delta": f"{i},"})
        await until(lambda: link.pending == 0, 10, "acks")
        # drop the link, then queue more while it is down: they are sent after the reconnect
        link._ws.close()
        for i in range(50, 100):
            rt.emit({"type": "text_delta", "message_id": "m", "delta": f"{i},"})
        await until(lambda: link.pending == 0 and link.connected.is_set(), 10, "resend")
        expected = "".join(f"{i}," for i in range(100))
        await until(
            lambda: "".join(f["delta"] for f in tab.of("text_delta")) == expected,
            10,
            "all 100 deltas, in order, once",
        )
        _, ev = await api("GET", f"sessions/{s['id']}/events")
        assert "".join(e["data"]["delta"] for e in ev["events"]) == expected
    finally:
        await link.close()


async def test_replayed_items_are_dropped(think, identity, server_url, api):
    """Items resent with numbers the server already has are acknowledged, not stored again."""
    _, s = await api("POST", "sessions", {})
    rt = Recorder(s["id"])
    link = KernelLink(rt, server_url, *kernel_identity(identity[1]))
    link.start()
    try:
        await asyncio.wait_for(link.connected.wait(), 10)
        rt.emit({"type": "status", "status": "thinking"})
        await until(lambda: link.pending == 0, 10, "ack")
        item = {
            "n": 1,
            "kind": "event",
            "session_id": s["id"],
            "event": {"type": "status", "status": "thinking"},
        }
        link._write({"type": "items", "items": [item, item]})
        rt.emit({"type": "status", "status": "idle"})
        await until(lambda: link.pending == 0, 10, "ack")
        _, ev = await api("GET", f"sessions/{s['id']}/events")
        assert [e["data"]["status"] for e in ev["events"]] == ["thinking", "idle"]
    finally:
        await link.close()


async def test_acks_come_together(think, identity, server_url, api):
    """Items stored one by one are acknowledged together (one ack per ``ACK_DELAY``), not
    with one frame each: an ack only frees what the kernel would resend."""
    _, s = await api("POST", "sessions", {})
    rt = Recorder(s["id"])
    link = KernelLink(rt, server_url, *kernel_identity(identity[1]))
    acks = []
    handle = link._handle

    def counting(frame):
        if frame.get("type") == "ack":
            acks.append(frame["n"])
        handle(frame)

    link._handle = counting
    link.start()
    try:
        await asyncio.wait_for(link.connected.wait(), 10)
        for i in range(30):  # each alone in its frame
            rt.emit({"type": "status", "status": "executing", "detail": str(i)})
            await asyncio.sleep(0.015)
        await until(lambda: link.pending == 0, 10, "all acknowledged")
        assert acks[-1] == 30 and len(acks) <= 15, acks
        _, ev = await api("GET", f"sessions/{s['id']}/events")
        assert [e["data"]["detail"] for e in ev["events"]] == [str(i) for i in range(30)]
    finally:
        await link.close()


async def test_lazy_events_share_a_frame_and_precede_rpcs(think, identity, server_url, api):
    """The status "executing" (like tool calls, usage, tasks) waits up to LAZY_WRITE for
    company; an RPC or an urgent item (here a status "thinking", which opens a model step)
    sends it first, in order."""
    _, s = await api("POST", "sessions", {})

    async def echo(info, params):
        return {}

    think.register_rpc("test.lazy", echo)
    rt = Recorder(s["id"])
    link = KernelLink(rt, server_url, *kernel_identity(identity[1]))
    frames = []
    write = link._write

    def recording(frame):
        if frame["type"] == "items":
            frames.append([i["event"]["detail"] for i in frame["items"]])
        elif frame["type"] == "rpc":
            frames.append(frame["method"])
        write(frame)

    link._write = recording
    link.start()

    def status(state, detail):
        rt.emit({"type": "status", "status": state, "detail": detail})

    try:
        await asyncio.wait_for(link.connected.wait(), 10)
        status("executing", "1")
        status("executing", "2")
        assert frames == []  # waiting for company
        await asyncio.wait_for(link.request("test.lazy"), 10)
        assert link._lazy_timer is None  # what waited went with the RPC: no wake-up left
        status("executing", "3")
        await asyncio.sleep(0.1)  # nothing else comes: sent after LAZY_WRITE
        status("executing", "4")
        status("thinking", "5")
        assert link._lazy_timer is None
        await until(lambda: link.pending == 0, 10, "all acknowledged")
        assert frames == [["1", "2"], "test.lazy", ["3"], ["4", "5"]], frames
        _, ev = await api("GET", f"sessions/{s['id']}/events")
        assert [e["data"]["detail"] for e in ev["events"]] == ["1", "2", "3", "4", "5"]
    finally:
        await link.close()


async def test_rooms_news_and_holds_that_need_no_answer(think, identity, server_url, api):
    """The server tells each kernel whether any document room is open (none
    here: no collaboration), and a run's hold may then start with an unanswered item.
    Holds that are not well formed change nothing, and the link carries on."""
    _, s = await api("POST", "sessions", {})
    files = think.settings["think_documents"].files
    link = KernelLink(Recorder(s["id"]), server_url, *kernel_identity(identity[1]))
    link.start()
    try:
        await until(lambda: link.rooms_open is False, 10, "told that no room is open")
        for listener in files.open_listeners:
            listener(True)
        await until(lambda: link.rooms_open is True, 10, "told that a room opened")
        for listener in files.open_listeners:
            listener(False)
        await until(lambda: link.rooms_open is False, 10, "told that it closed")
        for bad in (
            {"lease": "a", "path": "../up", "hold": 5},
            {"lease": "b" * 65, "hold": 5},
            {"lease": 7, "hold": 5},
            {"lease": "", "hold": 5},
            {"lease": "c", "hold": "nan"},
            {"lease": "d", "hold": "soon"},
            {"lease": "e", "hold": -1},
            {"lease": "f", "path": "/etc", "hold": 5},
        ):
            link.push({"kind": "doc.hold", **bad})
        link.push({"kind": "doc.hold", "lease": "kgood", "path": "sub/x/..", "hold": 1e9})
        await until(lambda: link.pending == 0, 10, "all acknowledged")
        assert list(files.holds) == ["kgood"]
        folder, expiry = files.holds["kgood"]
        assert folder == "sub" and expiry - time.monotonic() <= 3600  # MAX_HOLD
        link.push({"kind": "doc.release", "lease": "kgood"})
        await until(lambda: not files.holds, 10, "released")
        assert await asyncio.wait_for(link.request("doc.flush", {"path": "."}), 10) == {
            "saved": [],
            "lease": None,
        }
    finally:
        await link.close()
    assert link.rooms_open is None  # not connected: nothing known


async def test_an_rpc_is_answered_before_the_items_ahead_of_it_are_stored(
    think, identity, server_url, api
):
    """A request that comes with items (a run's ``doc.flush`` right after its tool
    calls) is answered before those items are stored: the kernel waits on the answer,
    nobody on the storing. The items are still stored, all and in order."""
    _, s = await api("POST", "sessions", {})
    store = think.services.store
    stored_when_asked: list[int] = []

    async def probe(info, params):
        stored_when_asked.append(await store.last_event_seq(s["id"]))
        return {}

    think.register_rpc("test.probe", probe)
    rt = Recorder(s["id"])
    link = KernelLink(rt, server_url, *kernel_identity(identity[1]))
    link.start()
    try:
        await asyncio.wait_for(link.connected.wait(), 10)
        for round_ in range(3):
            before = await store.last_event_seq(s["id"])
            for i in range(3):
                rt.emit({"type": "status", "status": "executing", "detail": f"{round_}.{i}"})
            await asyncio.wait_for(link.request("test.probe"), 10)
            assert stored_when_asked[-1] == before  # answered first
            await until(lambda: link.pending == 0, 10, "all acknowledged")
        _, ev = await api("GET", f"sessions/{s['id']}/events")
        details = [e["data"]["detail"] for e in ev["events"]]
        assert details == [f"{r}.{i}" for r in range(3) for i in range(3)]
        # The kernel writes the items and the request in one TCP segment (TCP_CORK), so the
        # server reads them together; the cork is off again afterwards.
        sock = link._ws.protocol.stream.socket
        with link._corked():
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CORK) == 1
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CORK) == 0
    finally:
        await link.close()


async def test_handshake_refuses_a_wrong_key_or_unknown_kernel(think, identity, server_url, api):
    kid, _ = identity
    url = server_url.replace("http", "ws", 1) + "api/think/link"
    for claimed, key in ((kid, b"wrong key"), ("not-a-kernel", b"k")):
        ws = await websocket_connect(url)
        challenge = json.loads(await ws.read_message())
        await ws.write_message(
            json.dumps(
                {
                    "type": "hello",
                    "kernel_id": claimed,
                    "epoch": "e",
                    "cnonce": "c",
                    "mac": link_mac(key, "kernel", claimed, "e", challenge["nonce"]),
                }
            )
        )
        assert await ws.read_message() is None
        assert _close_code(ws) == 4403
    ws = await websocket_connect(url)
    await ws.read_message()
    await ws.write_message("garbage")
    assert json.loads(await ws.read_message())["type"] == "error"
    await ws.write_message(json.dumps({"type": "items", "items": []}))  # before hello
    assert await ws.read_message() is None and _close_code(ws) == 4400
    assert not think.services.links.conns


async def test_unknown_or_malformed_frames_get_an_error_and_the_link_stays(
    think, identity, server_url, api
):
    """Server side: each frame outside the table, or with a field missing or of the wrong
    type, is answered with an error frame (an RPC with a usable id with an ``rpc_error`` its
    caller can match); nothing is dropped silently and the link keeps working."""
    kid, _ = identity
    key = think.serverapp.kernel_manager.get_kernel(kid).session.key
    ws = await websocket_connect(server_url.replace("http", "ws", 1) + "api/think/link")
    nonce = json.loads(await ws.read_message())["nonce"]
    hello = {"type": "hello", "kernel_id": kid, "epoch": "e1", "cnonce": "c",
             "mac": link_mac(key, "kernel", kid, "e1", nonce)}  # fmt: skip
    await ws.write_message(json.dumps(hello))
    assert json.loads(await ws.read_message())["type"] == "welcome"
    conn = think.services.links.conns[kid]

    async def answer(frame: dict) -> dict:
        await ws.write_message(json.dumps(frame))
        while True:
            reply = json.loads(await ws.read_message())
            if reply["type"] != "rooms":  # news the server sends on its own
                return reply

    reply = await answer({"type": "no_such_frame"})
    assert reply == {"type": "error", "code": "unknown_type",
                     "message": "unknown frame type 'no_such_frame'"}  # fmt: skip
    reply = await answer({"type": "items", "items": "not a list"})
    assert reply["type"] == "error" and reply["code"] == "bad_frame"
    assert "'items'" in reply["message"]
    reply = await answer({"type": "items", "items": [{"n": 1}, 7]})
    assert reply["type"] == "error" and reply["code"] == "bad_frame"
    reply = await answer({"type": "rpc", "id": 5, "method": ["doc.read"]})
    assert reply["type"] == "rpc_error" and reply["id"] == 5
    assert reply["error"]["code"] == "bad_frame" and "'method'" in reply["error"]["message"]
    reply = await answer({"type": "rpc", "id": 6, "method": "doc.read", "params": "a.py"})
    assert reply["type"] == "rpc_error" and reply["id"] == 6
    assert (await answer({"type": "ping", "id": 9})) == {"type": "pong", "id": 9, "runs": None}
    assert think.services.links.conns[kid] is conn
    ws.close()


async def test_the_kernel_answers_bad_server_frames_and_stays_connected(
    think, identity, server_url, api, caplog
):
    """Kernel side: a server frame of an unknown type, or a malformed one (an ``ack`` whose
    ``n`` is not a number once raised in the reader and dropped the link), is answered with
    an error frame the server logs; the same connection carries on."""
    kid, _ = identity
    _, s = await api("POST", "sessions", {})
    links = think.services.links

    async def echo(info, params):
        return {"echo": params}

    think.register_rpc("test.echo_bad", echo)
    link = KernelLink(Recorder(s["id"]), server_url, *kernel_identity(identity[1]))
    link.start()
    try:
        await asyncio.wait_for(link.connected.wait(), 10)
        conn, ws = links.conns[kid], link._ws
        with caplog.at_level("WARNING", logger="jupyter_ext.link"):
            for bad in ({"type": "no_such_frame"}, {"type": "ack", "n": "x"},
                        {"type": "chat"}, {"type": "rooms", "open": "yes"}):  # fmt: skip
                assert links.send(kid, bad)
            await until(lambda: caplog.text.count("says:") >= 4, 10, "the kernel's errors")
        assert "unknown frame type 'no_such_frame'" in caplog.text
        assert "'n' of a 'ack' frame must be int" in caplog.text
        assert "a 'chat' frame needs 'run_id'" in caplog.text
        assert link.rooms_open is not True
        assert await asyncio.wait_for(link.request("test.echo_bad", {"a": 1}), 10) == {
            "echo": {"a": 1}
        }
        assert links.conns[kid] is conn and link._ws is ws  # never reconnected
    finally:
        await link.close()


def _close_code(ws) -> int | None:
    # tornado keeps the peer's close code on the protocol object
    return ws.close_code or getattr(ws.protocol, "close_code", None)


def test_find_server_uses_env_then_runtime_file(tmp_path, monkeypatch):
    assert find_server({"THINK_SERVER_URL": "http://h:1/"}) == "http://h:1/"
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path))
    (tmp_path / "jpserver-4242.json").write_text(
        json.dumps({"url": "http://127.0.0.1:9999/base/", "token": "secret", "pid": 4242})
    )
    assert find_server({"JPY_PARENT_PID": "4242"}) == "http://127.0.0.1:9999/base/"
    assert find_server({"JPY_PARENT_PID": "1"}) is None
    assert find_server({}) is None
    cf = tmp_path / "kernel-abc-123.json"
    cf.write_text(json.dumps({"key": "k3y"}))
    assert kernel_identity(str(cf)) == ("abc-123", b"k3y")
    assert kernel_identity(str(tmp_path / "other.json")) is None


async def test_link_frames_leave_at_once(think, identity, server_url, api):
    """No Nagle delay on either end of the link (tornado turns it back on after
    the upgrade), and an item after a quiet spell is written when it is pushed, not when a
    writer task next gets the loop (a fast model stream may keep it for a while)."""
    import socket

    _, s = await api("POST", "sessions", {})
    rt = Recorder(s["id"])
    kid = identity[0]
    link = KernelLink(rt, server_url, *kernel_identity(identity[1]))
    link.start()
    try:
        await asyncio.wait_for(link.connected.wait(), 10)
        await until(lambda: kid in think.services.links.conns, 10, "server side of the link")
        server_sock = think.services.links.conns[kid].ws_connection.stream.socket
        client_sock = link._ws.protocol.stream.socket
        for sock in (server_sock, client_sock):
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        await until(lambda: link.pending == 0, 10, "nothing in flight")
        await asyncio.sleep(0.01)  # a quiet spell
        rt.emit({"type": "status", "status": "idle"})  # not one that may wait (LAZY_EVENTS)
        assert link.pending == 1  # queued for the server's ack...
        assert link._sent == link._n  # ...and already written, without yielding the loop
        await until(lambda: link.pending == 0, 10, "ack")
    finally:
        await link.close()


async def test_a_runtime_its_kernel_attaches_ships_events_unasked(
    think, identity, server_url, api, ws
):
    """A notebook's cells run its runtime, not the server: attached by the kernel, its
    events reach the tabs watching the session though no server request built it."""
    _, s = await api("POST", "sessions", {})
    tab = await ws(s["id"])
    rt = Recorder(s["id"])

    async def never() -> None:
        raise AssertionError("the link must not build the runtime here")

    link = KernelLink(never, server_url, *kernel_identity(identity[1]))
    link.start()
    try:
        link.attach(rt)
        link.attach(rt)  # once per runtime: no event twice
        assert len(rt.sinks) == 1
        await asyncio.wait_for(link.connected.wait(), 10)
        answered = {"type": "question_answered", "id": "q_1", "answer": "green"}
        rt.emit({**answered, "source": "notebook", "user": "Ada"})
        await until(lambda: tab.of("question_answered"), 10, "the tab hears the answer")
        assert tab.of("question_answered")[0]["user"] == "Ada"
    finally:
        await link.close()
