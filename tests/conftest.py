"""Fixtures shared by every test package: the scripted model server, a private data dir; the
split into the in-process layer and the ``slow`` layer (see tests/layers.py)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest

from .fake_model import FakeModel
from .layers import ProcessGuard, uses_processes

# Stores live in the Jupyter data directory: one folder per workspace. Tests create
# thousands of temporary workspaces; keep their stores out of the real data directory. Kernels
# the tests start inherit this. (pytest-jupyter's server fixtures patch it again per test.)
os.environ["JUPYTER_DATA_DIR"] = tempfile.mkdtemp(prefix="think-test-data-")
# And the config directory: a developer's own mcp.json or think_kernel_config.py
# must not reach the tests (tests that need one write it into a directory of their own).
os.environ["JUPYTER_CONFIG_DIR"] = tempfile.mkdtemp(prefix="think-test-config-")


@pytest.fixture
def fake_model() -> Iterator[FakeModel]:
    """A scripted OpenAI-compatible server on a free loopback port."""
    fm = FakeModel().start()
    try:
        yield fm
    finally:
        fm.stop()


GUARD = ProcessGuard()


def pytest_configure(config: pytest.Config) -> None:
    """Install the guard that keeps processes out of the in-process layer."""
    GUARD.install()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``slow`` every test that uses a fixture starting processes (before ``-m``
    deselects)."""
    for item in items:
        if item.get_closest_marker("slow") is None and uses_processes(item):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """A fast test's fixtures start no process."""
    with GUARD.watching(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A fast test starts no process."""
    with GUARD.watching(item):
        return (yield)
