"""Containment probes: the attacks of issue 9, tried for real on this machine, for
``jupyter think doctor`` and ``%think_doctor``::

    report = await run_probes(Tier.BUBBLEWRAP, SandboxConfig())
    print(report.markdown())

Each probe starts from what a hostile snippet would do and records whether the sandbox
contained it. Probes run with small limits of their own (so the memory, process and disk
probes stay quick and cheap); the limits table shows the user's configuration.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import sys
import tempfile
import textwrap
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..waits import wait_for
from . import envpaths, launch
from .config import SandboxConfig
from .limits import LimitRow, markdown_table
from .sandbox import Sandbox, SandboxError
from .tiers import Tier

_CANARY = "THINK_DOCTOR_CANARY_SECRET"


@dataclass
class Probe:
    """One attack class and its outcome."""

    attack: str
    contained: bool
    detail: str


@dataclass
class Report:
    """Every probe of one tier, and the limits a session would run under."""

    tier: Tier
    probes: list[Probe] = field(default_factory=list)
    limits: list[LimitRow] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def all_contained(self) -> bool:
        """True when every attack was contained."""
        return all(p.contained for p in self.probes)

    def markdown(self) -> str:
        """The report as Markdown: a probe table, then the limits table."""
        lines = [f"**{self.tier.description}**", "", "| attack | contained | detail |",
                 "|---|---|---|"]  # fmt: skip
        for p in self.probes:
            mark = "yes" if p.contained else "**NO**"
            lines.append(f"| {p.attack} | {mark} | {p.detail.replace('|', '/')} |")
        lines += ["", markdown_table(self.limits)]
        return "\n".join(lines)


def _probe_config(config: SandboxConfig, tier: Tier) -> SandboxConfig:
    """The user's configuration with small, quick limits and nothing preloaded."""
    c = SandboxConfig(config=config.config)
    c.force_tier = int(tier)
    c.required_tier = 3
    c.preload_modules = []
    c.timeout = 20
    c.max_processes = 32
    c.session_memory_mb = 128
    c.memory_mb = 512
    c.max_write_mb = 32
    c.write_check_interval = 0.05
    c.launcher_timeout = 1.0
    return c


async def run_probes(
    tier: Tier, config: SandboxConfig, progress: Callable[[str], None] | None = None
) -> Report:
    """Try every attack class on ``tier``; ``progress(name)`` is called before each probe."""
    start = time.perf_counter()
    report = Report(tier)
    ws = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="think-doctor-"))
    outside = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="think-doctor-outside-"))
    os.environ[_CANARY] = "sk-doctor-canary"
    try:
        os.chmod(outside, 0o777)  # only the sandbox, not file modes, may stop the write
        user = SandboxConfig(config=config.config)
        user.force_tier, user.preload_modules = int(tier), []
        try:
            async with await Sandbox.create(ws, "doctor-limits", user) as sb:
                report.limits = sb.limits()
        except SandboxError as e:  # e.g. the session uid cannot reach the interpreter
            report.probes.append(Probe("the sandbox starts", False, str(e)))
            report.seconds = time.perf_counter() - start
            return report
        cfg = _probe_config(config, tier)
        async with (
            await Sandbox.create(ws, "doctor-a", cfg) as a,
            await Sandbox.create(ws, "doctor-b", cfg) as b,
        ):
            probes: list[tuple[str, Callable[[], Awaitable[Probe]]]] = [
                ("the Python environment", lambda: python_env(a)),
                ("the kernel's Python", lambda: python_env_writes(a)),
                ("network", lambda: _network(a)),
                ("host sockets", lambda: _sockets(a, ws)),
                ("files outside the workspace", lambda: _outside(a, outside)),
                ("secrets", lambda: _secrets(a)),
                ("the store", lambda: _store(a)),
                ("the history store", _history_store),
                ("the kernel process", lambda: _kernel(a)),
                ("its own launcher", lambda: _launcher(a)),
                ("another session", lambda: _other_session(a, b)),
                ("another session's files", lambda: _tools_as_session(a, b, ws)),
                ("fork bomb", lambda: _processes(a, b)),
                ("memory across processes", lambda: _memory(a)),
                ("disk writes", lambda: _disk(a)),
                ("a wedged launcher", lambda: _wedge(b)),
                ("output scripting", lambda: output_scripting(a)),
            ]
            for name, probe in probes:
                if progress is not None:
                    progress(name)
                try:
                    report.probes.append(await probe())
                except Exception as e:  # a probe that breaks is reported, not fatal
                    report.probes.append(Probe(name, False, f"probe failed: {e}"))
    finally:
        os.environ.pop(_CANARY, None)
        await asyncio.to_thread(shutil.rmtree, ws, True)
        await asyncio.to_thread(shutil.rmtree, outside, True)
    report.seconds = time.perf_counter() - start
    return report


