"""Outbound connections of the web tools: resolve a name once, check the address, connect to it.

    egress = Egress(PolicySource(allow))
    reader, writer, ip = await egress.open("example.org", 443)   # or raises Blocked

Checking a name and then letting something else resolve it again is open to DNS rebinding
(the second answer can be 127.0.0.1). Here the address that passed :class:`NetPolicy` is the
very one connected to. :class:`PolicySource` refreshes what the policy needs from the machine
(its interface addresses, the ports of running Jupyter servers) at most every few seconds.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..waits import wait_for
from .netpolicy import APP_HOST, AllowEntry, IPAddress, NetPolicy, is_app_host

Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]


class Blocked(Exception):
    """A connection the policy refused; the message says why and what would allow it."""

    def __init__(self, host: str, port: int, reason: str, hint: str) -> None:
        allow = f"; to allow it, add {hint} to THINK_BROWSER_ALLOW" if hint else ""
        super().__init__(
            f"blocked {host}:{port}: {reason}. The browser and search tools may not reach this "
            f"machine or its network{allow}"
        )
        self.host, self.port, self.reason, self.hint = host, port, reason, hint


@dataclass(frozen=True)
class BlockedAttempt:
    """One refused connection, kept so a tool can tell the model what its page tried."""

    at: float
    host: str
    port: int
    reason: str
    what: str = ""  # the request ("GET http://...", "CONNECT host:443"), when known


async def system_resolve(host: str, port: int) -> list[IPAddress]:
    """All addresses of ``host`` from the system resolver, in its order, without duplicates."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    out: list[IPAddress] = []
    for *_, sockaddr in infos:
        ip = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if ip not in out:
            out.append(ip)
    return out


def machine_addresses() -> set[str]:
    """Every address of this machine's interfaces (a server may listen on any of them)."""
    import psutil

    found = {"0.0.0.0", "::"}
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            if a.family in (socket.AF_INET, socket.AF_INET6):
                found.add(a.address.split("%", 1)[0])
    return found


def jupyter_server_ports(runtime_dir: str | None = None) -> set[int]:
    """Ports of the Jupyter servers whose runtime files are on this machine."""
    if runtime_dir is None:
        from jupyter_core.paths import jupyter_runtime_dir

        runtime_dir = jupyter_runtime_dir()
    ports: set[int] = set()
    folder = Path(runtime_dir)
    for pattern in ("jpserver-*.json", "nbserver-*.json"):
        for f in folder.glob(pattern):
            try:
                port = json.loads(f.read_text()).get("port")
            except (OSError, ValueError):
                continue
            if isinstance(port, int):
                ports.add(port)
    env_url = os.environ.get("JUPYTER_SERVER_URL", "")
    if env_url:
        from urllib.parse import urlsplit

        try:
            port = urlsplit(env_url).port
        except ValueError:
            port = None
        if port:
            ports.add(port)
    return ports


class PolicySource:
    """Builds the current :class:`NetPolicy`, re-reading the machine at most every ``ttl`` s."""

    def __init__(
        self,
        allow: Iterable[AllowEntry],
        ttl: float = 5.0,
        addresses: Callable[[], Iterable[str]] = machine_addresses,
        ports: Callable[[], Iterable[int]] = jupyter_server_ports,
    ) -> None:
        self.allow = list(allow)
        self.ttl = ttl
        self._addresses = addresses
        self._ports = ports
        self._policy: NetPolicy | None = None
        self._at = 0.0

    def __call__(self) -> NetPolicy:
        now = time.monotonic()
        if self._policy is None or now - self._at > self.ttl:
            self._policy = NetPolicy(self.allow, self._addresses(), self._ports())
            self._at = now
        return self._policy


class Egress:
    """Guarded outbound TCP: every connection goes to an address the policy accepted."""

    def __init__(
        self,
        policy: Callable[[], NetPolicy],
        resolver: Resolver = system_resolve,
        connect_timeout: float = 15.0,
        keep_blocked: int = 200,
    ) -> None:
        self.policy = policy
        self.resolver = resolver
        self.connect_timeout = connect_timeout
        self.blocked: deque[BlockedAttempt] = deque(maxlen=keep_blocked)
        self.blocked_count = 0

    def blocked_since(self, mark: int) -> list[BlockedAttempt]:
        """Attempts refused after ``mark`` (a former ``blocked_count``), oldest first."""
        new = self.blocked_count - mark
        return list(self.blocked)[-new:] if new > 0 else []

    def note_refusal(self, host: str, port: int, reason: str, what: str = "") -> None:
        """Keep a refusal made elsewhere (a session's app routes) with the egress's own."""
        self.blocked.append(BlockedAttempt(time.time(), host, port, reason, what))
        self.blocked_count += 1

    def _refuse(self, host: str, port: int, reason: str, policy: NetPolicy, what: str) -> Blocked:
        self.note_refusal(host, port, reason, what)
        return Blocked(host, port, reason, policy.hint(host, port))

    async def allowed_addresses(self, host: str, port: int, what: str = "") -> list[IPAddress]:
        """Resolve once; return the addresses that may be used, or raise Blocked."""
        policy = self.policy()
        if is_app_host(host):  # only a session's browser context answers it, never a socket
            reason = f"{APP_HOST} is served to a session's browser by the kernel only"
            self.note_refusal(host, port, reason, what)
            raise Blocked(host, port, reason, "")
        try:
            ips = await wait_for(self.resolver(host, port), self.connect_timeout)
        except (OSError, TimeoutError, UnicodeError) as e:
            raise OSError(f"cannot resolve {host}: {e}") from None
        if not ips:
            raise OSError(f"cannot resolve {host}: no address")
        verdicts = [(ip, policy.check(host, port, ip)) for ip in ips]
        good = [ip for ip, v in verdicts if v.allowed]
        if not good:
            raise self._refuse(host, port, verdicts[0][1].reason, policy, what)
        return good

    async def open(
        self, host: str, port: int, what: str = ""
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, IPAddress]:
        """Connect to the first accepting checked address of ``host``; raise Blocked/OSError.

        ``what`` (the request line) is kept with a refusal, for the tools and the tests."""
        last: BaseException | None = None
        for ip in await self.allowed_addresses(host, port, what):
            try:
                reader, writer = await wait_for(
                    asyncio.open_connection(str(ip), port, limit=2**16), self.connect_timeout
                )
            except (OSError, TimeoutError) as e:
                last = e
                continue
            return reader, writer, ip
        raise OSError(f"cannot connect to {host}:{port}: {last}")
