"""Attack class: exhausting the machine from inside one session.

Limits must hold across processes: memory and process count per session, scratch space per
session, bytes written per run; each number and its mechanism is reported by the sandbox.
"""

from __future__ import annotations

import asyncio
import textwrap

import pytest
from conftest import SandboxFactory

from think_kernel.sandbox import Tier

MIB = 1 << 20

# Five processes, each touching 100 MiB (five processes once took 5 GB under a per-process
# limit). Each reports its fate on its own line.
SPREAD = textwrap.dedent("""
    import os, sys
    pids = []
    for i in range({n}):
        pid = os.fork()
        if pid == 0:
            block = bytearray({mib} * 1024 * 1024)
            for j in range(0, len(block), 4096):
                block[j] = 1
            print("HELD", i, flush=True)
            sys.stdin = None
            import time; time.sleep(2)
            os._exit(0)
        pids.append(pid)
    codes = [os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids]
    print("CODES", codes)
""")


async def test_memory_is_capped_across_processes(open_sandbox: SandboxFactory, tier: Tier) -> None:
    async with open_sandbox("mem", session_memory_mb=256, memory_mb=1024) as sb:
        rows = {r.name: r for r in sb.limits()}
        assert rows["memory per session"].value == "256 MiB"
        assert sb.cgroup is not None and "memory" in sb.cgroup.mechanisms  # root: cgroup v1
        assert rows["memory per session"].mechanism == sb.cgroup.mechanisms["memory"]
        res = await sb.run_python(SPREAD.format(n=5, mib=100), fresh=True, timeout=60)
        assert res.ok, res
        codes = eval(res.stdout.split("CODES")[1])
        assert -9 in codes, res.stdout  # the kernel killed some of them: 500 MiB > 256 MiB
        assert sb.cgroup.peak_memory() <= 256 * MIB
        # One process over the session limit on its own is a memory error, and says why.
        big = await sb.run_python(
            "b = bytearray(400 * 1024 * 1024)\nfor j in range(0, len(b), 4096): b[j] = 1"
        )
        assert big.error_category == "memory" and "session_memory_mb" in big.error, big
        # The same from bash, which forks the command when it is not its last one, or when
        # the bash was started ahead of the command (prime_bash, the second one here): the
        # run then ends with 128 + 9, not by the signal.
        alloc = "b = bytearray(400 << 20); [b.__setitem__(j, 1) for j in range(0, len(b), 4096)]"
        for command in (f'python3 -c "{alloc}" && echo done', f'python3 -c "{alloc}"'):
            res = await sb.run_bash(command)
            assert res.error_category == "memory" and "session_memory_mb" in res.error, res
        # The legitimate use: processes that fit together run to the end.
        fits = await sb.run_python(SPREAD.format(n=3, mib=50), fresh=True, timeout=60)
        assert fits.ok and "CODES [0, 0, 0]" in fits.stdout, fits


async def test_process_count_is_capped_per_session(open_sandbox: SandboxFactory) -> None:
    async with open_sandbox("procs", max_processes=40) as sb:
        rows = {r.name: r for r in sb.limits()}
        assert rows["processes per session"].value == "40"
        assert "pids.max" in rows["processes per session"].mechanism
        bomb = textwrap.dedent("""
            import os, time
            n = 0
            try:
                while n < 500:
                    if os.fork() == 0:
                        time.sleep(60)
                        os._exit(0)
                    n += 1
            except OSError:
                pass
            print("STARTED", n, flush=True)
            while not os.path.exists("release"):
                time.sleep(0.02)
        """)
        # Two runs of one session at once share its quota.
        (sb.workspace / "release").unlink(missing_ok=True)
        counts: list[int] = []
        both = asyncio.Event()

        def seen(stream: str, text: str) -> None:
            counts.extend(int(x.split()[1]) for x in text.splitlines() if x.startswith("STARTED"))
            if len(counts) == 2:
                both.set()

        runs = [
            asyncio.ensure_future(sb.run_python(bomb, fresh=True, timeout=40, on_output=seen))
            for _ in range(2)
        ]
        await asyncio.wait_for(both.wait(), 30)
        (sb.workspace / "release").write_text("")
        for run in runs:
            assert (await run).ok
        assert sum(counts) < 40 and min(counts) >= 0, counts
        ok = await sb.run_bash("for i in 1 2 3 4 5 6 7 8; do sleep 0.2 & done; wait; echo done")
        assert ok.stdout == "done\n", ok


