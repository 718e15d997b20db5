"""Running every containment probe on one tier, in two throwaway sessions::

    report = await run_probes(Tier.BUBBLEWRAP, SandboxConfig())
    print(report.markdown())

Each probe starts from what a hostile snippet would do and records whether the sandbox
contained it. Probes run with small limits of their own (so the memory, process and disk
probes stay quick and cheap); the limits table shows the user's configuration.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from ..config import SandboxConfig
from ..sandbox import Sandbox, SandboxError
from ..tiers import Tier
from . import escapes, planted, pyenv, sessions
from .report import Probe, Report


def _probe_config(config: SandboxConfig, tier: Tier) -> SandboxConfig:
    """The user's configuration with small, quick limits and nothing preloaded."""
    c = SandboxConfig(config=config.config)
    c.force_tier = int(tier)
    c.required_tier = 3
    c.preload_modules = []
    c.timeout = 20
    c.max_processes = 32
    c.session_memory_mb = 128
    c.memory_mb = 512
    c.max_write_mb = 32
    c.write_check_interval = 0.05
    c.launcher_timeout = 1.0
    return c


async def run_probes(
    tier: Tier, config: SandboxConfig, progress: Callable[[str], None] | None = None
) -> Report:
    """Try every attack class on ``tier``; ``progress(name)`` is called before each probe."""
    start = time.perf_counter()
    report = Report(tier)
    ws = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="think-doctor-"))
    outside = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="think-doctor-outside-"))
    os.environ[escapes.CANARY] = "sk-doctor-canary"
    try:
        os.chmod(outside, 0o777)  # only the sandbox, not file modes, may stop the write
        user = SandboxConfig(config=config.config)
        user.force_tier, user.preload_modules = int(tier), []
        try:
            async with await Sandbox.create(ws, "doctor-limits", user) as sb:
                report.limits = sb.limits()
        except SandboxError as e:  # e.g. the session uid cannot reach the interpreter
            report.probes.append(Probe("the sandbox starts", False, str(e)))
            report.seconds = time.perf_counter() - start
            return report
        cfg = _probe_config(config, tier)
        async with (
            await Sandbox.create(ws, "doctor-a", cfg) as a,
            await Sandbox.create(ws, "doctor-b", cfg) as b,
        ):
            probes: list[tuple[str, Callable[[], Awaitable[Probe]]]] = [
                ("the Python environment", lambda: pyenv.python_env(a)),
                ("the kernel's Python", lambda: pyenv.python_env_writes(a)),
                ("network", lambda: escapes.network(a)),
                ("host sockets", lambda: escapes.sockets(a, ws)),
                ("files outside the workspace", lambda: escapes.outside(a, outside)),
                ("secrets", lambda: escapes.secrets(a)),
                ("the store", lambda: escapes.store(a)),
                ("the history store", escapes.history_store),
                ("the kernel process", lambda: escapes.kernel(a)),
                ("its own launcher", lambda: escapes.launcher(a)),
                ("another session", lambda: sessions.other_session(a, b)),
                ("another session's files", lambda: sessions.tools_as_session(a, b, ws)),
                ("fork bomb", lambda: sessions.processes(a, b)),
                ("memory across processes", lambda: sessions.memory(a)),
                ("disk writes", lambda: sessions.disk(a)),
                ("a wedged launcher", lambda: sessions.wedge(b)),
                ("output scripting", lambda: escapes.output_scripting(a)),
                ("a planted skill and tool", lambda: planted.planted(a, ws)),
            ]
            for name, probe in probes:
                if progress is not None:
                    progress(name)
                try:
                    report.probes.append(await probe())
                except Exception as e:  # a probe that breaks is reported, not fatal
                    report.probes.append(Probe(name, False, f"probe failed: {e}"))
    finally:
        os.environ.pop(escapes.CANARY, None)
        await asyncio.to_thread(shutil.rmtree, ws, True)
        await asyncio.to_thread(shutil.rmtree, outside, True)
    report.seconds = time.perf_counter() - start
    return report
