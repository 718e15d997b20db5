"""Where the browser and the search tools may connect: the pure core of "no way home".

They run in the kernel process, outside the sandbox, so a page (or a search endpoint's
redirect) must not make them reach the user's own machine or network. A decision is made on
the address a name resolved to, never on the name alone:

    policy = NetPolicy(parse_allow("docs.internal, 10.1.0.0/16, 127.0.0.1:8000"),
                       own_addresses=["192.168.1.20"], protected_ports={8888})
    policy.check("localhost", 8888, ip_address("127.0.0.1"))
    # Verdict(allowed=False, reason='127.0.0.1 is a loopback address')

Blocked: loopback, link-local, private, shared (CGNAT), unspecified, multicast, reserved and
documentation ranges, every address of this machine, and the same ranges hidden inside IPv6
forms (``::ffff:127.0.0.1``, ``::127.0.0.1``, NAT64 ``64:ff9b::7f00:1``, 6to4 ``2002:7f00:1::``).
An allow entry (``THINK_BROWSER_ALLOW``) lifts the block for a host name, a ``host:port`` or a
CIDR. A running Jupyter server's port on a local address stays blocked unless an entry names
that very port: allowing ``127.0.0.0/8`` for a dev server must not open the Jupyter API.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: The name the browser sees a session's own live apps at (``ownapps.py``): its context
#: answers it from the kernel, so no connection may ever go to it, whatever it resolves to.
APP_HOST = "think-app.localhost"
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_V4_COMPAT = ipaddress.ip_network("::/96")


@dataclass(frozen=True)
class AllowEntry:
    """One allowlist entry: a host name or a network, optionally limited to one port."""

    host: str | None = None
    network: IPNetwork | None = None
    port: int | None = None

    def __str__(self) -> str:
        net = self.network
        if self.host is not None:
            what = self.host
        elif net is not None and net.num_addresses == 1:
            what = str(net.network_address)  # 127.0.0.1, not 127.0.0.1/32
        else:
            what = str(net)
        if self.port is None:
            return what
        return f"[{what}]:{self.port}" if ":" in what else f"{what}:{self.port}"


@dataclass(frozen=True)
class Verdict:
    """The answer for one (host, port, address): allowed, or blocked with a reason."""

    allowed: bool
    reason: str = ""
    entry: AllowEntry | None = None


def normalise_host(host: str) -> str:
    """Lower-case, without IPv6 brackets or the trailing dot of a fully qualified name."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host.rstrip(".")


def is_app_host(host: str) -> bool:
    """Whether ``host`` is :data:`APP_HOST`."""
    return normalise_host(host) == APP_HOST


def _port(text: str, entry: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"bad port in allow entry {entry!r}")
    return int(text)


def parse_allow_entry(raw: str) -> AllowEntry:
    """Parse ``host``, ``host:port``, ``[v6]:port``, an IP or a CIDR; ValueError if malformed."""
    text = raw.strip()
    if not text:
        raise ValueError("empty allow entry")
    port: int | None = None
    if text.startswith("["):  # [::1] or [::1]:8080
        inside, sep, rest = text[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(f"bad allow entry {raw!r}")
        text, port = inside, (_port(rest[1:], raw) if rest else None)
    elif text.count(":") == 1:  # host:port or v4:port or v4/cidr:port is not a thing
        text, _, p = text.partition(":")
        port = _port(p, raw)
    try:
        return AllowEntry(network=ipaddress.ip_network(text, strict=False), port=port)
    except ValueError:
        pass
    host = normalise_host(text)
    if not host or "/" in host or any(c.isspace() for c in host):
        raise ValueError(f"bad allow entry {raw!r}: not a host name, IP or CIDR")
    return AllowEntry(host=host, port=port)


def parse_allow(value: str | Iterable[str]) -> list[AllowEntry]:
    """Parse a comma-separated string (``THINK_BROWSER_ALLOW``) or a list of entries."""
    items = value.split(",") if isinstance(value, str) else list(value)
    return [parse_allow_entry(x) for x in items if x.strip()]


def embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 form carries (mapped, compatible, NAT64, 6to4), if any."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64 or (ip in _V4_COMPAT and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip.sixtofour


def _range_reason(ip: IPAddress) -> str:
    if ip.is_unspecified:
        return "an unspecified address (this machine)"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_private:
        return "a private address"
    if ip.is_reserved or not ip.is_global:
        return "a reserved, shared or non-public address"
    return ""


def blocked_reason(ip: IPAddress, own: frozenset[IPAddress] = frozenset()) -> str:
    """Why a connection to ``ip`` is refused by default ("" if it is a public address)."""
    v4 = embedded_ipv4(ip)
    if isinstance(ip, ipaddress.IPv6Address) and (ip.ipv4_mapped is not None or ip in _NAT64):
        # Only a wrapper: the IPv4 address inside decides (NAT64 networks reach the whole
        # IPv4 internet through 64:ff9b::/96, which the ipaddress module calls reserved).
        assert v4 is not None
        inner = blocked_reason(v4, own)
        return f"{ip} wraps {v4}, {inner}" if inner else ""
    reason = _range_reason(ip)
    if reason:
        return f"{ip} is {reason}"
    if ip in own:
        return f"{ip} is an address of this machine"
    if v4 is not None:
        inner = blocked_reason(v4, own)
        if inner:
            return f"{ip} embeds {v4}, {inner}"
    return ""


class NetPolicy:
    """Decides whether a (host, port) resolved to ``ip`` may be connected to."""

    def __init__(
        self,
        allow: Iterable[AllowEntry] = (),
        own_addresses: Iterable[str | IPAddress] = (),
        protected_ports: Iterable[int] = (),
    ) -> None:
        self.allow = list(allow)
        self.own = frozenset(ipaddress.ip_address(a) for a in own_addresses)
        self.protected_ports = frozenset(protected_ports)

    def _matching(self, host: str, port: int, ip: IPAddress) -> AllowEntry | None:
        host = normalise_host(host)
        candidates = {ip}
        v4 = embedded_ipv4(ip)
        if v4 is not None:
            candidates.add(v4)
        for entry in self.allow:
            if entry.port is not None and entry.port != port:
                continue
            if entry.host is not None and entry.host == host:
                return entry
            if entry.network is not None and any(
                c.version == entry.network.version and c in entry.network for c in candidates
            ):
                return entry
        return None

    def check(self, host: str, port: int, ip: IPAddress) -> Verdict:
        """Allowed if ``ip`` is public, or an allow entry covers it (see module docstring)."""
        reason = blocked_reason(ip, self.own)
        if not reason:
            return Verdict(True)
        entry = self._matching(host, port, ip)
        local = ip in self.own or "loopback" in reason or "unspecified" in reason
        if entry is not None and port in self.protected_ports and local and entry.port != port:
            # A broad entry (a host or a CIDR without a port) never opens a Jupyter server.
            return Verdict(
                False,
                f"{reason}, and port {port} is a Jupyter server; only an allow entry naming "
                f"port {port} explicitly lifts this",
            )
        if entry is not None:
            return Verdict(True, reason, entry)
        return Verdict(False, reason)

    def hint(self, host: str, port: int) -> str:
        """The THINK_BROWSER_ALLOW entry that would allow ``host:port``."""
        host = normalise_host(host)
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
