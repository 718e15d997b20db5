"""Attack class: reaching host sockets (tier 2 once connected to any Unix socket
on the host). No sandboxed process may connect to anything but its own loopback channel; the
channel, socketpairs and multiprocessing keep working."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import SandboxFactory

from think_kernel.sandbox import TIER3_WARNING, Tier

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.fixture
def host_sockets() -> Iterator[dict]:
    """Sockets a host service would offer: a world-writable Unix stream socket and datagram
    socket (like /dev/log) in a folder sandboxes can see, an abstract socket, a TCP port."""
    # /var/tmp: visible (read-only) on tier 1, unlike /tmp; connect() ignores read-only mounts.
    base = Path(tempfile.mkdtemp(prefix="think-sock-", dir="/var/tmp"))
    base.chmod(0o755)
    stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stream.bind(str(base / "service.sock"))
    stream.listen()
    dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    dgram.bind(str(base / "log.sock"))
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind(f"\0think-test-{os.getpid()}")
    abstract.listen()
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen()
    for p in ("service.sock", "log.sock"):
        (base / p).chmod(0o777)
    for s in (stream, dgram, abstract, tcp):
        s.setblocking(False)
    yield {"dir": base, "stream": stream, "dgram": dgram, "abstract": abstract, "tcp": tcp,
           "name": f"think-test-{os.getpid()}", "port": tcp.getsockname()[1]}  # fmt: skip
    for s in (stream, dgram, abstract, tcp):
        s.close()
    shutil.rmtree(base, ignore_errors=True)


def reached(socks: dict) -> list[str]:
    """Which of the host sockets got a connection or a datagram."""
    hits = []
    for name in ("stream", "abstract", "tcp"):
        try:
            conn, _ = socks[name].accept()
            conn.close()
            hits.append(name)
        except BlockingIOError:
            pass
    try:
        socks["dgram"].recv(100)
        hits.append("dgram")
    except BlockingIOError:
        pass
    return hits


async def test_no_connection_to_host_sockets(
    open_sandbox: SandboxFactory, tier: Tier, host_sockets: dict
) -> None:
    d = host_sockets["dir"]
    code = textwrap.dedent(f"""
        import socket
        tries = {{
            "stream": (socket.AF_UNIX, socket.SOCK_STREAM, {str(d / "service.sock")!r}),
            "abstract": (socket.AF_UNIX, socket.SOCK_STREAM, "\\0{host_sockets["name"]}"),
            "tcp": (socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", {host_sockets["port"]})),
            "dgram": (socket.AF_UNIX, socket.SOCK_DGRAM, {str(d / "log.sock")!r}),
        }}
        for name, (family, kind, addr) in tries.items():
            try:
                s = socket.socket(family, kind)
                s.settimeout(2)
                if kind == socket.SOCK_DGRAM:
                    s.sendto(b"hello", addr)
                else:
                    s.connect(addr)
                print("REACHED", name)
            except OSError as e:
                print("BLOCKED", name, e.errno)
        # A datagram socketpair could send to any path: only stream/seqpacket pairs exist.
        try:
            a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
            a.sendto(b"hello", {str(d / "log.sock")!r})
            print("REACHED pair")
        except OSError as e:
            print("BLOCKED pair", e.errno)
    """)
    async with open_sandbox("sock") as sb:
        res = await sb.run_python(code, fresh=True)
        bres = await sb.run_bash(
            f"echo hi > /dev/tcp/127.0.0.1/{host_sockets['port']} && echo REACHED bash"
        )
        await asyncio.sleep(0.1)  # a connection that did get through is queued by now
        hits = reached(host_sockets)
    assert res.ok, res
    if tier == Tier.RLIMITS:  # no isolation promised: only the loud warning
        assert TIER3_WARNING in res.warnings
        return
    assert "REACHED" not in res.stdout and res.stdout.count("BLOCKED") == 5, res.stdout
    assert "REACHED" not in bres.stdout
    assert hits == []


async def test_channel_socketpairs_and_multiprocessing_still_work(
    open_sandbox: SandboxFactory,
) -> None:
    code = textwrap.dedent("""
        import multiprocessing, socket
        import think
        a, b = socket.socketpair()
        a.sendall(b"ping")
        print("PAIR", b.recv(4).decode())
        with multiprocessing.Pool(2) as pool:
            print("POOL", sum(pool.map(abs, [-1, -2, -3])))
        q = multiprocessing.Queue()
        p = multiprocessing.Process(target=q.put, args=("queued",))
        p.start()
        print("QUEUE", q.get(timeout=10))
        p.join()
        print("LOOPBACK", think.call("echo", text="over the channel"))
    """)

    async def handler(tool: str, args: dict) -> str:
        return f"{tool}: {args['text']}"

    async with open_sandbox("legit") as sb:
        sb.loopback.tools = ("echo",)
        await sb.serve_loopback(handler)
        for fresh in (True, False):
            res = await sb.run_python(code, fresh=fresh)
            assert res.ok, res
            assert res.stdout == ("PAIR ping\nPOOL 6\nQUEUE queued\n"
                                  "LOOPBACK echo: over the channel\n"), res  # fmt: skip


async def test_what_tier2_cannot_hide_is_documented(
    open_sandbox: SandboxFactory, tier: Tier
) -> None:
    """Other processes' command lines: hidden by tier 1's pid namespace, visible on tiers 2
    and 3, and the README's security section says so."""
    probe = f"sleep 30.{os.getpid()}"
    host = await asyncio.create_subprocess_exec(*probe.split())
    try:
        async with open_sandbox("proc") as sb:
            # A fresh Python run: its own command line is the zygote's, not this code.
            res = await sb.run_python(textwrap.dedent(f"""
                import os
                seen = 0
                for p in os.listdir("/proc"):
                    try:
                        seen += {probe.replace(" ", chr(0)).encode()!r} in open(
                            f"/proc/{{p}}/cmdline", "rb").read()
                    except OSError:
                        pass
                print(seen)
            """), fresh=True)  # fmt: skip
    finally:
        host.kill()
        await host.wait()
    seen = int(res.stdout.strip())
    readme = README.read_text()
    section = readme.split("## Security", 1)[1].split("\n## ", 1)[0]
    if tier == Tier.BUBBLEWRAP:
        assert seen == 0, res
    else:
        assert seen >= 1, res
        assert "command lines" in section