@pytest.mark.parametrize("cgroups", [True, False], ids=["cgroup", "process-tree"])
async def test_writes_past_the_budget_stop_the_run(
    open_sandbox: SandboxFactory, cgroups: bool
) -> None:
    # Without a cgroup (a kernel that is not root), the session is the launcher's tree.
    async with open_sandbox("disk", max_write_mb=64, write_check_interval=0.05,
                            cgroups=cgroups) as sb:  # fmt: skip
        assert (sb.cgroup is not None) == cgroups
        rows = {r.name: r for r in sb.limits()}
        assert rows["disk writes per run"].value == "64 MiB"
        attacks = [
            sb.run_python(  # one process, one big file
                "with open('big.bin', 'wb') as f:\n"
                "    for _ in range(2048): f.write(b'x' * (1 << 20)); f.flush()",
                fresh=True,
            ),
            sb.run_bash(  # many short-lived children, each reaped long before the check
                "for i in $(seq 1 200); do head -c 4M /dev/zero > part$i.bin; done"
            ),
            sb.run_python(  # a warm worker, several processes at once
                "import subprocess\nps = [subprocess.Popen(['dd', 'if=/dev/zero', f'of=p{i}.bin',"
                " 'bs=1M', 'count=400', 'status=none']) for i in range(4)]\n"
                "[p.wait() for p in ps]"
            ),
        ]
        for attack in attacks:
            res = await attack
            assert res.error_category == "disk", res
            assert "max_write_mb" in res.error
        written = sum(p.stat().st_size for p in sb.workspace.glob("*.bin"))
        assert written < 3 * 64 * MIB + 3 * 200 * MIB, written  # stopped well before the end
        for p in sb.workspace.glob("*.bin"):
            p.unlink()
        # The legitimate use: a run that writes less than the budget is not disturbed, and the
        # budget is per run (the warm worker was restarted after its kill).
        for _ in range(2):
            fine = await sb.run_bash("head -c 40M /dev/zero > ok.bin && stat -c %s ok.bin")
            assert fine.ok and fine.stdout == f"{40 * MIB}\n", fine


async def test_scratch_space_is_bounded(open_sandbox: SandboxFactory, tier: Tier) -> None:
    async with open_sandbox("scratch", scratch_mb=32, max_write_mb=48,
                            write_check_interval=0.05) as sb:  # fmt: skip
        rows = {r.name: r for r in sb.limits()}
        fill = await sb.run_bash('head -c 100M /dev/zero > "$TMPDIR/fill"; echo rc=$?')
        if tier == Tier.BUBBLEWRAP:
            assert rows["scratch space"].value == "32 MiB"
            assert fill.stdout == "rc=1\n" and "No space left" in fill.stderr, fill
            tmp = await sb.run_bash("head -c 100M /dev/zero > /tmp/fill; echo rc=$?")
            assert tmp.stdout == "rc=1\n" and "No space left" in tmp.stderr, tmp  # its own /tmp
        else:  # a host directory: its writes count in the run's disk budget
            assert "disk budget" in rows["scratch space"].mechanism
            # One fast `head` may end between two of the budget's checks: a paced writer that
            # only the budget stops (100 MiB in 1 MiB steps) is what this tier must stop.
            fill = await sb.run_bash(
                'for i in $(seq 100); do head -c 1M /dev/zero >> "$TMPDIR/fill"; sleep 0.01; '
                "done; echo rc=$?"
            )
            assert fill.error_category == "disk", fill
        await sb.run_bash('rm -f "$TMPDIR/fill"')
        small = await sb.run_bash('head -c 8M /dev/zero > "$TMPDIR/ok" && stat -c %s "$TMPDIR/ok"')
        assert small.ok and small.stdout == f"{8 * MIB}\n", small


async def test_a_memory_kill_is_named_when_the_kernel_looks_late(
    open_sandbox: SandboxFactory, kernel_looks_late: None
) -> None:
    # A loaded kernel may first look at a run after the run is already gone. Its memory kill
    # is still a memory error: the session's OOM-kill count is read before the run starts.
    alloc = "b = bytearray(400 << 20); [b.__setitem__(j, 1) for j in range(0, len(b), 4096)]"
    async with open_sandbox("late", session_memory_mb=256, memory_mb=1024) as sb:
        for command in (f'python3 -c "{alloc}" && echo done', f'python3 -c "{alloc}"'):
            res = await sb.run_bash(command)
            assert res.error_category == "memory" and "session_memory_mb" in res.error, res
        for fresh in (True, False):
            res = await sb.run_python(alloc, fresh=fresh)
            assert res.error_category == "memory" and "session_memory_mb" in res.error, res
