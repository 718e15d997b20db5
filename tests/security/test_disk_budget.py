"""Attack class: filling the disk one run at a time.

The write budget is the session's, not handed out afresh to each run: runs that each stay
under the per-run limit are stopped, then refused, once together they pass
``session_write_mb``. And no run starts (or goes on) while the filesystem holding the
workspace has less free space than ``min_free_mb``. Each refusal is error category ``disk``
with the setting to change in its message; ``%think_status`` shows used / budget / floor.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest
from conftest import SandboxFactory

from think_kernel.sandbox import SandboxConfig, Tier
from think_kernel.sandbox.limits import describe_limits
from think_kernel.sandbox.meter import free_bytes

MIB = 1 << 20

# Writes 1 MiB every 10 ms until a budget stops it (150 MiB at most, under the per-run limit of
# these tests): a writer that finished between two checks would pass whatever the budget did,
# on a loaded machine.
WRITE_150 = (
    "import time\nwith open('b.bin', 'wb') as f:\n"
    "    for _ in range(150): f.write(b'x' * (1 << 20)); f.flush(); time.sleep(0.01)"
)
WRITE_20 = "with open('a{}.bin', 'wb') as f: f.write(b'x' * (20 << 20))"


async def test_two_runs_together_past_the_session_budget_stop_then_refuse(
    open_sandbox: SandboxFactory,
) -> None:
    async with open_sandbox("budget", session_write_mb=96, max_write_mb=200,
                            write_check_interval=0.05) as sb:  # fmt: skip
        rows = {r.name: r for r in sb.limits()}
        assert rows["disk writes per session"].value == "0 MiB used of 96 MiB"
        first = await sb.run_bash("head -c 60M /dev/zero > a.bin && stat -c %s a.bin")
        assert first.ok and first.stdout == f"{60 * MIB}\n", first

        # Under the per-run limit (200 MiB), but past what the session has left.
        second = await sb.run_python(WRITE_150, fresh=True)
        assert second.error_category == "disk", second
        assert "session_write_mb" in second.error and "96 MiB allowed per session" in second.error
        assert (sb.workspace / "b.bin").stat().st_size < 150 * MIB

        third = await sb.run_bash("echo ran > c.txt")
        assert not third.ok and third.error_category == "disk", third
        assert third.error.startswith("refused to run: ") and "session_write_mb" in third.error
        assert not (sb.workspace / "c.txt").exists()  # refused before it started
        warm = await sb.run_python("print('ran')")
        assert warm.error_category == "disk" and warm.stdout == "", warm
        # Deleting the files does not give the bytes back: the budget counts writes.
        for p in sb.workspace.glob("*.bin"):
            p.unlink()
        assert (await sb.run_bash("true")).error_category == "disk"
        used = {r.name: r for r in sb.limits()}["disk writes per session"].value
        assert used.endswith(" MiB used of 96 MiB") and int(used.split()[0]) >= 96, used


async def test_runs_at_once_are_counted_once(open_sandbox: SandboxFactory) -> None:
    """Two runs writing at the same time share the session's count: neither is charged
    for the other's writes."""
    async with open_sandbox("together", session_write_mb=100, max_write_mb=0,
                            write_check_interval=0.02) as sb:  # fmt: skip
        # Each writes 40 MiB, then waits for the other, so both watches see both writes.
        both = [
            sb.run_bash(
                f"head -c 40M /dev/zero > w{i}.bin && touch done{i} && "
                f"while [ ! -e done{1 - i} ]; do sleep 0.01; done; echo ok"
            )
            for i in (0, 1)
        ]
        results = await asyncio.gather(*both)
        assert [r.stdout for r in results] == ["ok\n", "ok\n"], results
        value = {r.name: r for r in sb.limits()}["disk writes per session"].value
        assert 80 <= int(value.split()[0]) < 100, value
        after = await sb.run_bash("echo still")
        assert after.ok and after.stdout == "still\n", after


