"""Fuzz every REST route (from the OpenAPI document) and the WebSocket frames (hypothesis):
no input may cause a 5xx, break a socket, or take the server down."""

from __future__ import annotations

import asyncio
import json
import re
import urllib.error
import urllib.parse
import urllib.request

import pytest
import websocket
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from jupyter_ext.openapi import OPENAPI
from tests.waiting import until
from think_kernel.kernel.link import link_mac

from .conftest import TOKEN

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
METHODS = ["GET", "POST", "PATCH", "DELETE", "PUT"]


@pytest.fixture
def think_config():
    # Runs started by fuzzed messages fail fast (no such kernel) instead of starting kernels.
    return {
        "kernel_name": "no-such-kernel",
        "retry_delays": [],
        "heartbeat_interval": 0.5,
        "kernel_pool_size": 0,
    }


json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=40),
)
json_value = st.recursive(
    json_leaf,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
weird_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)


def _nest(n: int, kind: str) -> str:
    return "[" * n + "]" * n if kind == "list" else '{"a":' * n + "1" + "}" * n


# Nesting past what the JSON decoder can recurse into (5,000 deep once answered 500).
deep_json = st.builds(_nest, st.integers(60, 8000), st.sampled_from(["list", "dict"]))
deep_field = st.builds(
    lambda n, name: f'{{"{name}": {_nest(n, "dict")}}}',
    st.integers(60, 3000),
    st.sampled_from(["content", "title", "input", "decision", "type"]),
)


def _body(op: dict) -> st.SearchStrategy:
    props = (
        op.get("requestBody", {})
        .get("content", {})
        .get("application/json", {})
        .get("schema", {})
        .get("properties", {})
    )
    typed = st.fixed_dictionaries(
        {}, optional={name: st.one_of(json_value, weird_text) for name in props}
    ).map(json.dumps)
    return st.one_of(
        st.none(),
        typed,
        json_value.map(json.dumps),
        st.binary(max_size=80),
        weird_text,
        st.just('{"content": "\\ud800"}'),
        st.just('{"title": Infinity}'),
        deep_json,
        deep_field,
    )


def _requests(ids: dict[str, list[str]]) -> st.SearchStrategy:
    ops = [
        (path, method.upper(), op)
        for path, item in OPENAPI["paths"].items()
        for method, op in item.items()
    ]

    @st.composite
    def build(draw):
        path, method, op = draw(st.sampled_from(ops))
        if draw(st.integers(0, 9)) == 0:
            method = draw(st.sampled_from(METHODS))

        def fill(m: re.Match) -> str:
            name = m.group(1)
            value = draw(st.one_of(st.sampled_from(ids.get(name, ["x"])), weird_text))
            return urllib.parse.quote(value, safe="")

        url_path = re.sub(r"\{(\w+)\}", fill, path)
        query = {}
        for p in op.get("parameters", []):
            if p["in"] == "query" and draw(st.booleans()):
                query[p["name"]] = draw(
                    st.one_of(
                        weird_text,
                        st.integers(-10, 10**12).map(str),
                        st.floats(allow_nan=True, allow_infinity=True).map(str),
                        st.sampled_from(["true", "false", "1", "0"]),
                    )
                )
        return method, url_path, query, draw(_body(op))

    return build()


def _template(pattern: str) -> str:
    """A tornado route pattern as an OpenAPI path template."""
    return re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", pattern).removeprefix("/api/think")


#: Routes that are not REST (WebSockets, the kernels' link, the MCP endpoint): described apart.
NOT_REST = re.compile(r"/ws$|/notifications$|/link$|/mcp")


async def test_the_fuzz_covers_every_route(think):
    """Every REST route the running extension serves is in the OpenAPI document the fuzz
    reads (read from the app, so a route added anywhere is covered)."""
    served = {
        _template(handler[0])
        for handler in think.handlers
        if handler[0].startswith("/api/think") and not NOT_REST.search(handler[0])
    }
    assert {"/sessions", "/variables", "/complete"} <= served
    assert served <= set(OPENAPI["paths"]), served - set(OPENAPI["paths"])


