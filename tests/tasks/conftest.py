"""Fixtures for tasks and subagents: a started Runtime on the scripted model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from think_kernel.config import ThinkConfig
from think_kernel.runtime import Runtime

from ..fake_model import FakeModel


@pytest.fixture
async def runtime(tmp_path: Path, fake_model: FakeModel) -> AsyncIterator[Runtime]:
    """A started Runtime whose retries wait milliseconds, recording what its sinks get."""
    cfg = ThinkConfig(base_url=fake_model.url, api_key="test-key", retry_delays=[0.01, 0.02])
    (tmp_path / "ws").mkdir()
    rt = Runtime(cfg, tmp_path / "ws", extensions=[])
    rt.emitted = []  # type: ignore[attr-defined]
    rt.add_sink(lambda ev: rt.emitted.append(ev.to_dict()))  # type: ignore[attr-defined]
    await rt.start()
    try:
        yield rt
    finally:
        await rt.close()


async def collect(rt: Runtime, request: str, **kw: Any) -> list[dict]:
    """Run a request to the end and return the event frames it yielded."""
    return [ev.to_dict() async for ev in rt.run(request, **kw)]
