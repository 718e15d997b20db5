"""Each isolation property, on every tier this machine runs (real processes, nothing mocked)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import stat
import textwrap
from pathlib import Path

import pytest
from sandbox_helpers import SECRETS, leftovers, make_config

from tests.waiting import until
from think_kernel.sandbox import TIER3_WARNING, Sandbox, Tier

pytestmark = pytest.mark.asyncio(loop_scope="session")


class NoLeftovers:
    """A wait_for predicate whose repr shows what is left (for the failure message)."""

    def __init__(self, sb: Sandbox) -> None:
        self.sb = sb
        self.last: list = []

    def __call__(self) -> bool:
        self.last = leftovers(self.sb)
        return not self.last

    def __repr__(self) -> str:
        return f"leftover processes {self.last}"


def tier3_only_warns(sb: Sandbox, res) -> bool:  # type: ignore[no-untyped-def]
    """Tier 3 promises no network/file isolation, only a loud warning in every result."""
    if sb.tier == Tier.RLIMITS:
        assert TIER3_WARNING in res.warnings
        return True
    assert TIER3_WARNING not in res.warnings
    return False


async def test_no_network_to_a_port_the_test_opens(sandbox: Sandbox) -> None:
    hits: list[str] = []

    async def on_conn(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        hits.append("tcp")
        w.close()

    server = await asyncio.start_server(on_conn, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.setblocking(False)
    uport = udp.getsockname()[1]
    code = textwrap.dedent(f"""
        import socket
        for kind, addr in ((socket.SOCK_STREAM, ("127.0.0.1", {port})),
                           (socket.SOCK_DGRAM, ("127.0.0.1", {uport}))):
            try:
                s = socket.socket(socket.AF_INET, kind)
                s.settimeout(2)
                s.connect(addr)
                s.send(b"hello")
                print("CONNECTED", kind)
            except OSError as e:
                print("BLOCKED", kind, e)
    """)
    try:
        res = await sandbox.run_python(code, fresh=True)
        bres = await sandbox.run_bash(f"echo hi > /dev/tcp/127.0.0.1/{port} && echo CONNECTED")
        await asyncio.sleep(0.05)  # let a connection that did get through be accepted
        try:
            got_udp = udp.recv(100)
        except BlockingIOError:
            got_udp = b""
    finally:
        server.close()
        udp.close()
    if tier3_only_warns(sandbox, res):
        return
    assert res.ok, res.stderr
    assert "CONNECTED" not in res.stdout and res.stdout.count("BLOCKED") == 2
    assert "CONNECTED" not in bres.stdout and not bres.ok
    assert hits == [] and got_udp == b""


async def test_no_network_to_outside_and_no_dns(sandbox: Sandbox) -> None:
    code = textwrap.dedent("""
        import socket
        try:
            socket.getaddrinfo("example.com", 443)
            print("DNS OK")
        except OSError as e:
            print("DNS BLOCKED", type(e).__name__)
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.settimeout(3)
            s.connect(("1.1.1.1", 443))
            print("OUTSIDE OK")
        except OSError as e:
            print("OUTSIDE BLOCKED", e.errno)
    """)
    res = await sandbox.run_python(code, fresh=True)
    if tier3_only_warns(sandbox, res):
        return
    assert "DNS BLOCKED" in res.stdout and "OUTSIDE BLOCKED" in res.stdout, res
    # The sandbox's own refusal, not a slow timeout: no route (tier 1) or no AF_INET (tier 2).
    assert res.duration_ms < 2500


async def test_writes_only_in_workspace_and_scratch(
    sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    outside.chmod(0o777)  # so only the sandbox, not file permissions, can stop the write
    targets = [outside / "x.txt", Path("/etc/think-test.txt"), Path("/usr/think-test.txt")]
    code = textwrap.dedent(f"""
        import os, tempfile
        for p in {[str(t) for t in targets]!r}:
            try:
                open(p, "w").write("escaped")
                print("WROTE", p)
            except OSError as e:
                print("DENIED", p, e.errno)
        open("in_workspace.txt", "w").write("ok")
        with tempfile.NamedTemporaryFile(dir=os.environ["TMPDIR"], delete=False) as f:
            f.write(b"scratch")
        print("SCRATCH", f.name)
    """)
    res = await sandbox.run_python(code, fresh=True)
    assert res.ok, res
    assert (sandbox.workspace / "in_workspace.txt").read_text() == "ok"
    assert str(sandbox.scratch) in res.stdout
    for t in targets[1:]:  # root-owned system dirs: refused on every tier
        assert not t.exists()
    if tier3_only_warns(sandbox, res):
        return
    assert "WROTE" not in res.stdout
    assert not (outside / "x.txt").exists()


async def test_cannot_read_jupyter_secrets_or_env(
    sandbox: Sandbox, jupyter_private: dict[str, Path]
) -> None:
    assert all(os.environ.get(k) == v for k, v in SECRETS.items())  # the kernel has them
    paths = [jupyter_private["conn"], jupyter_private["runtime"] / "jpserver-1.json",
             jupyter_private["config"] / "jupyter_server_config.json",
             Path(f"/proc/{os.getpid()}/environ")]  # fmt: skip
    if sandbox.tier != Tier.RLIMITS:
        # Tier 3 only has file permissions: world-readable files in $HOME stay readable.
        paths.append(Path.home() / ".bashrc")
    code = textwrap.dedent(f"""
        import os
        for p in {[str(p) for p in paths]!r}:
            try:
                print("READ", p, open(p, "rb").read()[:40])
            except OSError as e:
                print("DENIED", p, e.errno)
        for d in {[str(jupyter_private["runtime"]), str(Path.home())]!r}:
            try:
                print("LIST", d, os.listdir(d))
            except OSError as e:
                print("DENIED", d, e.errno)
        print("ENV", sorted(os.environ))
        print("ENVVALUES", " ".join(os.environ.values()))
    """)
    for res in (await sandbox.run_python(code, fresh=True), await sandbox.run_python(code)):
        assert res.ok, res
        lines = res.stdout.splitlines()
        assert not [x for x in lines if x.startswith("READ ")], res.stdout
        runtime_listing = [x for x in lines if x.startswith(f"LIST {jupyter_private['runtime']}")]
        assert all(x.endswith("[]") for x in runtime_listing), lines  # tier 1: empty tmpfs
        home_listing = " ".join(x for x in lines if x.startswith(f"LIST {Path.home()}"))
        assert ".bashrc" not in home_listing and ".local" not in home_listing, home_listing
        for name, value in SECRETS.items():
            assert name not in res.stdout and value not in res.stdout
    bres = await sandbox.run_bash("env; cat /proc/1/environ; cat /proc/$PPID/environ")
    for name, value in SECRETS.items():
        assert name not in bres.stdout and value not in bres.stdout


async def test_cannot_signal_or_ptrace_the_kernel(sandbox: Sandbox) -> None:
    me = os.getpid()
    code = textwrap.dedent(f"""
        import ctypes, os, signal
        try:
            os.kill({me}, signal.SIGTERM)
            print("SIGNALLED")
        except OSError as e:
            print("KILL DENIED", e.errno)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.ptrace.restype = ctypes.c_long
        r = libc.ptrace(16, {me}, None, None)  # PTRACE_ATTACH
        print("PTRACE", r, ctypes.get_errno())
    """)
    res = await sandbox.run_python(code, fresh=True)
    assert res.ok, res
    assert "SIGNALLED" not in res.stdout and "PTRACE -1" in res.stdout
    status = await asyncio.to_thread(Path(f"/proc/{me}/status").read_text)
    assert "TracerPid:\t0" in status


async def test_fork_bomb_is_contained(sandbox: Sandbox) -> None:
    limit = sandbox.config.max_processes
    code = textwrap.dedent("""
        import os, time
        n = 0
        try:
            while n < 10000:
                if os.fork() == 0:
                    time.sleep(60)
                    os._exit(0)
                n += 1
        except OSError as e:
            print("FORK FAILED AFTER", n, e.errno)
    """)
    res = await sandbox.run_python(code, fresh=True, timeout=20)
    assert "FORK FAILED AFTER" in res.stdout, res
    assert int(res.stdout.split("AFTER")[1].split()[0]) < limit
    bomb = await sandbox.run_bash(":(){ :|:& };:; sleep 1; echo survived", timeout=3)
    assert not bomb.ok or "survived" in bomb.stdout
    assert await until(lambda: not leftovers(sandbox), 5, every=0.02)
    host = await asyncio.create_subprocess_exec("/bin/true")  # the host can still fork
    assert await host.wait() == 0
    after = await sandbox.run_python("print('alive')", fresh=True)
    assert after.stdout == "alive\n"


async def test_memory_bomb_is_a_memory_error(sandbox: Sandbox) -> None:
    for fresh in (True, False):
        res = await sandbox.run_python("b = bytearray(64 * 1024**3)", fresh=fresh)
        assert res.error_category == "memory", res
    res = await sandbox.run_python("x = [0] * (10**10)")
    assert res.error_category == "memory"
    ok = await sandbox.run_python("print(len(bytearray(10**7)))")
    assert ok.ok and ok.stdout == "10000000\n"


async def test_infinite_loop_times_out_at_the_limit(sandbox: Sandbox) -> None:
    for run in (
        lambda: sandbox.run_python("while True: pass", timeout=1),
        lambda: sandbox.run_python("while True: pass", timeout=1, fresh=True),
        lambda: sandbox.run_bash("while :; do :; done", timeout=1),
    ):
        res = await run()
        assert res.error_category == "timeout", res
        assert 950 <= res.duration_ms < 2500, res.duration_ms
    assert await until(lambda: not leftovers(sandbox), 5, every=0.02)


async def test_cpu_limit_is_a_timeout(sandbox: Sandbox) -> None:
    config = make_config(sandbox.tier, cpu_seconds=1, preload_modules=[])
    sb = await Sandbox.create(sandbox.workspace, "cpu-limit", config)
    try:
        res = await sb.run_python("while True: pass", fresh=True, timeout=10)
        assert res.error_category == "timeout" and "CPU" in res.error, res
        assert res.duration_ms < 5000
    finally:
        await sb.close()


async def test_output_flood_is_truncated_with_a_note(sandbox: Sandbox) -> None:
    seen = []
    res = await sandbox.run_python(
        "import sys\nfor i in range(20000): sys.stdout.write('x' * 999 + '\\n')",
        fresh=True,
        on_output=lambda s, t: seen.append(len(t)),
    )
    limit = sandbox.config.max_output_bytes
    assert res.ok and res.truncated
    assert "output truncated" in res.stdout
    assert len(res.stdout.encode()) < limit + 500
    assert sum(seen) < limit + 500
    bres = await sandbox.run_bash("yes | head -c 5000000")
    assert bres.truncated and len(bres.stdout) < limit + 500


async def test_no_zombie_or_orphan_after_a_cell(sandbox: Sandbox) -> None:
    code = textwrap.dedent("""
        import os, subprocess
        subprocess.Popen(["sleep", "300"])
        if os.fork() == 0:          # a would-be daemon: double fork, try to leave the group
            try:
                os.setsid()
            except OSError:
                pass
            if os.fork() == 0:
                os.execvp("sleep", ["sleep", "301"])
            os._exit(0)
        os.spawnlp(os.P_NOWAIT, "true", "true")   # exits at once: a zombie unless reaped
        print("started")
    """)
    for fresh in (False, True):
        res = await sandbox.run_python(code, fresh=fresh)
        assert res.ok and "started" in res.stdout, res
        await until(NoLeftovers(sandbox), 5, every=0.02)
    res = await sandbox.run_bash("sleep 300 & (setsid sleep 302 &) ; echo started")
    assert "started" in res.stdout
    await until(NoLeftovers(sandbox), 5, every=0.02)


async def test_scratch_dir_is_private(sandbox: Sandbox) -> None:
    st = os.stat(sandbox.scratch)
    assert not st.st_mode & stat.S_IWOTH
    assert sandbox.scratch.exists()


async def test_interrupt_signal_only_reaches_sandbox(sandbox: Sandbox) -> None:
    # An interrupt must never hit the kernel (this process): we are still here to check.
    task = asyncio.ensure_future(sandbox.run_bash("sleep 37"))
    await until(lambda: any(p[2].strip() == "sleep 37" for p in leftovers(sandbox)), 5, every=0.02)
    await sandbox.interrupt()
    res = await task
    assert res.error_category == "killed"
    assert signal.getsignal(signal.SIGINT) is not None
