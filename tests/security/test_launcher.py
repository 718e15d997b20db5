"""Attack class: a session against its own launcher (the zygote), and a launcher that stops
answering (``kill -STOP $PPID`` used to wedge every later run for good)."""

from __future__ import annotations

import asyncio
import os
import signal
import textwrap

from conftest import SandboxFactory
from security_helpers import host_processes, process_state

from tests.waiting import until
from think_kernel.sandbox import Tier


async def test_code_cannot_stop_kill_or_slow_its_launcher(
    open_sandbox: SandboxFactory, tier: Tier
) -> None:
    async with open_sandbox("self") as sb:
        launcher = sb.launcher_pid()
        assert launcher is not None
        nice = os.getpriority(os.PRIO_PROCESS, launcher)
        bash = await sb.run_bash(
            "kill -STOP $PPID; echo stop=$?; kill -KILL $PPID; echo kill=$?; "
            "renice -n 19 -p $PPID >/dev/null 2>&1; echo renice=$?"
        )
        assert bash.stdout == "stop=1\nkill=1\nrenice=1\n", bash
        seccomp = tier != Tier.RLIMITS
        code = textwrap.dedent(f"""
            import ctypes, os, resource, signal
            zygote = os.getppid()
            tries = {{
                "stop": lambda: os.kill(zygote, signal.SIGSTOP),
                "group": lambda: os.killpg(zygote, signal.SIGSTOP),
                "mem": lambda: open(f"/proc/{{zygote}}/mem", "rb+"),
                "prlimit": lambda: resource.prlimit(zygote, resource.RLIMIT_NOFILE, (0, 0)),
                "nice": lambda: os.setpriority(os.PRIO_PROCESS, zygote, 19),
            }}
            if {seccomp}:  # tier 3 relies on the uid alone: -1 reaches the session's own
                tries["all"] = lambda: os.kill(-1, signal.SIGSTOP)
                tries["user"] = lambda: os.setpriority(os.PRIO_USER, 0, 19)
            for name, attempt in tries.items():
                try:
                    attempt()
                    print("DID", name)
                except OSError as e:
                    print("DENIED", name, e.errno)
            libc = ctypes.CDLL(None, use_errno=True)
            libc.ptrace.restype = ctypes.c_long
            print("PTRACE", libc.ptrace(16, zygote, None, None))
            # The legitimate use next to it: our own children and our own priority.
            child = os.fork()
            if child == 0:
                signal.pause()
            os.kill(child, signal.SIGSTOP)
            os.kill(child, signal.SIGKILL)
            print("OWN CHILD", os.waitpid(child, 0)[1] == signal.SIGKILL)
            before = os.getpriority(os.PRIO_PROCESS, 0)
            print("OWN NICE", os.nice(1) == before + 1)
        """)
        res = await sb.run_python(code, fresh=True)
        assert res.ok, res
        assert "DID" not in res.stdout, res.stdout
        assert "PTRACE -1" in res.stdout and "OWN CHILD True" in res.stdout, res.stdout
        assert "OWN NICE True" in res.stdout, res.stdout
        assert process_state(launcher) in ("S", "R")
        assert os.getpriority(os.PRIO_PROCESS, launcher) == nice
        assert await sb.ping()
        after = await sb.run_bash("echo still-fine")
        assert after.stdout == "still-fine\n" and not after.warnings or tier == Tier.RLIMITS
        assert sb.launcher_restarts == 0


