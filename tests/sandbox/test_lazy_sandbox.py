"""Sandboxes on demand: a prepared sandbox holds no process until first need; the zygote is
ready before its heavy preload, runs bash meanwhile and keeps answering pings; Python runs
wait for the preload; the zygote never takes the session's uid while it preloads."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from sandbox_helpers import make_config, sandbox_processes

from tests.layers import starts_processes
from tests.waiting import until
from think_kernel.sandbox import Sandbox, Tier, available_tiers
from think_kernel.sandbox.lifecycle import SessionSandbox
from think_kernel.sandbox.runs import PING_DEADLINE
from think_kernel.waits import wait_for

pytestmark = pytest.mark.slow  # every test starts a sandbox
TIERS = available_tiers()
TIER = TIERS[0]
# A preload that outlasts the kernel's ping deadline (the zygote used to import in the loop
# that answers pings: a launcher silent that long was replaced, with the session's runs).
SLOW = "import time; time.sleep(3)"
MODULE = "wave"  # stdlib, imported by nothing of ours: in a run only if preloaded


@pytest.fixture
def workspace() -> Any:
    # Not under pytest's basetemp (see the sandbox fixture in conftest.py).
    ws = Path(tempfile.mkdtemp(prefix="think-sbx-lazy-"))
    yield ws
    shutil.rmtree(ws, ignore_errors=True)


@pytest_asyncio.fixture
@starts_processes
async def preloading(workspace: Path) -> AsyncIterator[Sandbox]:
    """A started sandbox whose preload (started at once) lasts a few seconds."""
    config = make_config(TIER, preload_modules=[MODULE], preload_code=SLOW, defer_preload=False)
    sb = await Sandbox.create(workspace, f"lazy-{uuid.uuid4().hex[:6]}", config)
    yield sb
    await sb.close()


def _thread_uids(pid: int) -> dict[str, list[int]]:
    """Each thread's uids: real, effective, saved, filesystem."""
    ids = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/status") as f:
            line = next(x for x in f if x.startswith("Uid:"))
        ids[task] = [int(v) for v in line.split()[1:]]
    return ids


async def _no_loopback(tool: str, args: dict) -> Any:
    raise AssertionError("no loopback call expected")


@starts_processes
async def test_a_prepared_sandbox_holds_no_process_until_first_need(workspace: Path) -> None:
    """Prepared: uid, cgroup and scratch are taken, no process runs; the first use starts
    it, and the first bash command answers."""
    sid = f"lazy-{uuid.uuid4().hex[:6]}"
    box = SessionSandbox(workspace, make_config(TIER), loopback=_no_loopback)
    try:
        box.prepare(sid)
        await box.wait()
        ident = await box.identity(sid)
        assert box.sandbox is None
        assert sandbox_processes(sid) == []
        if os.geteuid() == 0:  # the session's own uid, leased while it holds no process
            assert ident is not None and ident.uid != 0
        t0 = time.perf_counter()
        sb = await box.ensure(sid)
        r = await sb.run_bash("echo first")
        first = time.perf_counter() - t0
        assert r.ok and r.stdout == "first\n", r
        assert sandbox_processes(sid)
        # The start does not wait for the heavy preload (deferred: nothing asked for it).
        assert sb.preloaded == [] and first < 10, first
    finally:
        await box.close()
    assert sandbox_processes(sid) == []


async def test_bash_runs_and_pings_answer_while_the_zygote_preloads(preloading: Sandbox) -> None:
    """During the preload: a bash command runs (it does not wait), pings answer within the
    deadline, a Python run waits and then has the preloaded module; nothing is replaced."""
    sb = preloading
    r = await sb.run_bash("echo during")
    assert r.ok and r.stdout == "during\n", r
    assert sb.preloaded == [], "the bash command waited for the preload"
    python = asyncio.ensure_future(
        sb.run_python(f"import sys; print({MODULE!r} in sys.modules)", fresh=True)
    )
    pings = 0
    while not python.done():
        assert await sb.ping(PING_DEADLINE), "the zygote did not answer while it preloaded"
        pings += 1
    res = await python
    assert res.ok and res.stdout == "True\n", res
    assert pings >= 2 and sb.preloaded == [MODULE] and sb.launcher_restarts == 0
    assert not any("replaced" in w for w in res.warnings), res.warnings


@starts_processes
async def test_a_deferred_preload_waits_for_the_kernel(workspace: Path) -> None:
    """Deferred (the default): bash leaves the preload undone; ``preload()`` starts it."""
    config = make_config(TIER, preload_modules=[MODULE], preload_code="")
    sb = await Sandbox.create(workspace, f"lazy-{uuid.uuid4().hex[:6]}", config)
    try:
        r = await sb.run_bash("echo hi")
        assert r.ok and r.stdout == "hi\n", r
        assert sb.preloaded == []
        await sb.preload()
        assert await wait_for(sb.wait_preloaded(), 60) == [MODULE]
    finally:
        await sb.close()


async def test_a_python_run_stopped_while_it_waits_for_the_preload(preloading: Sandbox) -> None:
    """A Python run cancelled before the preload ended never starts; the session goes on."""
    sb = preloading
    marker = sb.workspace / "started.txt"
    run = asyncio.ensure_future(sb.run_python(f"open({str(marker)!r}, 'w').write('x')", fresh=True))
    await until(lambda: sb._starting, 10, "the run's start request")  # out: now stop it
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    await wait_for(sb.wait_preloaded(), 60)
    r = await sb.run_python("print(1 + 1)", fresh=True)
    assert r.ok and r.stdout == "2\n", r
    assert not marker.exists(), "the stopped run started after the preload"
    assert sb.launcher_restarts == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="session uids need a root kernel")
@pytest.mark.skipif(Tier.RLIMITS not in TIERS, reason="tier 3 cannot run here")
@starts_processes
async def test_tier3_zygote_never_takes_the_session_uid_while_it_preloads(
    workspace: Path,
) -> None:
    """Tier 3 has no seccomp filter: a zygote whose real or effective uid were the session's
    could be signalled by the session's code. While it preloads (a bash run of the session
    alive), every thread of the zygote keeps uid 0; only the preload thread's filesystem uid
    is the session's (its files belong to the session)."""
    config = make_config(Tier.RLIMITS, preload_modules=[MODULE], preload_code=SLOW,
                         defer_preload=False)  # fmt: skip
    sb = await Sandbox.create(workspace, f"lazy-{uuid.uuid4().hex[:6]}", config)
    try:
        assert sb.identity is not None
        uid = sb.identity[0]
        zygote = sb.launcher_pid()
        assert zygote is not None
        job = await sb.start_job("sleep 30", sb.config.limits(), "")
        assert sb.preloaded == []
        ids = _thread_uids(zygote)
        assert len(ids) == 2, ids  # the zygote's loop and its preload thread
        assert all(v[:3] == [0, 0, 0] for v in ids.values()), ids
        assert sorted(v[3] for v in ids.values()) == sorted([0, uid]), ids
        await sb.kill_run(job, "done")
    finally:
        await sb.close()
