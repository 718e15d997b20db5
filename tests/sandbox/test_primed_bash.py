"""Bash runs started ahead of their commands (``prime_bash``): a command runs in a
bash that already waits for it, and behaves as under ``bash -c``."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from sandbox_helpers import leftovers, make_config, primed_pids

from tests.waiting import until
from think_kernel.sandbox import Sandbox, Tier, available_tiers
from think_kernel.sandbox.launch import INSIDE_DIR

sys.path.insert(0, str(INSIDE_DIR))
from _think_child import CHANNEL_FD, PRIMED_BASH  # noqa: E402

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow

in_session_loop = pytest.mark.asyncio(loop_scope="session")  # where the sandbox fixture lives


def inside_pid(host_pid: int) -> int:
    """The pid the sandbox knows ``host_pid`` by (tier 1 has a pid namespace of its own)."""
    with open(f"/proc/{host_pid}/status") as f:
        return int(next(line.split()[-1] for line in f if line.startswith("NSpid:")))


@in_session_loop
async def test_the_next_command_runs_in_the_bash_started_for_it(sandbox: Sandbox) -> None:
    assert (await sandbox.run_bash("true")).ok
    assert await until(lambda: len(primed_pids(sandbox)) == 1, 10)
    waiting = primed_pids(sandbox)[0]
    inside = inside_pid(waiting)
    res = await sandbox.run_bash("echo $$")
    assert res.ok and res.stdout == f"{inside}\n", (inside, res)
    # Its successor is started once the run is over, and nothing else is left behind.
    assert await until(lambda: primed_pids(sandbox) not in ([], [waiting]), 10)
    assert await until(lambda: not leftovers(sandbox), 5, every=0.05)


@in_session_loop
async def test_a_primed_command_behaves_as_under_bash_c(sandbox: Sandbox) -> None:
    await sandbox.run_bash("true")  # the ones below are primed (the test above shows how)
    cases = [
        # $0, no arguments, and none of the bootstrap's variables
        ('printf "%s|%s|" "$0" "$#"; echo "${c-none}${n-none}"', 0, "bash|0|nonenone\n", ""),
        ("echo out; echo err >&2; exit 7", 7, "out\n", "err\n"),
        ("echo 'unclosed", 2, "", "unexpected EOF"),
        ("printf 'héllo ✓  \\n'; printf '%s' '  trailing  '", 0, "héllo ✓  \n  trailing  ", ""),
        ("cat <<'EOF'\nline $1\n  two\nEOF\necho $LINENO", 0, "line $1\n  two\n5\n", ""),
        # The channel the command came on is closed before it runs.
        ("[ -e /proc/$$/fd/4 ] && echo open || echo closed", 0, "closed\n", ""),
        (
            "sh -c 'for f in 0 1 2 3 4 5 6; do [ -e /proc/$$/fd/$f ] && echo $f; done; true'",
            0,
            "0\n1\n2\n3\n",
            "",
        ),
        ("kill -9 $$", None, "", ""),
    ]
    for command, code, stdout, stderr in cases:
        res = await sandbox.run_bash(command)
        assert res.stdout == stdout, (command, res)
        assert stderr in res.stderr and (stderr or not res.stderr), (command, res)
        if code is None:
            assert res.error_category == "killed", (command, res)
        else:
            assert res.exit_code == code, (command, res)
    # A long command (over a socket buffer) arrives whole.
    blob = "x" * 100_000
    res = await sandbox.run_bash(f"v='{blob}'; echo ${{#v}}")
    assert res.ok and res.stdout == "100000\n", res


def _bootstrap(data: bytes) -> tuple[int, bytes, bytes, list[str]]:
    """Run the primed bootstrap in a plain bash (no sandbox), fed ``data`` on its channel:
    its exit status, what it said on the channel, its stdout and the files it made."""
    mine, theirs = socket.socketpair()
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen(
            ["bash", "-c", f"exec {CHANNEL_FD}<&0 0</dev/null; {PRIMED_BASH}"],
            stdin=theirs, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tmp,
        )  # fmt: skip
        theirs.close()
        mine.sendall(data)
        mine.shutdown(socket.SHUT_WR)  # EOF: all of it, or the kernel went away
        out, _ = proc.communicate(timeout=10)
        said = mine.recv(1000)
        mine.close()
        return proc.returncode, said, out, sorted(p.name for p in Path(tmp).iterdir())


def test_a_command_cut_short_does_not_run() -> None:
    """The kernel went away mid-send: nothing of the command runs (exit 111), and the
    bootstrap does not say it took it."""
    took = b'{"ev": "took"}\n'
    cmd = b"touch made; echo ran"
    assert _bootstrap(b"%d\n" % len(cmd) + cmd) == (0, took, b"ran\n", ["made"])
    assert _bootstrap(b"%d\n" % len(cmd) + cmd[:12]) == (111, b"", b"", [])  # "touch made; "
    assert _bootstrap(b"") == (111, b"", b"", [])
    # Bytes are counted, whatever the locale: a multibyte command arrives whole.
    text = "echo 'ünï ✓'; touch ✓".encode()
    assert _bootstrap(b"%d\n" % len(text) + text) == (0, took, "ünï ✓\n".encode(), ["✓"])


async def test_without_priming_no_bash_waits() -> None:
    ws = Path(tempfile.mkdtemp(prefix="think-sbx-test-noprime-"))
    try:
        config = make_config(available_tiers()[0], prime_bash=0, preload_modules=[])
        async with await Sandbox.create(ws, "noprime", config) as sb:
            for i in range(3):
                res = await sb.run_bash(f"echo {i}")
                assert res.ok and res.stdout == f"{i}\n", res
            assert not primed_pids(sb)
    finally:
        shutil.rmtree(ws, ignore_errors=True)


@in_session_loop
async def test_a_primed_bash_that_dies_before_taking_its_command(sandbox: Sandbox) -> None:
    """It was handed the command but died (killed by other code of the session) before it
    read it: the command runs once, in a bash started the usual way."""
    assert (await sandbox.run_bash("rm -f once.txt")).ok
    assert await until(lambda: len(primed_pids(sandbox)) == 1, 10)
    waiting = primed_pids(sandbox)[0]
    inside = inside_pid(waiting)
    os.kill(waiting, signal.SIGSTOP)  # it cannot read what it is sent
    task = asyncio.ensure_future(sandbox.run_bash("echo x >> once.txt; echo $$"))
    assert await until(lambda: not sandbox._primed, 5)  # handed out
    await asyncio.sleep(0.1)
    assert not task.done()
    os.kill(waiting, signal.SIGKILL)
    res = await asyncio.wait_for(task, 10)
    assert res.ok and res.stdout.strip() != str(inside), res
    assert (sandbox.workspace / "once.txt").read_text() == "x\n"


@pytest.mark.parametrize("tier", available_tiers(), ids=lambda t: t.name)
async def test_a_wedged_launcher_under_a_primed_command(tier: Tier) -> None:
    """The launcher is stopped: a primed bash still runs its command, but its exit status
    cannot come back. Once its output has ended the launcher is asked, found wedged and
    replaced (not after the command's whole timeout), and the next command runs."""
    ws = Path(tempfile.mkdtemp(prefix="think-sbx-test-wedge-"))
    try:
        config = make_config(tier, preload_modules=[], timeout=30)
        async with await Sandbox.create(ws, "wedge", config) as sb:
            assert (await sb.run_bash("true")).ok
            assert await until(lambda: len(primed_pids(sb)) == 1, 10)
            # ...and the kernel heard it was spawned (the zygote relays that: stopped before,
            # the command would not take the waiting bash, but start on a new launcher).
            assert await until(lambda: sb._primed and sb._primed[0].spawned.is_set(), 10)
            zygote = sb.launcher_pid()
            assert zygote is not None
            os.kill(zygote, signal.SIGSTOP)
            res = await sb.run_bash("echo back")
            assert res.stdout == "back\n" and not res.ok, res
            assert "exit status" in res.error and res.duration_ms < 5000, res
            assert any("replaced" in w for w in res.warnings), res
            again = await sb.run_bash("echo again")
            assert again.ok and again.stdout == "again\n", again
    finally:
        shutil.rmtree(ws, ignore_errors=True)
