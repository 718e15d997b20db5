"""Helpers shared by the sandbox tests (imported by name: tests/ is not a package)."""

from __future__ import annotations

import asyncio
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


async def wait_for(predicate, within: float = 5.0, interval: float = 0.02):  # type: ignore[no-untyped-def]
    """Poll ``predicate`` until it returns something truthy (or fail after ``timeout``)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + within
    while True:
        value = predicate()
        if value:
            return value
        if loop.time() > end:
            raise AssertionError(f"condition not met within {within} s: {predicate!r}")
        await asyncio.sleep(interval)


def leftovers(sb: Sandbox) -> list[tuple[int, str, str]]:
    """Sandbox processes beyond the zygote, warm worker and spares (bwrap itself excluded).

    These share the zygote's command line (they are forks), so anything else - or more of
    them than expected, or a zombie - is a leftover.
    """
    procs = [p for p in sandbox_processes(sb.session_id) if "bwrap" not in p[2].split(" ")[0]]
    ours = [p for p in procs if "_think_zygote.py" in p[2] and p[1] != "Z"]
    if len(ours) <= 2 + sb.config.prefork:  # zygote, warm worker, idle pre-forked children
        return [p for p in procs if p not in ours]
    return procs
