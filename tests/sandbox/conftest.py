"""Fixtures: one real sandbox per tier this machine can run (tiers 2 and 3 are forced)."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from sandbox_helpers import SECRETS, make_config

from tests.layers import starts_processes
from think_kernel.sandbox import Sandbox, Tier, available_tiers

TIERS = available_tiers()


@pytest.fixture(scope="session")
def jupyter_private(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A Jupyter runtime dir with a connection file and a config dir, as Jupyter makes them."""
    base = tmp_path_factory.mktemp("jupyter-private")
    runtime = base / "runtime"
    runtime.mkdir(mode=0o700)
    conn = runtime / "kernel-1234.json"
    conn.write_text('{"key": "connection-secret"}')
    conn.chmod(0o600)
    server = runtime / "jpserver-1.json"
    server.write_text('{"token": "server-secret"}')
    server.chmod(0o600)
    config = base / "dot-jupyter"
    config.mkdir(mode=0o700)
    (config / "jupyter_server_config.json").write_text('{"token": "cfg-secret"}')
    return {"runtime": runtime, "conn": conn, "config": config}


@pytest.fixture(scope="session")
def kernel_environment(jupyter_private: dict[str, Path]) -> Iterator[dict[str, str]]:
    """The kernel's environment: secrets, and the private Jupyter dirs (set while a sandbox
    is created, which is when it takes its environment; restored after the sandbox tests)."""
    extra = {**SECRETS, "JUPYTER_RUNTIME_DIR": str(jupyter_private["runtime"]),
             "JUPYTER_CONFIG_DIR": str(jupyter_private["config"])}  # fmt: skip
    saved = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    yield extra
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest_asyncio.fixture(scope="session", loop_scope="session", params=TIERS, ids=lambda t: t.name)
@starts_processes
async def sandbox(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    kernel_environment: dict[str, str],
) -> AsyncIterator[Sandbox]:
    """One sandbox per tier, shared by the tests of that tier."""
    tier: Tier = request.param
    # Not under pytest's basetemp: every pytest run (ours or a colleague's, as root) chmods
    # /tmp/pytest-of-root to 0700, which resets the ACL mask that lets sandbox_uid through.
    ws = Path(tempfile.mkdtemp(prefix=f"think-sbx-test-{tier.name.lower()}-"))
    sb = await Sandbox.create(ws, f"test-{tier.name.lower()}-{uuid.uuid4().hex[:6]}",
                              make_config(tier, timeout=20, max_processes=64))  # fmt: skip
    yield sb
    await sb.close()
    shutil.rmtree(ws, ignore_errors=True)