async def output_scripting(sb: Sandbox) -> Probe:
    """Sandboxed code displays HTML, JavaScript, SVG and Markdown with handlers: what the
    kernel would publish of it must hold no MIME type the page could run."""
    from ..safeoutput import UNTRUSTED_MIME, safe_bundle, scriptable

    code = textwrap.dedent("""
        display({"text/html": "<img src=x onerror=alert(1)><script>alert(2)</script>",
                 "text/plain": "html"})
        display({"application/javascript": "alert(3)", "text/plain": "js"})
        display({"text/markdown": "<img src=x onerror=alert(4)>", "text/plain": "md"})
        display({"image/svg+xml": "<svg onload='alert(5)'/>", "text/plain": "svg"})
    """)
    res = await sb.run_python(code, fresh=True)
    sent = [safe_bundle({k: v for k, v in b.items() if "/" in k}) for b in res.outputs]
    leaks = sorted({mime for data in sent for mime in scriptable(data)})
    framed = sum(UNTRUSTED_MIME in data for data in sent)
    ok = len(sent) == 4 and not leaks and framed == 3
    detail = "HTML, JavaScript and SVG go to a sandboxed frame; Markdown is sanitised"
    if leaks:
        detail = "would reach the page: " + ", ".join(leaks)
    elif not ok:
        detail = f"expected 4 displays (3 framed), got {len(sent)} ({framed} framed)"
    return Probe("output scripting: HTML and JavaScript from sandboxed code", ok, detail)


