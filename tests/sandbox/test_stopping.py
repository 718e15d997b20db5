"""Stop means stop, at the sandbox (a Stop that left the process running, found again):

- a command that prints all the time: Python 3.11's ``asyncio.wait_for`` forgot a cancellation
  that came as the output it waited for arrived, and the command ran on to its timeout;
- a process the kernel has not yet heard of: the zygote started it, but the kernel, busy, had
  not read the "spawned" report when the Stop came, and dropped the run without killing it.

The late hearing is made certain by holding back the launcher's "spawned" reports (our own
event handling, on the kernel's side); the sandbox, its launcher and the processes are real, on
every tier this machine has. (A warm worker starts through the same spawn; its start runs no
code of the user's, which comes after the "spawned" report.)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sandbox_helpers import leftovers, make_config, primed_pids

from tests.procs import marked_loop, processes_with
from tests.waiting import until
from think_kernel.sandbox import Sandbox, Tier, available_tiers
from think_kernel.sandbox.sandbox import OutputCallback

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow

in_session_loop = pytest.mark.asyncio(loop_scope="session")  # where the sandbox fixture lives

Start = Callable[[Sandbox, str], Awaitable[Any]]


def _exec_loop(marker: str) -> str:
    """Python that becomes a marked shell loop (the process keeps its pid)."""
    return f"import os\nos.execvp('sh', ['sh', '-c', 'while true; do sleep 0.1; done', {marker!r}])"


STARTS: dict[str, Start] = {
    "bash": lambda sb, m: sb.run_bash(marked_loop(m), timeout=60),
    "fresh python": lambda sb, m: sb.run_python(_exec_loop(m), fresh=True, timeout=60),
}


@contextlib.contextmanager
def spawns_heard_late(sb: Sandbox) -> Iterator[list[dict]]:
    """Hold back the launcher's "spawned" reports until the block ends (exits pass)."""
    launcher = sb._launcher
    assert launcher is not None
    deliver = launcher.on_event
    held: list[dict] = []

    def on_event(msg: dict) -> None:
        if msg.get("ev") == "spawned":
            held.append(msg)
        else:
            deliver(msg)

    launcher.on_event = on_event
    try:
        yield held
    finally:
        launcher.on_event = deliver
        for msg in held:
            deliver(msg)


LOUD = "while True: print('chatter', flush=True)"
CHATTY: dict[str, Callable[[Sandbox, OutputCallback], Awaitable[Any]]] = {
    "bash": lambda sb, out: sb.run_bash("while :; do echo chatter; done", on_output=out),
    "fresh python": lambda sb, out: sb.run_python(LOUD, fresh=True, on_output=out),
    "warm worker": lambda sb, out: sb.run_python(LOUD, on_output=out),
}


@contextlib.asynccontextmanager
async def own_sandbox(tier: Tier, name: str, prime_bash: int) -> AsyncIterator[Sandbox]:
    """A sandbox of its own (its launcher's events are tampered with), warmed by one run;
    still working afterwards."""
    ws = Path(tempfile.mkdtemp(prefix="think-sbx-test-stopping-"))
    try:
        config = make_config(tier, prime_bash=prime_bash, preload_modules=[], timeout=60)
        async with await Sandbox.create(ws, name, config) as sb:
            assert (await sb.run_bash("true")).ok
            yield sb
            res = await sb.run_bash("echo on")
            assert res.ok and res.stdout == "on\n", res
            res = await sb.run_python("print('on')")
            assert res.ok and res.stdout == "on\n", res
    finally:
        shutil.rmtree(ws, ignore_errors=True)


def _heard(event: asyncio.Event, stream: str, text: str) -> None:
    event.set()


