"""Fixtures for tasks and subagents: a started Runtime on the scripted model."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from think_kernel.config import ThinkConfig
from think_kernel.runtime import Runtime

from ..fake_model import FakeModel

FAST = "fake-fast"


async def make_runtime(root: Path, fm: FakeModel, **config: Any) -> Runtime:
    """A started Runtime on the scripted model (fast role: ``fake-fast``) whose retries wait
    milliseconds; ``rt.emitted`` records every event its sinks get. ``TasksConfig`` settings
    are given as ``tasks={...}``."""
    tasks = config.pop("tasks", {})
    cfg = ThinkConfig(
        base_url=fm.url,
        api_key="test-key",
        retry_delays=[0.01, 0.02],
        fast_model=FAST,
        config=Config({"TasksConfig": tasks}),
        **config,
    )
    await asyncio.to_thread(root.mkdir, exist_ok=True)
    rt = Runtime(cfg, root, extensions=[])
    rt.emitted = []  # type: ignore[attr-defined]
    rt.add_sink(lambda ev: rt.emitted.append(ev.to_dict()))  # type: ignore[attr-defined]
    await rt.start()
    return rt


@pytest.fixture
async def runtime(tmp_path: Path, fake_model: FakeModel) -> AsyncIterator[Runtime]:
    """A started Runtime (see :func:`make_runtime`)."""
    rt = await make_runtime(tmp_path / "ws", fake_model)
    try:
        yield rt
    finally:
        await rt.close()


def emitted(rt: Runtime, prefix: str = "") -> list[dict]:
    """Events the runtime's sinks got whose type starts with ``prefix``."""
    return [e for e in rt.emitted if e["type"].startswith(prefix)]  # type: ignore[attr-defined]


async def collect(rt: Runtime, request: str, **kw: Any) -> list[dict]:
    """Run a request to the end and return the event frames it yielded."""
    return [ev.to_dict() async for ev in rt.run(request, **kw)]
