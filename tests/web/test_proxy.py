"""The egress proxy and guarded connections, driven by raw sockets and httpx."""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import AsyncIterator

import httpx
import pytest

from think_kernel.web.egress import Blocked, Egress, PolicySource
from think_kernel.web.netpolicy import parse_allow
from think_kernel.web.proxy import EgressProxy, split_authority

from .servers import Server


def _egress(allow: str, resolver=None) -> Egress:
    source = PolicySource(parse_allow(allow), addresses=lambda: [], ports=lambda: [])
    return Egress(source, resolver=resolver) if resolver else Egress(source)


@pytest.fixture
async def proxy(site: Server) -> AsyncIterator[EgressProxy]:
    p = EgressProxy(_egress(site.authority), max_response_bytes=100_000)
    await p.start()
    yield p
    await p.aclose()


async def _exchange(url: str, data: bytes) -> bytes:
    host, port = split_authority(url.split("//", 1)[1], 80)
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(data)
    await writer.drain()
    out = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return out


def test_split_authority() -> None:
    assert split_authority("example.org:8443", 443) == ("example.org", 8443)
    assert split_authority("[::1]:80", 443) == ("::1", 80)
    assert split_authority("example.org", 443) == ("example.org", 443)
    with pytest.raises(ValueError):
        split_authority(":80", 443)


async def test_resolves_once_and_connects_to_the_checked_address(site: Server) -> None:
    calls: list[str] = []

    async def rebinding(host: str, port: int) -> list:
        # First answer: a blocked address and the allowed one; any later answer: loopback
        # only. The connection must use the first answer's allowed address, resolved once.
        calls.append(host)
        first = ["127.0.0.9", "127.0.0.1"] if len(calls) == 1 else ["127.0.0.1"]
        return [ipaddress.ip_address(a) for a in first]

    egress = _egress(f"127.0.0.1:{site.port}", rebinding)
    reader, writer, ip = await egress.open("rebind.test", site.port)
    writer.close()
    assert str(ip) == "127.0.0.1" and calls == ["rebind.test"]
    with pytest.raises(Blocked, match="127.0.0.1 is a loopback address"):
        await egress.open("rebind.test", site.port + 1 if site.port < 65535 else 1)
    assert egress.blocked_count == 1 and egress.blocked[-1].host == "rebind.test"


async def test_keep_alive_cannot_smuggle_a_second_host(
    proxy: EgressProxy, site: Server, recorder: Server
) -> None:
    first = f"GET {site.origin}/ HTTP/1.1\r\nHost: {site.authority}\r\n\r\n"
    second = f"GET {recorder.origin}/api/contents HTTP/1.1\r\nHost: {recorder.authority}\r\n\r\n"
    raw = await _exchange(proxy.url, (first + second).encode())
    assert raw.startswith(b"HTTP/1.1 200") and b"Welcome to the test site" in raw
    assert b"HTTP/1.1 403" in raw and b"loopback" in raw
    assert recorder.hits == []
    assert proxy.egress.blocked[-1].port == recorder.port


async def test_connect_tunnels_only_to_allowed_addresses(
    proxy: EgressProxy, site: Server, recorder: Server
) -> None:
    refused = await _exchange(
        proxy.url, f"CONNECT {recorder.authority} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    )
    assert refused.startswith(b"HTTP/1.1 403") and recorder.hits == []
    host, port = split_authority(proxy.url.split("//", 1)[1], 80)
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"CONNECT {site.authority} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    writer.write(
        f"GET /table HTTP/1.1\r\nHost: {site.authority}\r\nConnection: close\r\n\r\n".encode()
    )
    body = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    assert b"<table id='prices'>" in body


@pytest.mark.parametrize(
    "request_line,status",
    [
        ("GET https://{site}/ HTTP/1.1", b"400"),  # TLS is tunnelled, never forwarded
        ("GET ftp://{site}/ HTTP/1.1", b"400"),
        ("GET / HTTP/1.1", b"400"),  # origin-form: not a proxy request
    ],
)
async def test_refuses_what_it_does_not_forward(
    proxy: EgressProxy, site: Server, request_line: str, status: bytes
) -> None:
    line = request_line.format(site=site.authority)
    raw = await _exchange(proxy.url, f"{line}\r\nHost: {site.authority}\r\n\r\n".encode())
    assert raw.split(b" ", 2)[1] == status


async def test_upgrades_must_use_connect(proxy: EgressProxy, site: Server) -> None:
    raw = await _exchange(
        proxy.url,
        f"GET {site.origin}/ HTTP/1.1\r\nHost: {site.authority}\r\nConnection: Upgrade\r\n"
        "Upgrade: websocket\r\n\r\n".encode(),
    )
    assert raw.startswith(b"HTTP/1.1 501")


async def test_httpx_through_the_proxy_and_the_size_cap(
    proxy: EgressProxy, site: Server, recorder: Server
) -> None:
    async with httpx.AsyncClient(proxy=proxy.url, trust_env=False) as client:
        ok = await client.get(f"{site.origin}/table")
        assert ok.status_code == 200 and "Cherries" in ok.text
        blocked = await client.get(f"{recorder.origin}/x")
        assert blocked.status_code == 403 and "THINK_BROWSER_ALLOW" in blocked.text
        with pytest.raises(httpx.ProxyError):
            await client.get(f"https://127.0.0.1:{recorder.port}/")
    assert recorder.hits == []
    big = Server({"*": lambda req: (200, {"Content-Type": "text/plain"}, b"x" * 300_000)})
    try:
        capped = EgressProxy(_egress(big.authority), max_response_bytes=100_000)
        await capped.start()
        async with httpx.AsyncClient(proxy=capped.url, trust_env=False) as client:
            with pytest.raises(httpx.HTTPError):
                await client.get(f"{big.origin}/big")
        await capped.aclose()
    finally:
        big.stop()
