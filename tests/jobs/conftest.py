"""Fixtures: a real sandbox (the strongest tier here) and a real store for the job tests."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from tests.layers import starts_processes
from think_kernel.sandbox import Sandbox, SandboxConfig
from think_kernel.store import Store

#: The foreground wall clock of the test sandbox: jobs must run past it.
FOREGROUND_TIMEOUT = 2.0


@pytest_asyncio.fixture(loop_scope="module", scope="module")
@starts_processes
async def sandbox() -> AsyncIterator[Sandbox]:
    """One sandbox for the module's tests (each test starts its own jobs)."""
    # Not under pytest's basetemp (see tests/sandbox/conftest.py: its chmod resets the ACL).
    ws = Path(tempfile.mkdtemp(prefix="think-jobs-test-"))
    sb = await Sandbox.create(ws, f"test-jobs-{uuid.uuid4().hex[:6]}",
                              SandboxConfig(timeout=FOREGROUND_TIMEOUT, max_timeout=5))  # fmt: skip
    yield sb
    await sb.close()
    shutil.rmtree(ws, ignore_errors=True)


@pytest_asyncio.fixture(loop_scope="module")
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    """A store of the test's own."""
    s = await Store.open(tmp_path / "think.db")
    await s.ensure_session("s_jobs", path="", kind="chat")
    yield s
    await s.close()
