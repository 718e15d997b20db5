"""A started Runtime against the scripted model (as in tests/agent), with a short poll."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from think_kernel.config import ThinkConfig
from think_kernel.runtime import Runtime

from ..fake_model import FakeModel


@pytest.fixture
async def runtime(tmp_path: Path, fake_model: FakeModel) -> AsyncIterator[Runtime]:
    """A started Runtime in the default approval mode."""
    cfg = ThinkConfig(base_url=fake_model.url, api_key="test-key", retry_delays=[0.01])
    (tmp_path / "ws").mkdir()
    rt = Runtime(cfg, tmp_path / "ws", extensions=[])
    await rt.start()
    assert rt.gate is not None
    rt.gate.poll = 0.05  # decisions made elsewhere are found quickly in tests
    try:
        yield rt
    finally:
        await rt.close()
