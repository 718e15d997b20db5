"""The zygote's heavy preload waits: a new sandbox is ready without numpy & co, a bash
command never pays for them, and they load at the kernel's request or the first Python run."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from sandbox_helpers import make_config, maps_mention

from tests.layers import starts_processes
from tests.waiting import until
from think_kernel.sandbox import Sandbox, available_tiers

pytestmark = pytest.mark.slow  # every test starts a sandbox
TIER = available_tiers()[0]


@pytest_asyncio.fixture
@starts_processes
async def fresh() -> AsyncIterator[Sandbox]:
    """A new sandbox of the best tier, with the default (deferred) preload."""
    ws = Path(tempfile.mkdtemp(prefix="think-sbx-defer-"))
    sb = await Sandbox.create(ws, f"defer-{uuid.uuid4().hex[:6]}", make_config(TIER))
    yield sb
    await sb.close()
    shutil.rmtree(ws, ignore_errors=True)


async def test_ready_without_the_preload_and_bash_does_not_load_it(fresh: Sandbox) -> None:
    """The zygote answers before it imports anything heavy; bash leaves it so."""
    assert fresh.config.defer_preload and fresh.preloaded == []
    zygote = fresh.launcher_pid()
    assert zygote is not None and not maps_mention(zygote, "numpy")
    r = await fresh.run_bash("echo hi")
    assert r.ok and r.stdout == "hi\n", r
    assert fresh.preloaded == [] and not maps_mention(zygote, "numpy")


async def test_the_kernel_asks_and_the_zygote_preloads(fresh: Sandbox) -> None:
    """``preload()`` imports the modules in the zygote; its later forks have them."""
    await fresh.preload()
    await until(lambda: "numpy" in fresh.preloaded, 60, "the preload reported")
    zygote = fresh.launcher_pid()
    assert zygote is not None and maps_mention(zygote, "numpy")
    r = await fresh.run_python("import sys; print('pandas' in sys.modules)", fresh=True)
    assert r.ok and r.stdout == "True\n", r


async def test_a_first_python_run_loads_the_preload_before_it_forks(fresh: Sandbox) -> None:
    """No request came: the first Python run (warm worker) starts with the modules."""
    r = await fresh.run_python("import sys; print('numpy' in sys.modules)")
    assert r.ok and r.stdout == "True\n", r
    assert "matplotlib.pyplot" in fresh.preloaded


async def test_not_deferred_loads_before_ready() -> None:
    """``defer_preload = False`` keeps the old order: ready means preloaded."""
    ws = Path(tempfile.mkdtemp(prefix="think-sbx-defer-"))
    config = make_config(TIER, defer_preload=False, preload_modules=["json"])
    try:
        sb = await Sandbox.create(ws, f"nodefer-{uuid.uuid4().hex[:6]}", config)
        try:
            assert sb.preloaded == ["json"]
        finally:
            await sb.close()
    finally:
        shutil.rmtree(ws, ignore_errors=True)
