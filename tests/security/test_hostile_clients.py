"""Attack class: hostile clients of the server. 3,000 kernel-link connections that
never said hello were held for 60 s (3,000 fds); a POST body nested 5,000 deep answered 500.

Now a link must authenticate within 3 s (closed otherwise, even when the peer never answers
the close), at most 64 may wait at once (429 past that), and JSON nested past 64 levels is a
400 or an error frame; a real kernel's link and ordinary requests keep working beside them.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import Any

import httpx
import pytest
from security_server import *  # noqa: F403  (a real server: jp_*, think, peers, until)
from tornado.httpclient import HTTPClientError
from tornado.websocket import websocket_connect

from tests.waiting import until
from think_kernel.kernel.link import KernelLink, kernel_identity


class Recorder:
    """A runtime stand-in: the link only needs ``add_sink`` and ``session_id``."""

    session_id = ""

    def add_sink(self, sink: Any) -> None:
        """Ignore events."""


@pytest.fixture
def link_url(base_url: str) -> str:
    """The kernel-link endpoint."""
    return base_url.replace("http", "ws", 1) + "api/think/link"


async def _silent(url: str) -> Any:
    """A connection that reads the challenge and then says nothing."""
    conn = await websocket_connect(url)
    assert json.loads(await conn.read_message())["type"] == "challenge"
    return conn


async def test_links_without_hello_are_capped_and_closed(
    think: Any, link_url: str, base_url: str
) -> None:
    links = think.services.links
    assert links.hello_timeout <= 3 and links.max_pending == 64
    start = time.monotonic()
    results = await asyncio.gather(*(_silent(link_url) for _ in range(200)), return_exceptions=True)
    held = [r for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, HTTPClientError)]
    assert len(held) == 64 and len(refused) == 136, [type(r) for r in results][:5]
    assert all(r.code == 429 for r in refused)
    assert len(links.pending) == 64
    # every held one is closed by the server within 5 s of its opening
    closes = await asyncio.gather(*(asyncio.wait_for(c.read_message(), 10) for c in held))
    assert all(m is None for m in closes)
    assert time.monotonic() - start < 5 + 2  # 200 handshakes on a busy machine: some slack
    assert {c.close_code or c.protocol.close_code for c in held} == {4408}
    await until(lambda: not links.pending, 5, "pending links forgotten")

    # a real kernel connects as usual once they are gone
    km = think.serverapp.kernel_manager
    kid = await km.start_kernel(kernel_name="python3")
    try:
        link = KernelLink(
            Recorder(), base_url, *kernel_identity(km.get_kernel(kid).connection_file)
        )
        link.start()
        await asyncio.wait_for(link.connected.wait(), 10)
        assert links.connected(kid)
        await link.close()
    finally:
        await km.shutdown_kernel(kid, now=True)


async def test_a_peer_that_never_answers_the_close_is_dropped(think: Any, base_url: str) -> None:
    """Raw TCP: upgrade, then nothing at all (not even the close handshake)."""
    host, port = base_url.split("//")[1].split("/")[0].split(":")
    path = "/" + base_url.split("//")[1].split("/", 1)[1] + "api/think/link"

    def hold() -> float:
        s = socket.create_connection((host, int(port)))
        s.sendall(
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        s.settimeout(15)
        t0 = time.monotonic()
        while s.recv(4096):  # the 101, the challenge, the close frame... then EOF
            pass
        s.close()
        return time.monotonic() - t0

    took = await asyncio.to_thread(hold)
    assert took < 5, took
    await until(lambda: not think.services.links.pending, 5, "pending link forgotten")


async def test_deep_json_is_a_4xx_and_the_api_still_works(
    think: Any, base_url: str, link_url: str
) -> None:
    deep = "[" * 5000 + "]" * 5000
    api = base_url + "api/think/"
    async with httpx.AsyncClient(timeout=20) as http:
        r = await http.post(api + "sessions", content=deep)
        assert r.status_code == 400 and "nests deeper" in r.json()["message"], r.text
        r = await http.post(api + "sessions", content='{"title": ' + "[" * 70 + "]" * 70 + "}")
        assert r.status_code == 400, r.text
        r = await http.post(api + "sessions", json={"title": "fine"})
        assert r.status_code == 201
        sid = r.json()["id"]
        r = await http.post(f"{api}sessions/{sid}/messages", content='{"content": ' + deep + "}")
        assert r.status_code == 400, r.text
    ws_url = base_url.replace("http", "ws", 1) + f"api/think/sessions/{sid}/ws"
    tab = await websocket_connect(ws_url)
    for _ in range(2):  # sync, history
        await tab.read_message()
    await tab.write_message(deep)
    assert json.loads(await tab.read_message())["type"] == "error"
    await tab.write_message(json.dumps({"type": "ping"}))
    assert json.loads(await tab.read_message())["type"] == "pong"
    tab.close()
    link = await _silent(link_url)
    await link.write_message("[" * 4000 + "]" * 4000)  # too big before authentication
    assert await link.read_message() is None
    assert (link.close_code or link.protocol.close_code) == 1009
