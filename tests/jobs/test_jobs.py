"""Background jobs in a real sandbox: past the foreground limit with progress, Stop, the wall
clock, the memory limit, the kernel's end (lost), and the tools the model calls.

``THINK_JOB_TEST_SECONDS`` sets the long job's length (default 4 s; 180 for the three-minute
case of the benchmarks)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from conftest import FOREGROUND_TIMEOUT

from tests.waiting import until
from think_kernel.jobs import JOB_END, JOB_TOOLS, Jobs, JobsConfig, setting_key
from think_kernel.sandbox import Sandbox
from think_kernel.store import Store
from think_kernel.tools.base import ToolContext, ToolRegistry
from think_kernel.tools.code import CODE_TOOLS
from think_kernel.tools.services import ReminderServices, ToolServices
from think_kernel.tools.workspace import LocalWorkspace

pytestmark = pytest.mark.asyncio(loop_scope="module")  # where the sandbox fixture lives
SECONDS = float(os.environ.get("THINK_JOB_TEST_SECONDS", "4"))
SID = "s_jobs"


def jobs_in(sandbox: Sandbox, **config: object) -> Jobs:
    """A registry over the test sandbox."""

    async def start() -> Sandbox:
        return sandbox

    return Jobs(JobsConfig(**config), start)


async def stored(store: Store, name: str, state: str) -> dict | None:
    """The store's record of job ``name`` once it is in ``state``."""
    rec = await store.get_setting(setting_key(SID)) or {}
    rows = [j for j in rec.get("jobs", []) if j["name"] == name and j["state"] == state]
    return rows[0] if rows else None


async def test_a_job_runs_past_the_foreground_limit_with_progress(
    sandbox: Sandbox, store: Store
) -> None:
    jobs = jobs_in(sandbox)
    steps = max(4, int(SECONDS * 4))
    cmd = (f"for i in $(seq 1 {steps}); do echo \"step $i/{steps} $((i * 100 / {steps}))%\"; "
           "sleep 0.25; done")  # fmt: skip
    woken: list[int] = []
    job = await jobs.start(SID, cmd, "long", wake=True, store=store,
                           wake_scheduler=lambda: woken.append(1))  # fmt: skip
    assert (await stored(store, "long", "running")) is not None
    # Progress while it runs: lines and the last percentage printed.
    await until(lambda: (job.log.percent or 0) >= 25, SECONDS + 30, "a quarter done")
    assert job.state == "running" and job.log.lines >= 1
    # The session goes on meanwhile: a foreground command runs, and Stop of the foreground
    # (the sandbox's interrupt) ends foreground runs only.
    res = await sandbox.run_bash("echo foreground")
    assert res.ok and res.stdout == "foreground\n"
    await sandbox.interrupt()
    assert job.state == "running"
    await until(lambda: job.state != "running", SECONDS + 60, "the job's end")
    assert job.state == "done" and job.exit_code == 0, job.describe()
    assert job.elapsed > FOREGROUND_TIMEOUT  # its own wall clock, not the foreground's
    assert job.log.lines == steps and job.log.percent == 100
    assert job.log.tail(1) == f"step {steps}/{steps} 100%"
    # Recorded for the REST API, and announced to the server's scheduler.
    row = await until(lambda: stored(store, "long", "done"), 10, "the stored end")
    assert row["lines"] == steps and row["tail"].endswith("100%")
    ends = await store.list_schedules(SID, JOB_END)
    assert [r["payload"]["name"] for r in ends] == ["long"] and ends[0]["payload"]["wake"]
    assert woken == [1]


async def test_stop_ends_a_job_and_its_processes(sandbox: Sandbox, store: Store) -> None:
    jobs = jobs_in(sandbox)
    job = await jobs.start(SID, "echo started; sleep 300 & sleep 300; wait", "sleeper",
                           store=store)  # fmt: skip
    await until(lambda: job.log.lines == 1, 30, "its first line")
    t0 = time.monotonic()
    await jobs.stop(SID, "sleeper", "stopped by the test")
    assert job.state == "stopped" and job.error == "stopped by the test"
    assert job.run is not None and job.run.exit is not None  # reaped by the launcher
    assert time.monotonic() - t0 < 10
    assert not [p for p in sandbox.session_pids() if _cmdline(p).startswith("sleep 300")]
    assert await until(lambda: stored(store, "sleeper", "stopped"), 10, "the stored stop")


async def test_a_job_past_its_wall_clock_ends_as_timeout(sandbox: Sandbox, store: Store) -> None:
    jobs = jobs_in(sandbox, timeout=1.0)
    job = await jobs.start(SID, "sleep 60", "slow", store=store)
    await until(lambda: job.state != "running", 30, "the job's end")
    assert job.state == "timeout" and "c.JobsConfig.timeout" in job.error, job.describe()


async def test_a_job_over_its_memory_limit_ends_as_memory(sandbox: Sandbox, store: Store) -> None:
    jobs = jobs_in(sandbox, memory_mb=64, check_interval=0.05)
    code = "import time; b = b'x' * (400 << 20); print('allocated', flush=True); time.sleep(60)"
    job = await jobs.start(SID, f'python3 -c "{code}"', "hungry", store=store)
    await until(lambda: job.state != "running", 60, "the job's end")
    assert job.state == "memory" and "64 MiB" in job.error, job.describe()
    assert job.peak_memory > 64 << 20


