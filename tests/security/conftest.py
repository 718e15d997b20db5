"""The attack suite (issue 9): each test tries one attack class for real, on every tier this
machine can run (tiers 2 and 3 are forced), and checks that the legitimate use next to it still
works. Shared fixtures only; each attack class lives in its own test module."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from think_kernel.sandbox import SandboxConfig, Tier, available_tiers

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
def sandbox_config(tier: Tier) -> SandboxConfig:
    """A sandbox configuration that forces ``tier``, with short limits for tests."""
    return SandboxConfig(force_tier=int(tier), timeout=20)