@in_session_loop
async def test_stop_reaches_a_command_that_prints_all_the_time(sandbox: Sandbox) -> None:
    for name, start in CHATTY.items():
        for attempt in range(5):
            heard = asyncio.Event()
            task = asyncio.ensure_future(start(sandbox, functools.partial(_heard, heard)))
            await asyncio.wait_for(heard.wait(), 20)
            await asyncio.sleep(0.01 * attempt)
            task.cancel()
            await asyncio.wait({task}, timeout=3)
            assert task.cancelled(), f"{name}: the run went on after its cancellation"
        await until(lambda: not leftovers(sandbox), 2, name, every=0.02)
    res = await sandbox.run_python("print('on')")
    assert res.ok and res.stdout == "on\n", res


async def _stop_while_starting(sb: Sandbox, how: str, name: str, start: Start) -> None:
    marker = f"startmark{uuid.uuid4().hex[:8]}"
    with spawns_heard_late(sb) as held:
        task = asyncio.ensure_future(start(sb, marker))
        # It runs, the launcher has reported it, and we do not know yet.
        await until(lambda: processes_with(marker) and held, 20, name)
        assert not task.done(), name
        if how == "cancel":
            task.cancel()
        else:
            await sb.interrupt()
        what = f"{how}: the {name} process killed"
        await until(lambda: not processes_with(marker), 2, what, every=0.02)
    if how == "cancel":
        with pytest.raises(asyncio.CancelledError):
            await task
    else:
        res = await asyncio.wait_for(task, 10)
        assert not res.ok and res.error_category == "killed", (name, res)


@pytest.mark.parametrize("tier", available_tiers(), ids=lambda t: t.name)
async def test_stop_kills_a_process_the_kernel_has_not_heard_of_yet(tier: Tier) -> None:
    # No primed bash: the bash command takes the usual way, through a spawn request.
    async with own_sandbox(tier, "starting", prime_bash=0) as sb:
        for how in ("cancel", "interrupt"):
            for name, start in STARTS.items():
                await _stop_while_starting(sb, how, name, start)


@pytest.mark.parametrize("tier", available_tiers(), ids=lambda t: t.name)
async def test_stop_while_a_command_waits_for_its_primed_bash(tier: Tier) -> None:
    """The command went to the bash started ahead for it, which the kernel has not yet heard
    of; Stop there kills that bash (no one else holds it any more) and nothing runs."""
    async with own_sandbox(tier, "primedstop", prime_bash=1) as sb:
        with spawns_heard_late(sb) as held:  # before the next bash is primed
            await until(lambda: held and primed_pids(sb), 20, "a primed bash")
            task = asyncio.ensure_future(sb.run_bash("touch ran"))
            await until(lambda: not sb._primed, 5, "the primed bash taken")
            task.cancel()
            await until(lambda: not primed_pids(sb), 2, "the primed bash killed", every=0.02)
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not (sb.workspace / "ran").exists()


@pytest.mark.parametrize("tier", available_tiers(), ids=lambda t: t.name)
async def test_stop_while_the_start_request_is_still_being_sent(tier: Tier) -> None:
    """The request went out but its sender has not returned (a long line's tail): Stop there
    kills what the launcher starts from it."""
    async with own_sandbox(tier, "sendstop", prime_bash=0) as sb:
        launcher = sb._launcher
        assert launcher is not None
        send, never = launcher.send, asyncio.Event()

        async def send_then_linger(obj: dict, fds: Any = ()) -> None:
            await send(obj, fds)
            if obj.get("op") == "spawn":
                await never.wait()

        launcher.send = send_then_linger  # type: ignore[method-assign]
        marker = f"startmark{uuid.uuid4().hex[:8]}"
        task = asyncio.ensure_future(sb.run_bash(marked_loop(marker), timeout=60))
        await until(lambda: processes_with(marker), 20, "the command runs")
        task.cancel()
        await until(lambda: not processes_with(marker), 2, "the command killed", every=0.02)
        with pytest.raises(asyncio.CancelledError):
            await task
        launcher.send = send  # type: ignore[method-assign]