async def test_jobs_of_an_ended_kernel_are_lost_not_gone(sandbox: Sandbox, store: Store) -> None:
    jobs = jobs_in(sandbox)
    job = await jobs.start(SID, "sleep 300", "orphan", store=store)
    await jobs.close()  # the kernel shuts down (or restarts)
    assert job.state == "lost" and "kernel" in job.error
    assert await stored(store, "orphan", "lost")
    # A kernel killed outright leaves its job recorded as running: the next kernel of the
    # session reports it lost, and announces its end.
    rec = await store.get_setting(setting_key(SID))
    rec["kernel"] = "a-dead-kernel"
    rec["jobs"].append({**rec["jobs"][-1], "name": "crashed", "state": "running"})
    await store.set_setting(setting_key(SID), rec)
    fresh = jobs_in(sandbox)
    lost = await fresh.recover(store, SID)
    assert [r["name"] for r in lost] == ["crashed"] and lost[0]["state"] == "lost"
    assert await stored(store, "crashed", "lost") and await stored(store, "orphan", "lost")
    ends = await store.list_schedules(SID, JOB_END)
    assert sorted(r["payload"]["name"] for r in ends) == ["crashed", "orphan"]
    # The next kernel's tools still tell of them, with the last lines their record kept.
    ctx = ToolContext(SID, LocalWorkspace(str(sandbox.workspace)), store=store,
                      services=ToolServices(jobs=fresh))  # fmt: skip
    status = (await ToolRegistry(JOB_TOOLS).call("job_status", {}, ctx)).output
    assert "crashed: lost (its kernel stopped" in status.text, status.text
    log = (await ToolRegistry(JOB_TOOLS).call("job_output", {"name": "orphan"}, ctx)).output
    assert log.ok and log.text.startswith("orphan: lost (its kernel shut down"), log.text


async def test_the_tools_start_follow_read_and_stop_jobs(sandbox: Sandbox, store: Store) -> None:
    jobs = jobs_in(sandbox)
    woken: list[int] = []
    ctx = ToolContext(SID, LocalWorkspace(str(sandbox.workspace)), store=store, sandbox=sandbox,
                      services=ToolServices(jobs=jobs, reminders=ReminderServices(
                          config=None, wake=lambda: woken.append(1))))  # type: ignore[arg-type]  # fmt: skip
    reg = ToolRegistry(JOB_TOOLS)
    out = (await reg.call("run_job", {"command": "echo 50%; echo out; echo err >&2",
                                      "name": "quick", "wake": True}, ctx)).output  # fmt: skip
    assert out.ok and "'quick'" in out.text and "woken" in out.text, out.text
    await until(lambda: jobs.get(SID, "quick").state == "done", 30, "the job's end")
    status = (await reg.call("job_status", {"name": "quick"}, ctx)).output
    assert '"state": "done"' in status.text and '"percent": 50.0' in status.text
    log = (await reg.call("job_output", {"name": "quick", "tail": 2}, ctx)).output
    assert log.text.endswith("out\nerr"), log.text
    await until(lambda: woken == [1], 10, "the scheduler told")
    out = (await reg.call("run_job", {"command": "sleep 300", "name": "quick"}, ctx)).output
    assert out.ok  # an ended job's name may be used again
    bad = (await reg.call("run_job", {"command": "sleep 1", "name": "quick"}, ctx)).output
    assert not bad.ok and "is running" in bad.text
    stopped = (await reg.call("stop_job", {"name": "all"}, ctx)).output
    assert stopped.text == "Stopped 1 jobs."
    assert jobs.get(SID, "quick").state == "stopped"
    missing = (await reg.call("job_output", {"name": "nope"}, ctx)).output
    assert not missing.ok and "no job 'nope'" in missing.text


async def test_a_foreground_timeout_says_how_to_get_longer(sandbox: Sandbox) -> None:
    ctx = ToolContext(SID, LocalWorkspace(str(sandbox.workspace)), sandbox=sandbox)
    out = (await ToolRegistry(CODE_TOOLS).call("bash", {"command": "sleep 30"}, ctx)).output
    assert not out.ok and "[error: timeout]" in out.text
    assert "None" not in out.text and "no exit code (killed)" in out.text, out.text
    assert f"timed out after {FOREGROUND_TIMEOUT:g} s wall clock" in out.text
    assert "c.SandboxConfig.timeout" in out.text and "up to 5 s" in out.text
    assert "run_job" in out.text
    rows = {r.name: r for r in sandbox.limits()}
    assert "c.SandboxConfig.timeout" in rows["wall clock per run"].mechanism


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


async def test_a_job_past_its_write_budget_ends_as_disk(sandbox: Sandbox, store: Store) -> None:
    jobs = jobs_in(sandbox, max_write_mb=2)
    cmd = "head -c 8M /dev/zero > big.bin && sync big.bin; sleep 60"
    job = await jobs.start(SID, cmd, "writer", store=store)
    await until(lambda: job.state != "running", 60, "the job's end")
    assert job.state == "disk" and "c.JobsConfig.max_write_mb" in job.error, job.describe()
    (sandbox.workspace / "big.bin").unlink(missing_ok=True)
