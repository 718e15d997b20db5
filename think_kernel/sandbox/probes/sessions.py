"""Probes of the walls between sessions and of the session's limits: another session's
processes and files, a fork bomb, memory across processes, disk writes, a wedged launcher."""

from __future__ import annotations

import asyncio
import os
import signal
import textwrap
from pathlib import Path

from ...waits import wait_for
from ..sandbox import Sandbox
from .report import Probe


async def other_session(a: Sandbox, b: Sandbox) -> Probe:
    """Signal a process of another session."""
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


async def processes(a: Sandbox, b: Sandbox) -> Probe:
    """A fork bomb in one session, while another session starts processes."""
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


async def memory(sb: Sandbox) -> Probe:
    """Four processes of 64 MiB each against the session's memory limit."""
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


async def disk(sb: Sandbox) -> Probe:
    """Write 128 MiB in one run against the write budget."""
    res = await sb.run_bash("for i in $(seq 1 32); do head -c 4M /dev/zero > doctor-$i.bin; done")
    for p in sb.workspace.glob("doctor-*.bin"):
        p.unlink()
    ok = res.error_category == "disk"
    return Probe("disk: 128 MiB written in one run", ok,
                 f"stopped at the {sb.config.max_write_mb} MiB budget" if ok else
                 "the run was not stopped")  # fmt: skip


async def wedge(sb: Sandbox) -> Probe:
    """Stop the launcher from outside (SIGSTOP): the next run must replace it."""
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


async def tools_as_session(a: Sandbox, b: Sandbox, ws: Path) -> Probe:
    """Session A closes a file and a folder to others; session B's file tools (the path
    ``import think`` takes too) must not open them: they run in the kernel, maybe as root."""
    from ...tools.base import ToolContext, ToolRegistry
    from ...tools.files import FILE_TOOLS
    from ...tools.services import ToolServices
    from ...tools.workspace import LocalWorkspace
    from ..asuser import ActingAs, Identity, sandbox_identity

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
