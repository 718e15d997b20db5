"""Big commands and code, as a model writes them (a script in a heredoc, data inline), on every
tier this machine has:

- several at once, each longer than the launcher's socket buffer: the kernel sent their start
  requests in pieces, and a piece of one between two pieces of another was a line the zygote
  could not read. It exited, and every run of the session died with it (or, with bigger
  requests, the session hung). Inside, the zygote passed a request on to a pre-forked child
  with one ``sendmsg``, which a SIGCHLD (other runs ending) could cut short: the child read
  half a request and exited, "before reporting";
- a bash command over 128 KiB, the most ``bash -c`` takes as its argument: it failed with a
  Python traceback of our own (exit 70); it is now given to a bash that reads it from its
  channel, as a primed one does;
- a command with a NUL, which no bash can run: a clear error, not a traceback.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

import pytest
from sandbox_helpers import make_config, primed_pids

from tests.waiting import until
from think_kernel.sandbox import Sandbox, Tier, available_tiers

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow

in_session_loop = pytest.mark.asyncio(loop_scope="session")  # where the sandbox fixture lives

# Under 128 KiB (a bash -c argument), over the socket buffer once a few are queued.
BIG = 130_000


def _bash(i: int, size: int, char: str = "a") -> str:
    return f"x='{char * size}'; echo \"n{i} ${{#x}}\""


@in_session_loop
async def test_big_requests_at_once_all_run_and_the_session_lives(sandbox: Sandbox) -> None:
    bash = [sandbox.run_bash(_bash(i, BIG)) for i in range(6)]
    fresh = [
        sandbox.run_python(f"x = '{'b' * 300_000}'\nprint('p{i}', len(x))", fresh=True)
        for i in range(4)
    ]
    results = await asyncio.wait_for(asyncio.gather(*bash, *fresh), 60)
    for i, res in enumerate(results[:6]):
        assert res.ok and res.stdout == f"n{i} {BIG}\n", res
    for i, res in enumerate(results[6:]):
        assert res.ok and res.stdout == f"p{i} 300000\n", res
    res = await sandbox.run_python("print('warm', 1 + 1)")
    assert res.ok and res.stdout == "warm 2\n", res


@in_session_loop
async def test_a_bash_command_over_128_kib_runs_in_the_primed_bash(sandbox: Sandbox) -> None:
    assert (await sandbox.run_bash("true")).ok
    await until(lambda: len(primed_pids(sandbox)) >= 1, 10)
    waiting = set(primed_pids(sandbox))
    # Two bytes a character: 400,000 bytes, over the limit in bytes, not in characters.
    res = await sandbox.run_bash(_bash(0, 200_000, "é"))
    assert res.ok and res.stdout == "n0 200000\n", res
    # The bash that was waiting took it (and has ended): it did not wait on beside a
    # bash started for the command.
    assert not waiting & set(primed_pids(sandbox))


@pytest.mark.parametrize("tier", available_tiers(), ids=lambda t: t.name)
async def test_a_bash_command_over_128_kib_runs_without_primed_bash(tier: Tier) -> None:
    ws = Path(tempfile.mkdtemp(prefix="think-sbx-test-big-"))
    try:
        config = make_config(tier, prime_bash=0, preload_modules=[], timeout=60)
        async with await Sandbox.create(ws, "big-commands", config) as sb:
            assert not primed_pids(sb)
            for size in (140_000, 1_000_000):
                res = await sb.run_bash(_bash(1, size, "é"))
                assert res.ok and res.stdout == f"n1 {size}\n", res
            # Several at once, over the socket buffer: each gets a bash of its own.
            res3 = await asyncio.gather(*(sb.run_bash(_bash(i, 300_000)) for i in range(3)))
            assert [r.stdout for r in res3] == [f"n{i} 300000\n" for i in range(3)], res3
            assert not primed_pids(sb)
            # A long command that fails says so as bash does, with its exit code.
            res = await sb.run_bash(f": '{'c' * 200_000}'; echo to-err >&2; exit 3")
            assert res.exit_code == 3 and res.stderr == "to-err\n", res
    finally:
        shutil.rmtree(ws, ignore_errors=True)


@in_session_loop
async def test_a_command_with_a_nul_is_refused_clearly(sandbox: Sandbox) -> None:
    res = await sandbox.run_bash("echo a\0b")
    assert not res.ok and res.error_category == "runtime", res
    assert "NUL" in res.error and "Traceback" not in res.stderr + res.error, res
    res = await sandbox.run_bash("echo still")
    assert res.ok and res.stdout == "still\n", res
