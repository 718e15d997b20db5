"""The doctor's output-scripting probe: HTML and JavaScript displayed by sandboxed code never
reach the page as such."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from think_kernel import safeoutput
from think_kernel.sandbox import Sandbox, SandboxConfig, available_tiers
from think_kernel.sandbox.probes.escapes import output_scripting

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow


@pytest_asyncio.fixture
async def sandbox() -> AsyncIterator[Sandbox]:
    ws = Path(tempfile.mkdtemp(prefix="think-output-probe-"))
    tier = available_tiers()[0]
    sb = await Sandbox.create(ws, "output-probe", SandboxConfig(force_tier=int(tier),
                                                                 preload_modules=[]))  # fmt: skip
    yield sb
    await sb.close()
    shutil.rmtree(ws, ignore_errors=True)


async def test_probe_is_green(sandbox: Sandbox) -> None:
    probe = await output_scripting(sandbox)
    assert probe.contained, probe
    assert "sandboxed frame" in probe.detail


async def test_probe_sees_a_kernel_that_forwards_everything(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    def forward(data: dict[str, Any]) -> dict[str, Any]:
        return data

    monkeypatch.setattr(safeoutput, "safe_bundle", forward)
    probe = await output_scripting(sandbox)
    assert not probe.contained, probe
    assert "application/javascript" in probe.detail and "text/html" in probe.detail, probe