async def test_no_input_causes_a_5xx(api, think, jp_http_port, jp_base_url):
    _, s = await api("POST", "sessions", {"title": "fuzz"})
    msg = await think.services.store.add_message(s["id"], "user", "hello")
    # A pending question that takes only its options: answers of every shape hit it.
    spec = {"question": "Which?", "options": ["a", "b"], "allow_text": False}
    asked = await think.services.store.create_approval(
        s["id"], msg["id"], "call_q", "ask_user", spec, kind="question"
    )
    ids = {
        "session_id": [s["id"]],
        "message_id": [msg["id"]],
        "approval_id": ["ap1", asked["id"]],
        "question_id": [asked["id"], "q_none"],
    }
    base = f"http://127.0.0.1:{jp_http_port}{jp_base_url}api/think"
    seen: list[int] = []

    @settings(
        max_examples=400, deadline=None, derandomize=False, suppress_health_check=list(HealthCheck)
    )
    @given(_requests(ids))
    def check(req) -> None:
        method, path, query, body = req
        url = base + path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
        if data is None and method in ("POST", "PATCH", "PUT"):
            data = b""
        request = urllib.request.Request(
            url, data=data, method=method, headers={"Authorization": f"token {TOKEN}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=20) as resp:
                code = resp.status
        except urllib.error.HTTPError as e:
            code = e.code
            if code in (400, 409, 413):  # our handlers' rejections carry a JSON message
                detail = json.loads(e.read().decode("utf-8", "replace"))
                # (the MCP endpoint's are JSON-RPC error objects)
                message = detail.get("message") or (detail.get("error") or {}).get("message")
                assert message, (method, url, detail)
        seen.append(code)
        assert code < 500, (method, url, body, code)

    await asyncio.to_thread(check)
    assert len(seen) >= 400 and {200, 400, 404} <= set(seen)
    # and the server still works
    code, _ = await api("GET", "sessions")
    assert code == 200


# -- WebSocket frames -----------------------------------------------------------------------

ws_frame = st.one_of(
    json_value.map(json.dumps),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["ping", "cancel", "hello", "items", "rpc", "x"])},
        optional={"id": json_value, "items": json_value, "method": weird_text,
                  "params": json_value, "kernel_id": weird_text, "mac": weird_text},
    ).map(json.dumps),
    weird_text,
    st.binary(max_size=80),
    deep_json,
    deep_field,
    st.just('{"type": "ping", "x": NaN}'),
    st.just('{"type": "\\ud800"}'),
)  # fmt: skip


def _ws(url: str, **kw: object) -> websocket.WebSocket:
    return websocket.create_connection(url, timeout=20, **kw)


def _send(conn: websocket.WebSocket, frame: str | bytes) -> None:
    if isinstance(frame, bytes):
        conn.send_binary(frame)
    else:
        conn.send(frame.encode("utf-8", "surrogatepass"), websocket.ABNF.OPCODE_TEXT)


def _until_pong(conn: websocket.WebSocket) -> list[dict]:
    """Frames up to the answer to our ping: the socket must still be up and answering."""
    conn.send(json.dumps({"type": "ping"}))
    frames = []
    while True:
        opcode, data = conn.recv_data()
        assert opcode == websocket.ABNF.OPCODE_TEXT, (opcode, data)
        frame = json.loads(data)
        if frame.get("type") == "pong":
            return frames
        frames.append(frame)


async def test_session_socket_frames_never_break_it(api, think, jp_http_port, jp_base_url):
    _, s = await api("POST", "sessions", {"title": "ws fuzz"})
    url = f"ws://127.0.0.1:{jp_http_port}{jp_base_url}api/think/sessions/{s['id']}/ws"
    conn = await asyncio.to_thread(_ws, url, header=[f"Authorization: token {TOKEN}"])
    await asyncio.to_thread(_until_pong, conn)  # past sync and history
    seen: list[str] = []

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(ws_frame)
    def check(frame: str | bytes) -> None:
        _send(conn, frame)
        for reply in _until_pong(conn):
            assert reply["type"] in ("error", "cancelled", "task_failed", "status"), reply
            seen.append(reply["type"])

    try:
        await asyncio.to_thread(check)
    finally:
        conn.close()
    assert "error" in seen


