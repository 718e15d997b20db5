"""Helpers shared by the sandbox tests (imported by name: tests/ is not a package)."""

from __future__ import annotations

import os

from think_kernel.sandbox import Sandbox, SandboxConfig, Tier

SECRETS = {
    "OPENAI_API_KEY": "sk-test-secret-openai",
    "JUPYTER_TOKEN": "jupyter-secret-token",
    "THINK_LINK_TOKEN": "think-link-secret",
    "MY_DB_PASSWORD": "hunter2",
}


def make_config(tier: Tier, **kw: object) -> SandboxConfig:
    """Config that forces ``tier``."""
    return SandboxConfig(force_tier=int(tier), **kw)


def sandbox_processes(session_id: str) -> list[tuple[int, str, str]]:
    """(pid, state, cmdline) of live processes that carry this sandbox's env marker."""
    marker = f"THINK_SANDBOX={session_id}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if marker not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        state = stat[stat.rindex(b")") + 2 :].split()[0].decode()
        found.append((int(name), state, cmd))
    return found


def is_primed_bash(cmdline: str) -> bool:
    """A bash started ahead of its command (``prime_bash``), waiting for it."""
    return cmdline.startswith("bash -c IFS= read -r n <&4 && ")


def primed_pids(sb: Sandbox) -> list[int]:
    """Host pids of the sandbox's primed bash runs (alive, not zombies)."""
    return [p for p, state, cmd in sandbox_processes(sb.session_id)
            if is_primed_bash(cmd) and state != "Z"]  # fmt: skip


def leftovers(sb: Sandbox) -> list[tuple[int, str, str]]:
    """Sandbox processes beyond the zygote, its bash fork server, the warm worker, both
    fork servers' spares and the primed bash runs (bwrap itself excluded).

    The first ones share the zygote's command line (they are forks), the primed ones have
    theirs, so anything else - or more of them than expected, or a zombie - is a leftover.
    """
    procs = [p for p in sandbox_processes(sb.session_id) if "bwrap" not in p[2].split(" ")[0]]
    ours = [p for p in procs if "_think_zygote.py" in p[2] and p[1] != "Z"]
    primed = [p for p in procs if is_primed_bash(p[2]) and p[1] != "Z"]
    if len(ours) <= 3 + 2 * sb.config.prefork and len(primed) <= sb.config.prime_bash:
        return [p for p in procs if p not in ours and p not in primed]
    return procs


def host_pid_of(session_id: str, inside_pid: int) -> int:
    """The host pid of a sandbox process known by its pid inside the sandbox (tier 1 has a
    pid namespace of its own; on tiers 2 and 3 both are the same)."""
    for pid, _state, _cmd in sandbox_processes(session_id):
        try:
            with open(f"/proc/{pid}/status") as f:
                nspid = next(line.split()[1:] for line in f if line.startswith("NSpid:"))
        except (OSError, StopIteration):
            continue
        if int(nspid[-1]) == inside_pid:
            return pid
    raise AssertionError(f"no process of the sandbox has pid {inside_pid} inside it")


def parent_of(pid: int) -> int:
    """The parent pid of a host process."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read()
    return int(stat[stat.rindex(b")") + 2 :].split()[1])


def maps_mention(pid: int, needle: str) -> bool:
    """Whether ``needle`` is in the memory map of a host process (a module it loaded)."""
    with open(f"/proc/{pid}/maps") as f:
        return needle in f.read()
