"""Attack: the bash started ahead of the next command (``prime_bash``) waits as the session's
uid, so the session's other code can reach it while it waits. It must not be able to choose
that command, nor to put words in its output; killing it costs only the head start.

Its command comes on a socket (which /proc does not reopen); its stdout and stderr are pipes,
which a process of the same uid can reopen through /proc: not under a root kernel (the pipes
are root's), but under a kernel run by the user, where sandboxed code has the user's uid.

The warm Python worker is the attacker: it runs between bash commands without using the
primed bash itself."""

from __future__ import annotations

import asyncio
import os

from security_helpers import host_processes

from tests.waiting import until

PRIMED = "bash -c IFS= read -r n <&4 && "

ATTACK = r"""
import os
found, planted, refused = 0, 0, set()
for name in os.listdir("/proc"):
    if not name.isdigit() or int(name) == os.getpid():
        continue
    try:
        with open(f"/proc/{name}/cmdline", "rb") as f:
            if not f.read().startswith(b"bash\0-c\0IFS= read -r n <&4 && "):
                continue
        with open(f"/proc/{name}/status", "rb") as f:  # ours: tiers 2 and 3 see every one
            if f"Uid:\t{os.getuid()}\t".encode() not in f.read():
                continue
    except OSError:
        continue
    found += 1
    # Its command channel: a socket, which /proc does not reopen.
    try:
        with open(f"/proc/{name}/fd/4", "wb") as f:
            f.write(b"12\nrm -rf ~/x\n")
        refused.add("written")
    except OSError as e:
        refused.add(str(e.errno))
    # Its stdout and stderr: pipes; write what the next command would "say".
    for fd in (1, 2):
        try:
            with open(f"/proc/{name}/fd/{fd}", "wb") as f:
                f.write(b"PLANTED\n")
            planted += 1
        except OSError:
            pass
print(found, planted, ",".join(sorted(refused)))
"""

ENXIO, EACCES = "6", "13"


def plant(pid: int) -> None:
    """Write into the stdout and stderr of ``pid`` through /proc."""
    for fd in (1, 2):
        with open(f"/proc/{pid}/fd/{fd}", "wb") as f:
            f.write(b"PLANTED\n")


async def _wait_primed(sb, n: int = 1) -> list[int]:  # type: ignore[no-untyped-def]
    assert await until(lambda: len(host_processes(sb.session_id, PRIMED)) == n, 10)
    return host_processes(sb.session_id, PRIMED)


async def test_no_command_and_no_output_can_be_slipped_into_the_next_bash(open_sandbox) -> None:  # type: ignore[no-untyped-def]
    async with open_sandbox("primed") as sb:
        assert (await sb.run_bash("echo first")).stdout == "first\n"
        waiting = await _wait_primed(sb)
        attack = await sb.run_python(ATTACK)
        assert attack.ok, attack
        found, planted, refused = (attack.stdout.split() + ["", ""])[:3]
        # A socket is not reopened (ENXIO); where the bash fork server has a Landlock domain
        # of its own (tier 2), /proc refuses even to look (EACCES).
        assert found == "1" and refused in (ENXIO, EACCES), attack.stdout
        if os.geteuid() == 0:
            # A root kernel's pipes belong to root: the session uid cannot reopen them.
            assert planted == "0", attack.stdout
            # Under a kernel of the user's own uid it can: do what it would.
            plant(waiting[0])
        else:
            assert planted == "2", attack.stdout
        res = await sb.run_bash("echo mine; echo also >&2")
        assert (res.stdout, res.stderr, res.exit_code) == ("mine\n", "also\n", 0), res
        # The tampered bash was put down, not used, and a clean one waits again.
        fresh = await _wait_primed(sb)
        assert waiting[0] not in fresh
        res = await sb.run_bash("echo clean")
        assert (res.stdout, res.stderr) == ("clean\n", ""), res


# Kills the first primed bash of its session it sees (mapfile and case: no fork per
# process), says so, and stays a while.
KILLER = r"""
for i in $(seq 1000); do
  for p in /proc/[0-9]*; do
    mapfile -d '' argv < "$p/cmdline" 2>/dev/null || continue
    case "${argv[2]}" in
      "IFS= read -r n <&4 && "*)
        kill -9 "${p#/proc/}" 2>/dev/null && echo "killed ${p#/proc/}" && exec sleep 3;;
    esac
  done
  sleep 0.01
done
exit 1
"""


async def test_killing_the_waiting_bash_costs_only_its_head_start(open_sandbox) -> None:  # type: ignore[no-untyped-def]
    """Concurrent code of the session kills the bash that waits for the next command (on
    tier 2 only a bash run can: Landlock scopes signals to a domain, and the bash fork
    server has one of its own)."""
    async with open_sandbox("primed-kill") as sb:
        said = asyncio.Event()
        killer = asyncio.ensure_future(
            sb.run_bash(KILLER, on_output=lambda _s, text: said.set() if "killed" in text else None)
        )
        assert (await sb.run_bash("true")).ok  # its end starts the bash the killer kills
        await asyncio.wait_for(said.wait(), 10)
        assert await until(lambda: not host_processes(sb.session_id, PRIMED), 5)
        res = await sb.run_bash("echo after")  # the killer still runs
        assert (res.stdout, res.exit_code) == ("after\n", 0), res
        assert not killer.done()
        killer.cancel()
        for i in range(3):
            res = await sb.run_bash(f"echo again{i}")
            assert (res.stdout, res.exit_code) == (f"again{i}\n", 0), res