async def test_link_frames_never_break_it(api, think, jp_http_port, jp_base_url):
    """Before authentication: an error frame or a clean 44xx/1009 close, nothing else; after
    it (a real kernel's key): every frame is answered and the link stays up."""
    url = f"ws://127.0.0.1:{jp_http_port}{jp_base_url}api/think/link"
    links = think.services.links

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(ws_frame)
    def hello_phase(frame: str | bytes) -> None:
        conn = _ws(url)
        try:
            assert json.loads(conn.recv())["type"] == "challenge"
            _send(conn, frame)
            opcode, data = conn.recv_data(control_frame=True)
            if opcode == websocket.ABNF.OPCODE_CLOSE:
                code = int.from_bytes(data[:2], "big")
                assert code in (4400, 4403, 1009), (frame, code)
            else:
                assert json.loads(data)["type"] == "error", (frame, data)
        finally:
            conn.close()

    await asyncio.to_thread(hello_phase)
    await until(lambda: not links.pending, 10, "unauthenticated links forgotten")

    km = think.serverapp.kernel_manager
    kid = await km.start_kernel(kernel_name="python3")
    try:
        key = km.get_kernel(kid).session.key

        def authenticate() -> websocket.WebSocket:
            conn = _ws(url)
            nonce = json.loads(conn.recv())["nonce"]
            hello = {"type": "hello", "kernel_id": kid, "epoch": "fuzz", "cnonce": "c",
                     "mac": link_mac(key, "kernel", kid, "fuzz", nonce)}  # fmt: skip
            conn.send(json.dumps(hello))
            assert json.loads(conn.recv())["type"] == "welcome"
            conn.settimeout(20)  # a hung RPC fails the example instead of the whole run
            return conn

        conn = await asyncio.to_thread(authenticate)
        internal: list[dict] = []
        answered: list[str] = []
        # The real RPC table (the document methods) with garbage parameters; cell execution
        # is left out (it would start kernels).
        methods = sorted(m for m in links._rpc if m != "doc.execute_cell")
        params = st.dictionaries(
            st.sampled_from(["path", "content", "index", "source", "cell_id", "version",
                             "execution_id", "since", "wait", "old", "new", "base"]),
            st.one_of(json_value, weird_text, st.just("a.txt"), st.just("../x"),
                      st.just("n.ipynb")),
        )  # fmt: skip
        rpc = st.builds(
            lambda i, m, p: json.dumps({"type": "rpc", "id": i, "method": m, "params": p}),
            st.integers(1, 10**9),
            st.sampled_from(methods),
            params,
        )

        # Always at least one call with parameters of the wrong type (a draw may have none).
        bad_params = json.dumps(
            {
                "type": "rpc",
                "id": 7,
                "method": "doc.revert",
                "params": {"path": "a.txt", "version": "seven"},
            }  # fmt: skip
        )

        @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
        @given(st.one_of(ws_frame, rpc))
        @example(bad_params)
        def linked(frame: str | bytes) -> None:
            _send(conn, frame)
            replies = _until_pong(conn)
            if '"type": "rpc"' in str(frame) and '"method": "doc.' in str(frame):
                rid = json.loads(frame)["id"]
                # the answer may come after our pong: wait for it
                # (a frame that is not strict JSON, e.g. with -Infinity, is answered by a
                # plain error without an id)
                while not any(r.get("id") == rid or r["type"] == "error" for r in replies):
                    replies += [json.loads(conn.recv())]
            for reply in replies:
                if reply["type"] in ("rpc_result", "rpc_error"):
                    answered.append(reply["type"])
                if reply["type"] == "rpc_error" and reply["error"]["code"] not in (
                    "unknown_method", "bad_params", "bad_frame"
                ):  # fmt: skip
                    internal.append(reply)

        await asyncio.to_thread(linked)
        conn.close()
        assert not internal, internal[:3]
        assert answered.count("rpc_result") >= 20 and "rpc_error" in answered
    finally:
        await km.shutdown_kernel(kid, now=True)


