"""The attack suite: each test tries one attack class for real, on every tier this
machine can run (tiers 2 and 3 are forced), and checks that the legitimate use next to it still
works. Shared fixtures only; each attack class lives in its own test module."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.layers import starts_processes
from tests.waiting import until
from think_kernel.sandbox import Sandbox, SandboxConfig, Tier, available_tiers
from think_kernel.sandbox.result import ExecResult
from think_kernel.sandbox.runs import Run

TIERS = available_tiers()


@pytest.fixture(params=TIERS, ids=lambda t: f"tier{int(t)}")
def tier(request: pytest.FixtureRequest) -> Tier:
    """Every isolation tier this machine supports (the test runs once per tier)."""
    return request.param


@pytest.fixture
def workspace() -> Iterator[Path]:
    """A fresh workspace directory.

    Not under pytest's basetemp: every pytest run as root chmods /tmp/pytest-of-root to 0700,
    which resets the ACL mask that lets the sandbox uid through.
    """
    ws = Path(tempfile.mkdtemp(prefix="think-sec-"))
    try:
        yield ws
    finally:
        shutil.rmtree(ws, ignore_errors=True)


@pytest.fixture
@starts_processes
def sandbox_config(tier: Tier) -> SandboxConfig:
    """A sandbox configuration that forces ``tier``, with short limits for tests (no
    preloaded modules: start-up stays well under a second)."""
    return SandboxConfig(force_tier=int(tier), timeout=20, preload_modules=[])


SandboxFactory = Callable[..., AbstractAsyncContextManager[Sandbox]]


@pytest.fixture
@starts_processes
def open_sandbox(tier: Tier, workspace: Path) -> SandboxFactory:
    """``async with open_sandbox(name, **config) as sb``: a sandbox of this test's tier on the
    shared workspace (several sessions may share it, as in a real server)."""

    @asynccontextmanager
    async def factory(name: str = "s", **config: object) -> AsyncIterator[Sandbox]:
        kw: dict = {"force_tier": int(tier), "timeout": 20, "preload_modules": [], **config}
        sb = await Sandbox.create(workspace, f"sec-{name}-{tier.name.lower()}", SandboxConfig(**kw))
        try:
            yield sb
        finally:
            await sb.close()

    return factory


@pytest.fixture
def kernel_looks_late(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loaded kernel: it first looks at each run after the run has ended."""
    collect = Sandbox._collect

    async def late(self: Sandbox, run: Run, *args: Any, **kw: Any) -> ExecResult:
        await until(lambda: run.exit is not None, 30, "the run's end")
        return await collect(self, run, *args, **kw)

    monkeypatch.setattr(Sandbox, "_collect", late)
