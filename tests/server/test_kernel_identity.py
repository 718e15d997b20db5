"""A tab's kernel messages reach the kernel with the person the server authenticated.

Real server, real python3 kernel, its real kernel WebSocket in both of jupyter_server's
protocols; the client claims to be someone else, and the kernel reads the header it got.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from jupyter_server.services.kernels.connection.base import (
    deserialize_msg_from_ws_v1,
    serialize_msg_to_ws_v1,
)

pytestmark = pytest.mark.timeout(120)

V1 = "v1.kernel.websocket.jupyter.org"
CODE = (
    'h = get_ipython().kernel.get_parent("shell")["header"]\n'
    'print(h["username"], "|", h["display_name"])'
)


def _request(code: str) -> dict[str, Any]:
    header = {
        "msg_id": uuid.uuid4().hex,
        "msg_type": "execute_request",
        "username": "root",  # what a client may claim: the server replaces it
        "display_name": "Mallory",
        "session": uuid.uuid4().hex,
        "date": "2026-01-01T00:00:00Z",
        "version": "5.3",
    }
    content = {"code": code, "silent": False, "store_history": False}
    return {"header": header, "parent_header": {}, "metadata": {}, "content": content}


async def _printed(conn: Any, msg_id: str, v1: bool) -> str:
    """The text the request printed (stream messages parented to it) until the kernel idles."""
    text = ""
    while True:
        raw = await conn.read_message()
        assert raw is not None, "the kernel WebSocket closed"
        if v1:
            _, parts = deserialize_msg_from_ws_v1(raw)
            msg = {
                "msg_type": json.loads(parts[0])["msg_type"],
                "parent_header": json.loads(parts[1]),
                "content": json.loads(parts[3]),
            }
        else:
            msg = json.loads(raw)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            text += msg["content"]["text"]
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return text


@pytest.mark.parametrize("protocol", ["v1", "legacy"])
async def test_kernel_reads_the_authenticated_person(
    jp_fetch, jp_ws_fetch, jp_http_port, think, protocol
):
    # A tab keeps the login cookie of its first request (the identity lives in it).
    first = await jp_fetch("api", "me")
    me = json.loads(first.body)["identity"]
    cookie = {"Cookie": "; ".join(c.split(";")[0] for c in first.headers.get_list("Set-Cookie"))}
    # The cookie's name is of the host it was set for (jp_fetch asks 127.0.0.1).
    cookie["Host"] = f"127.0.0.1:{jp_http_port}"
    assert me["display_name"].startswith("Anonymous ")  # token login: jupyter_server's name
    r = await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": "python3"}))
    kid = json.loads(r.body)["id"]
    try:
        v1 = protocol == "v1"
        kw: dict[str, Any] = {"subprotocols": [V1]} if v1 else {}
        conn = await jp_ws_fetch("api", "kernels", kid, "channels", headers=cookie, **kw)
        msg = _request(CODE)
        if v1:
            parts = [json.dumps(msg[k]).encode() for k in ("header", "parent_header")]
            parts += [json.dumps(msg[k]).encode() for k in ("metadata", "content")]
            await conn.write_message(serialize_msg_to_ws_v1(parts, "shell"), binary=True)
        else:
            await conn.write_message(json.dumps({**msg, "channel": "shell", "buffers": []}))
        printed = await _printed(conn, msg["header"]["msg_id"], v1)
        assert printed.strip() == f"{me['username']} | {me['display_name']}"
        conn.close()
    finally:
        await jp_fetch("api", "kernels", kid, method="DELETE")
