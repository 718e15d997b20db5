"""Fixtures for the agent loop: a runtime on a temp workspace talking to the fake model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from think_kernel.config import ThinkConfig
from think_kernel.runtime import Runtime

from ..fake_model import FakeModel


@pytest.fixture
async def runtime(tmp_path: Path, fake_model: FakeModel) -> AsyncIterator[Runtime]:
    """A started Runtime whose retries wait milliseconds, not seconds."""
    cfg = ThinkConfig(base_url=fake_model.url, api_key="test-key", retry_delays=[0.01, 0.02, 0.04])
    (tmp_path / "ws").mkdir()
    rt = Runtime(cfg, tmp_path / "ws", extensions=[])
    await rt.start()
    try:
        yield rt
    finally:
        await rt.close()


async def collect(rt: Runtime, request: str, **kw) -> list[dict]:
    """Run a request to the end and return the event frames."""
    return [ev.to_dict() async for ev in rt.run(request, **kw)]