async def test_a_run_the_kernel_looks_at_late_is_charged_in_full(
    open_sandbox: SandboxFactory, kernel_looks_late: None
) -> None:
    # A loaded kernel may first look at a run after it wrote (here: after it ended). What it
    # wrote is still charged: the session's written bytes are read before the run starts.
    async with open_sandbox("late", session_write_mb=100, max_write_mb=0) as sb:
        for i, run in enumerate(
            (
                lambda: sb.run_bash("head -c 20M /dev/zero > a0.bin"),
                lambda: sb.run_python(WRITE_20.format(1), fresh=True),
            )
        ):
            assert (await run()).ok
            used = {r.name: r for r in sb.limits()}["disk writes per session"].value
            assert int(used.split()[0]) >= 20 * (i + 1), (i, used)


async def test_runs_are_refused_below_the_free_space_floor(
    open_sandbox: SandboxFactory, workspace: Path
) -> None:
    free = free_bytes(workspace)
    assert free is not None
    above = free // MIB + 1024  # more than the disk has free: a full disk, as the kernel sees it
    async with open_sandbox("floor", min_free_mb=above) as sb:
        rows = {r.name: r for r in sb.limits()}
        assert rows["free-space floor"].value.startswith(f"{above} MiB (")
        assert "free now" in rows["free-space floor"].value
        for res in (
            await sb.run_bash("echo ran > marker"),
            await sb.run_python("open('marker', 'w').write('ran')"),
            await sb.run_python("open('marker', 'w').write('ran')", fresh=True),
        ):
            assert not res.ok and res.error_category == "disk", res
            assert res.error.startswith("refused to run: the filesystem holding the workspace")
            assert f"under the {above} MiB it must keep (min_free_mb)" in res.error
        assert not (sb.workspace / "marker").exists()
    # The legitimate use: a floor below the free space lets runs through.
    async with open_sandbox("roomy", min_free_mb=max(1, free // MIB // 2)) as sb:
        ok = await sb.run_bash("echo ran")
        assert ok.ok and ok.stdout == "ran\n", ok


@pytest.fixture
def small_disk(workspace: Path):
    """The workspace on a 64 MiB tmpfs of its own (the test is root: it mounts one)."""
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m,mode=0755", "tmpfs",
                    str(workspace)], check=True)  # fmt: skip
    try:
        yield workspace
    finally:
        subprocess.run(["umount", "-l", str(workspace)], check=False)


async def test_a_run_filling_the_disk_stops_at_the_floor(
    open_sandbox: SandboxFactory, small_disk: Path
) -> None:
    """A small filesystem under the workspace: a run that writes it full is stopped when
    the free space falls under the floor, and the next run is refused."""
    async with open_sandbox("fill", min_free_mb=24, write_check_interval=0.02) as sb:
        fill = await sb.run_python(
            "import time\nwith open('fill.bin', 'wb') as f:\n"
            "    for _ in range(60): f.write(b'x' * (1 << 20)); f.flush(); time.sleep(0.01)",
            fresh=True,
        )
        assert fill.error_category == "disk" and "min_free_mb" in fill.error, fill
        left = free_bytes(small_disk)
        assert left is not None and left > 8 * MIB  # stopped before the disk was full
        refused = await sb.run_bash("echo ran")
        assert refused.error_category == "disk" and "refused to run" in refused.error
        (small_disk / "fill.bin").unlink()
        again = await sb.run_bash("echo ran")
        assert again.ok and again.stdout == "ran\n", again  # room again: runs go on


def test_status_shows_the_configured_budget_and_floor() -> None:
    rows = {r.name: r for r in describe_limits(
        SandboxConfig(session_write_mb=512, min_free_mb=2048), Tier.RLIMITS, None, False,
        None, [], started=False,
    )}  # fmt: skip
    assert rows["disk writes per session"].value == "512 MiB"
    assert rows["free-space floor"].value == "2048 MiB"
    assert "refused" in rows["free-space floor"].mechanism