# -- the MCP endpoint ------------------------------------------------------------

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
rpc_message = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0", None])},
    optional={
        "id": st.one_of(st.integers(), weird_text, st.none(), json_value),
        "method": st.one_of(
            st.sampled_from(
                ["initialize", "tools/list", "tools/call", "ping", "notifications/initialized",
                 "notifications/cancelled", "server/discover", "resources/list", "x/y"]
            ),
            weird_text,
        ),
        "params": st.one_of(
            json_value,
            st.fixed_dictionaries(
                {"name": st.one_of(st.sampled_from(["read_file", "nope", "bash"]), weird_text)},
                optional={"arguments": json_value},
            ),
        ),
        "result": json_value,
        "error": json_value,
    },
)  # fmt: skip
mcp_body = st.one_of(
    rpc_message.map(json.dumps),
    st.lists(rpc_message, max_size=3).map(json.dumps),
    json_value.map(json.dumps),
    weird_text,
    st.binary(max_size=80),
    deep_json,
)


async def test_mcp_messages_never_cause_a_5xx(api, think, jp_http_port, jp_base_url):
    """JSON-RPC of any shape, in a session or not: a JSON-RPC error or a result, never a 5xx,
    and the endpoint still serves a client afterwards."""
    url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}api/think/mcp"
    auth = {"Authorization": f"token {TOKEN}"}

    def post(body: bytes, headers: dict[str, str]) -> tuple[int, bytes, dict[str, str]]:
        request = urllib.request.Request(url, data=body, method="POST", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as resp:
                return resp.status, resp.read(), dict(resp.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read(), dict(e.headers)

    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "fuzzer", "version": "1"},
        },
    }
    code, _, headers = await asyncio.to_thread(
        post, json.dumps(init).encode(), {**MCP_HEADERS, **auth}
    )
    assert code == 200
    sid = headers.get("mcp-session-id") or headers.get("Mcp-Session-Id")
    assert sid
    seen: list[int] = []

    @settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        mcp_body,
        st.sampled_from(["none", "session", "bad-session"]),
        st.sampled_from([None, "2025-06-18", "2026-07-28", "1999-01-01", "\u00e9"]),
        st.booleans(),
    )
    @example('{"jsonrpc": "2.0", "id": 7, "method": "ping"}', "session", "2025-06-18", True)
    @example('{"jsonrpc": "2.0", "id": 8, "method": "tools/list"}', "session", None, True)
    @example('{"jsonrpc": "2.0", "method": "notifications/initialized"}', "session", None, True)
    def check(body: str | bytes, session: str, version: str | None, typed: bool) -> None:
        data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
        headers = {**auth, **(MCP_HEADERS if typed else {"Content-Type": "text/plain"})}
        if session != "none":
            headers["Mcp-Session-Id"] = sid if session == "session" else "s-" + sid[:8]
        if version is not None:
            headers["MCP-Protocol-Version"] = version
        try:
            code, raw, _ = post(data, {k: v.encode().decode("latin-1") for k, v in headers.items()})
        except UnicodeEncodeError:
            return
        seen.append(code)
        assert code < 500, (body, headers, code, raw[:300])
        if code >= 400:
            error = json.loads(raw)
            assert error["error"]["message"], (body, raw)

    await asyncio.to_thread(check)
    assert {200, 202, 400} <= set(seen), sorted(set(seen))
    code, raw, _ = await asyncio.to_thread(
        post, json.dumps({**init, "id": 2}).encode(), {**MCP_HEADERS, **auth}
    )
    assert code == 200 and b"think-jupyter" in raw