async def test_code_cannot_stop_or_kill_the_bash_fork_server(
    open_sandbox: SandboxFactory, tier: Tier
) -> None:
    """Bash runs come from a second fork server: neither a bash run (its child)
    nor a Python run (its sibling's child) can stop, kill or re-prioritise it."""
    async with open_sandbox("server") as sb:
        who = await sb.run_bash("echo $PPID")
        server = int(who.stdout)
        host = next(p for p in host_processes(sb.session_id, "") if _inside_pid(p) == server)
        assert host != sb.launcher_pid()
        nice = os.getpriority(os.PRIO_PROCESS, host)
        bash = await sb.run_bash(
            "kill -STOP $PPID; echo stop=$?; kill -KILL $PPID; echo kill=$?; "
            "renice -n 19 -p $PPID >/dev/null 2>&1; echo renice=$?"
        )
        assert bash.stdout == "stop=1\nkill=1\nrenice=1\n", bash
        code = textwrap.dedent(f"""
            import os, signal
            for name, attempt in {{
                "stop": lambda: os.kill({server}, signal.SIGSTOP),
                "kill": lambda: os.kill({server}, signal.SIGKILL),
                "nice": lambda: os.setpriority(os.PRIO_PROCESS, {server}, 19),
            }}.items():
                try:
                    attempt()
                    print("DID", name)
                except OSError as e:
                    print("DENIED", name, e.errno)
        """)
        res = await sb.run_python(code, fresh=True)
        assert res.ok and res.stdout.count("DENIED") == 3, res
        assert process_state(host) in ("S", "R")
        assert os.getpriority(os.PRIO_PROCESS, host) == nice
        after = await sb.run_bash("echo still-fine")
        assert (
            after.stdout == "still-fine\n"
            and int((await sb.run_bash("echo $PPID")).stdout) == server
        )
        assert sb.launcher_restarts == 0


def _inside_pid(pid: int) -> int:
    """A host process's pid in the innermost pid namespace (the sandbox's on tier 1)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return int(next(line for line in f if line.startswith("NSpid:")).split()[-1])
    except (OSError, StopIteration):
        return -1


async def test_a_wedged_launcher_is_replaced_within_the_timeout(
    open_sandbox: SandboxFactory, tier: Tier
) -> None:
    async with open_sandbox("wedge", launcher_timeout=2.0) as sb:
        warm = await sb.run_python("x = 41")
        assert warm.ok
        # Wedge it from outside (the attacks above cannot): the next run must still work.
        first = sb.launcher_pid()
        assert first is not None
        os.kill(first, signal.SIGSTOP)
        res = await sb.run_bash("echo back", timeout=20)
        assert res.ok and res.stdout == "back\n", res
        assert any("did not answer within 2 s and was replaced" in w for w in res.warnings), res
        assert res.duration_ms < 20_000
        await until(lambda: process_state(first) == "", 10, every=0.02)  # the old one is gone
        assert sb.launcher_restarts == 1 and await sb.ping()
        again = await sb.run_bash("echo normal")
        assert again.ok and [w for w in again.warnings if "replaced" in w] == []
        # A launcher wedged while a warm cell runs: the timeout cannot be enforced through
        # it, so it is replaced, and the result says so.
        await sb.run_python("y = 1")
        second = sb.launcher_pid()
        assert second is not None and second != first
        os.kill(second, signal.SIGSTOP)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        hung = await sb.run_python("while True: pass", timeout=2)
        assert hung.error_category == "timeout", hung
        assert any("stopped answering and was replaced" in w for w in hung.warnings), hung
        assert loop.time() - t0 < 15
        assert sb.launcher_restarts == 2
        fresh_state = await sb.run_python("print('y' in globals())")
        assert fresh_state.ok and fresh_state.stdout == "False\n", fresh_state


async def test_interrupt_gets_through_a_wedged_launcher(open_sandbox: SandboxFactory) -> None:
    async with open_sandbox("stop") as sb:
        task = asyncio.ensure_future(sb.run_bash("sleep 33.5", timeout=60))
        await until(lambda: host_processes(sb.session_id, "sleep 33.5"), 10, every=0.02)
        launcher = sb.launcher_pid()
        assert launcher is not None
        os.kill(launcher, signal.SIGSTOP)  # the kill request cannot reach the run through it
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        await sb.interrupt()
        res = await task
        assert res.error_category == "killed" and loop.time() - t0 < 10, res
        assert host_processes(sb.session_id, "sleep 33.5") == []
        assert sb.launcher_restarts == 1
        assert (await sb.run_bash("echo next")).stdout == "next\n"