async def _network(sb: Sandbox) -> Probe:
    hits: list[int] = []

    async def on_conn(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        hits.append(1)
        w.close()

    server = await asyncio.start_server(on_conn, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    code = textwrap.dedent(f"""
        import socket
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=2)
            print("CONNECTED")
        except OSError as e:
            print("BLOCKED", e.strerror)
    """)
    try:
        res = await sb.run_python(code, fresh=True)
        await asyncio.sleep(0.05)
    finally:
        server.close()
    ok = not hits and "CONNECTED" not in res.stdout
    return Probe("network: connect to a TCP port on this machine", ok,
                 "refused: " + res.stdout.strip().removeprefix("BLOCKED ") if ok else
                 "a connection got through")  # fmt: skip


async def _sockets(sb: Sandbox, ws: Path) -> Probe:
    # A world-writable Unix socket in the workspace, as a forgotten dev server would leave.
    path = ws / "doctor.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen()
    srv.setblocking(False)
    os.chmod(path, 0o777)
    code = textwrap.dedent(f"""
        import socket
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect({str(path)!r})
            print("CONNECTED")
        except OSError as e:
            print("BLOCKED", e.strerror)
    """)
    try:
        res = await sb.run_python(code, fresh=True)
        try:
            srv.accept()[0].close()
            reached = True
        except BlockingIOError:
            reached = False
    finally:
        srv.close()
        path.unlink(missing_ok=True)
    ok = not reached
    return Probe("host sockets: connect to a Unix socket", ok,
                 "refused: " + res.stdout.strip().removeprefix("BLOCKED ") if ok else
                 "connected to a socket outside the sandbox")  # fmt: skip


async def _outside(sb: Sandbox, outside: Path) -> Probe:
    target = outside / "escaped.txt"
    await sb.run_bash(f"echo escaped > {target}")
    ok = not target.exists()
    return Probe("files: write outside the workspace", ok, "refused" if ok else f"wrote {target}")


async def _secrets(sb: Sandbox) -> Probe:
    res = await sb.run_bash(f"env; cat /proc/{os.getpid()}/environ 2>/dev/null | tr '\\0' '\\n'")
    ok = _CANARY not in res.stdout and "sk-doctor-canary" not in res.stdout
    return Probe(
        "secrets: the kernel's environment",
        ok,
        "not visible" if ok else "a kernel environment variable was visible",
    )


async def _store(sb: Sandbox) -> Probe:
    root = launch.store_root()
    probe = root / "doctor-probe.txt"
    res = await sb.run_bash(f"ls {root} 2>&1 | head -3; echo x > {probe} && echo WROTE")
    wrote = probe.exists()
    with contextlib.suppress(OSError):
        probe.unlink()
    listed = [n for n in os.listdir(root) if n != probe.name] if root.is_dir() else []
    seen = any(n in res.stdout for n in listed)
    ok = not wrote and not seen
    return Probe(f"the store: {root}", ok, "hidden" if ok else
                 "its folder was listed or written")  # fmt: skip


async def _history_store() -> Probe:
    # Where a server started here would keep the collaboration rooms' Yjs history: sandboxed
    # code can write the workspace, so a history kept there can be replaced with a link.
    attack = "the history store: replace it in the workspace"
    try:
        from jupyter_ext.collab.ystore import check_workspace
    except ImportError as e:  # no server extension (or no jupyter-collaboration) here
        return Probe(attack, True, f"no collaboration rooms ({e})")
    ok, detail = await asyncio.to_thread(check_workspace, os.getcwd())
    return Probe(attack, ok, ("outside the workspace: " if ok else "") + detail)


async def _kernel(sb: Sandbox) -> Probe:
    me = os.getpid()
    code = textwrap.dedent(f"""
        import os
        for what, act in (("signal", lambda: os.kill({me}, 0)),
                          ("memory", lambda: open("/proc/{me}/mem", "rb"))):
            try:
                act()
                print("REACHED", what)
            except OSError as e:
                print("DENIED", what)
    """)
    res = await sb.run_python(code, fresh=True)
    ok = "REACHED" not in res.stdout
    return Probe(
        "the kernel process: signal it, open its memory",
        ok,
        "refused" if ok else res.stdout.strip().replace("\n", ", "),
    )


async def _launcher(sb: Sandbox) -> Probe:
    res = await sb.run_bash("kill -STOP $PPID && echo STOPPED; kill -0 $PPID && echo REACHED")
    alive = await sb.ping(2.0)
    ok = "STOPPED" not in res.stdout and "REACHED" not in res.stdout and alive
    return Probe(
        "its own launcher: kill -STOP $PPID",
        ok,
        "refused, launcher still answers" if ok else "the launcher could be signalled",
    )


async def _other_session(a: Sandbox, b: Sandbox) -> Probe:
    task = asyncio.ensure_future(b.run_bash("sleep 29.5", timeout=30))
    try:
        pid = None
        for _ in range(250):
            pid = next((p for p in b.session_pids() if _cmdline(p).startswith("sleep 29.5")),
                       None)  # fmt: skip
            if pid:
                break
            await asyncio.sleep(0.02)
        if pid is None:
            return Probe("another session: signal its processes", False, "probe could not start")
        res = await a.run_python(
            f"import os\ntry:\n    os.kill({pid}, 0)\n    print('REACHED')\n"
            "except OSError:\n    print('DENIED')",
            fresh=True,
        )
    finally:
        await b.interrupt()
        await task
    ok = "REACHED" not in res.stdout
    return Probe(
        "another session: signal its processes",
        ok,
        "refused (own uid per session)" if ok else "a signal would have reached it",
    )


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


async def _processes(a: Sandbox, b: Sandbox) -> Probe:
    code = textwrap.dedent("""
        import os, time
        n = 0
        try:
            while n < 2000:
                if os.fork() == 0:
                    time.sleep(20)
                    os._exit(0)
                n += 1
        except OSError:
            pass
        print("STARTED", n, flush=True)
        time.sleep(20)
    """)
    got = asyncio.Event()

    def seen(stream: str, text: str) -> None:
        if "STARTED" in text:
            got.set()

    task = asyncio.ensure_future(a.run_python(code, fresh=True, on_output=seen))
    try:
        await wait_for(got.wait(), 20)
        other = await b.run_bash("sleep 0.1 & sleep 0.1 & wait; echo calm")
    finally:
        await a.interrupt()
        res = await task
    n = int(res.stdout.split("STARTED")[1].split()[0]) if "STARTED" in res.stdout else -1
    limit = a.config.max_processes
    ok = 0 <= n < limit and other.stdout == "calm\n"
    return Probe(
        "fork bomb: processes of one session",
        ok,
        f"stopped at {n} processes (limit {limit}); another session still starts its own"
        if ok
        else f"started {n}, other session: {other.error or 'ok'}",
    )


async def _memory(sb: Sandbox) -> Probe:
    code = textwrap.dedent("""
        import os
        pids = []
        for i in range(4):
            pid = os.fork()
            if pid == 0:
                b = bytearray(64 << 20)
                for j in range(0, len(b), 4096):
                    b[j] = 1
                import time; time.sleep(1)
                os._exit(0)
            pids.append(pid)
        print("KILLED", sum(os.waitpid(p, 0)[1] != 0 for p in pids))
    """)
    res = await sb.run_python(code, fresh=True)
    mech = sb.cgroup.mechanisms.get("memory") if sb.cgroup else None
    killed = res.stdout.split("KILLED")[1].split()[0] if "KILLED" in res.stdout else "?"
    ok = mech is not None and killed not in ("0", "?")
    limit = sb.config.session_memory_mb
    return Probe("memory: 4 processes x 64 MiB", ok,
                 f"{killed} killed at the {limit} MiB session limit ({mech})" if ok else
                 "no session-wide memory limit: only RLIMIT_AS per process")  # fmt: skip


async def _disk(sb: Sandbox) -> Probe:
    res = await sb.run_bash("for i in $(seq 1 32); do head -c 4M /dev/zero > doctor-$i.bin; done")
    for p in sb.workspace.glob("doctor-*.bin"):
        p.unlink()
    ok = res.error_category == "disk"
    return Probe("disk: 128 MiB written in one run", ok,
                 f"stopped at the {sb.config.max_write_mb} MiB budget" if ok else
                 "the run was not stopped")  # fmt: skip


async def _wedge(sb: Sandbox) -> Probe:
    pid = sb.launcher_pid()
    if pid is None:
        return Probe("a wedged launcher", False, "launcher not found")
    os.kill(pid, signal.SIGSTOP)
    res = await sb.run_bash("echo back", timeout=20)
    # A bash started ahead of the command (prime_bash) runs it without the launcher; its
    # exit status cannot come back, and the launcher is replaced then: the next one runs.
    again = res if res.ok else await sb.run_bash("echo back", timeout=20)
    took = res.duration_ms + (again.duration_ms if again is not res else 0)
    ok = (again.ok and again.stdout == "back\n" and res.stdout == "back\n"
          and any("replaced" in w for w in res.warnings))  # fmt: skip
    return Probe("a wedged launcher (SIGSTOP from outside)", ok,
                 f"replaced, the run took {took / 1000:.1f} s" if ok else
                 f"run result: {again.error or again.stdout!r}")  # fmt: skip


async def _tools_as_session(a: Sandbox, b: Sandbox, ws: Path) -> Probe:
    """Session A closes a file and a folder to others; session B's file tools (the path
    ``import think`` takes too) must not open them: they run in the kernel, maybe as root."""
    from ..tools.base import ToolContext, ToolRegistry
    from ..tools.files import FILE_TOOLS
    from ..tools.services import ToolServices
    from ..tools.workspace import LocalWorkspace
    from .asuser import ActingAs, Identity, sandbox_identity

    attack = "another session: its private files through the file tools"
    who = sandbox_identity(b.identity)
    if who is None or a.identity == b.identity:
        return Probe(attack, True, "one uid for every session: nothing is private between them")
    made = await a.run_bash(
        "mkdir -m 700 .doctor-private && echo s > .doctor-private/f && echo s > .doctor-secret"
        " && chmod 600 .doctor-secret && echo made"
    )
    if made.stdout != "made\n":
        return Probe(attack, False, f"probe could not start: {made.error or made.stderr}")

    async def identity() -> Identity | None:
        return who

    acting = ActingAs(identity)
    ctx = ToolContext("doctor-b", LocalWorkspace(ws), read_paths={".doctor-secret"},
                      services=ToolServices(acting=acting))  # fmt: skip
    tools = ToolRegistry(FILE_TOOLS)
    reached = []
    try:
        for name, args in (
            ("read_file", {"path": ".doctor-secret"}),
            ("read_file", {"path": ".doctor-private/f"}),
            ("list_files", {"path": ".doctor-private"}),
            ("write_file", {"path": ".doctor-secret", "content": "overwritten"}),
            ("delete_file", {"path": ".doctor-private/f"}),
        ):
            if (await tools.call(name, args, ctx)).output.ok:
                reached.append(f"{name} {args['path']}")
    finally:
        acting.close()
        await a.run_bash("rm -rf .doctor-private .doctor-secret")
    ok = not reached
    return Probe(attack, ok, "refused: the tools act with the calling session's uid" if ok
                 else "reached as the kernel: " + ", ".join(reached))  # fmt: skip


# ------------------------------------------------------------------ the Python environment

ENV_PACKAGES = ("numpy", "pandas", "matplotlib")


async def python_env(sb: Sandbox, packages: Sequence[str] = ENV_PACKAGES) -> Probe:
    """Sandboxed code runs the kernel's Python: its standard library and those of
    ``packages`` the kernel's environment has import, and ``python`` in bash is the kernel's."""
    attack = "the Python environment: stdlib, packages, `python` in bash"
    have = [p for p in packages if importlib.util.find_spec(p) is not None]
    missing = [p for p in packages if p not in have]
    mods = ", ".join(["importlib", "warnings", "threading", *have])
    res = await sb.run_python(f"import sys, {mods}\nprint(sys.prefix)", fresh=True)
    pybin, name = _python_in_bash()
    bash = await sb.run_bash(f"command -v {name} && {name} -c 'import sys; print(sys.prefix)'")
    problems = []
    if not res.ok or res.stdout.strip() != sys.prefix:
        said = (res.error or res.stderr or res.stdout or "no output").strip().splitlines()
        problems.append(f"sandboxed Python fails: {said[-1]}")
    if bash.stdout.split() != [os.path.join(pybin, name), sys.prefix]:
        got = (bash.stdout + bash.stderr).strip().replace("\n", " ") or "not found"
        problems.append(f"`{name}` in sandboxed bash is not the kernel's ({got})")
    if problems:
        return Probe(attack, False, "; ".join(problems) + ". " + _env_fix(sb))
    note = f"; not installed in the kernel's environment: {', '.join(missing)}" if missing else ""
    return Probe(attack, True, f"{mods} import; `{name}` in bash is {pybin}/{name}{note}")


async def python_env_writes(sb: Sandbox) -> Probe:
    """Sandboxed code cannot write the kernel's Python (prefixes, standard library,
    site-packages): what it put there would run in the kernel next."""
    name = f".think-doctor-write-{os.getpid()}"
    targets = [os.path.join(d, name) for d in envpaths.core_paths()]
    each = " ".join(f"'{t}'" for t in targets)
    await sb.run_bash(f'for t in {each}; do echo x > "$t"; done 2>/dev/null; true')
    wrote = await asyncio.to_thread(_remove_written, targets)
    ok = not wrote
    return Probe("the kernel's Python: write into it", ok,
                 "refused: read-only" if ok else "wrote " + ", ".join(wrote))  # fmt: skip


def _remove_written(targets: list[str]) -> list[str]:
    """Those of ``targets`` that exist, removed."""
    found = []
    for t in targets:
        if os.path.lexists(t):
            found.append(t)
            with contextlib.suppress(OSError):
                os.unlink(t)
    return found


def _python_in_bash() -> tuple[str, str]:
    """The kernel's bin folder, which sandboxed bash's PATH starts with, and the name there
    (``python``, else ``python3``) that must run the kernel's interpreter."""
    pybin = os.path.dirname(sys.executable)
    return pybin, "python" if os.path.exists(os.path.join(pybin, "python")) else "python3"


def _env_fix(sb: Sandbox) -> str:
    why = launch.unreachable_env(sb.config.sandbox_gid) if sb.identity is not None else ""
    if why:
        return why[0].upper() + why[1:]
    return (f"Fix: make {sys.executable}, its standard library and site-packages readable by "
            "the sandbox's uid (every folder on the way traversable)")  # fmt: skip
