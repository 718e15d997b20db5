"""The address policy (pure): what the browser and search tools may connect to."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from think_kernel.web.netpolicy import (
    AllowEntry,
    NetPolicy,
    blocked_reason,
    embedded_ipv4,
    parse_allow,
    parse_allow_entry,
)

ip = ipaddress.ip_address

BLOCKED = [
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("::1", "loopback"),
    ("0.0.0.0", "unspecified"),
    ("::", "unspecified"),
    ("10.1.2.3", "private"),
    ("172.16.0.1", "private"),
    ("192.168.1.1", "private"),
    ("169.254.169.254", "link-local"),  # cloud metadata
    ("fe80::1", "link-local"),
    ("fc00::1", "private"),
    ("fd12:3456::1", "private"),
    ("100.64.0.1", "non-public"),  # carrier-grade NAT
    ("224.0.0.1", "multicast"),
    ("ff02::1", "multicast"),
    ("255.255.255.255", ""),
    ("198.18.0.1", ""),
    ("192.0.2.1", ""),  # documentation
    ("240.0.0.1", ""),
    # IPv6 forms that carry a blocked IPv4 address
    ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:7f00:1", "loopback"),
    ("::ffff:10.0.0.1", "private"),
    ("::127.0.0.1", ""),
    ("64:ff9b::7f00:1", "loopback"),  # NAT64
    ("64:ff9b::a9fe:a9fe", "link-local"),
    ("2002:7f00:1::", "loopback"),  # 6to4
    ("2002:c0a8:101::1", "private"),
]

PUBLIC = ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700::1111", "::ffff:8.8.8.8",
          "64:ff9b::808:808"]  # fmt: skip


@pytest.mark.parametrize("addr,word", BLOCKED)
def test_blocked_by_default(addr: str, word: str) -> None:
    reason = blocked_reason(ip(addr))
    assert reason, f"{addr} must be blocked"
    assert word in reason


@pytest.mark.parametrize("addr", PUBLIC)
def test_public_addresses_pass(addr: str) -> None:
    assert blocked_reason(ip(addr)) == ""
    assert NetPolicy().check("example.org", 443, ip(addr)).allowed


def test_own_addresses_are_blocked_even_when_public() -> None:
    policy = NetPolicy(own_addresses=["203.0.114.7"])
    v = policy.check("myhost", 8888, ip("203.0.114.7"))
    assert not v.allowed and "this machine" in v.reason
    assert policy.check("other", 80, ip("203.0.114.8")).allowed


@given(st.integers(min_value=0x7F000000, max_value=0x7FFFFFFF))
def test_every_loopback_form_is_blocked(n: int) -> None:
    v4 = ipaddress.IPv4Address(n)
    forms = [
        v4,
        ipaddress.IPv6Address(f"::ffff:{v4}"),
        ipaddress.IPv6Address(int(ipaddress.IPv6Address("64:ff9b::")) | n),
        ipaddress.IPv6Address((0x2002 << 112) | (n << 80)),
    ]
    for form in forms:
        assert embedded_ipv4(form) in (None, v4)
        assert not NetPolicy().check("x", 80, form).allowed, form


def test_parse_allow_forms() -> None:
    entries = parse_allow(" docs.internal , LOCALHOST.:8000, 10.0.0.0/8, [::1]:9000, 127.0.0.1 ,")
    assert entries == [
        AllowEntry(host="docs.internal"),
        AllowEntry(host="localhost", port=8000),
        AllowEntry(network=ipaddress.ip_network("10.0.0.0/8")),
        AllowEntry(network=ipaddress.ip_network("::1/128"), port=9000),
        AllowEntry(network=ipaddress.ip_network("127.0.0.1/32")),
    ]
    assert [str(e) for e in entries] == [
        "docs.internal",
        "localhost:8000",
        "10.0.0.0/8",
        "[::1]:9000",
        "127.0.0.1",
    ]
    assert parse_allow([]) == [] and parse_allow("") == []


@pytest.mark.parametrize("bad", ["host:", "host:99999", "host:x", "[::1", "a b", "10.0.0.0/33x"])
def test_parse_allow_rejects_malformed(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_allow_entry(bad)


def test_allow_entries_match_host_port_and_networks() -> None:
    policy = NetPolicy(parse_allow("localhost:8000, 10.1.0.0/16, intranet"))
    loop = ip("127.0.0.1")
    assert policy.check("localhost", 8000, loop).allowed
    assert policy.check("LOCALHOST.", 8000, loop).allowed
    assert not policy.check("localhost", 8001, loop).allowed  # another port
    assert not policy.check("127.0.0.1", 8000, loop).allowed  # the name was allowed, not the IP
    assert policy.check("anything", 443, ip("10.1.2.3")).allowed
    assert policy.check("anything", 443, ip("::ffff:10.1.2.3")).allowed  # same address, mapped
    assert not policy.check("anything", 443, ip("10.2.0.1")).allowed
    assert policy.check("intranet", 80, ip("192.168.0.5")).allowed
    assert "THINK_BROWSER_ALLOW" not in policy.hint("x", 1) and policy.hint("::1", 80) == "[::1]:80"


def test_a_broad_entry_never_opens_a_jupyter_server_port() -> None:
    policy = NetPolicy(parse_allow("127.0.0.0/8, localhost"), protected_ports={8888})
    loop = ip("127.0.0.1")
    assert policy.check("127.0.0.1", 3000, loop).allowed  # the dev server the user meant
    v = policy.check("127.0.0.1", 8888, loop)
    assert not v.allowed and "Jupyter" in v.reason
    assert not policy.check("localhost", 8888, loop).allowed
    # naming the port itself is explicit
    assert (
        NetPolicy(parse_allow("127.0.0.1:8888"), protected_ports={8888})
        .check("127.0.0.1", 8888, loop)
        .allowed
    )
    # a public host on port 8888 is no Jupyter server of ours
    assert policy.check("example.org", 8888, ip("93.184.216.34")).allowed
