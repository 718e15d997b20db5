"""Fixtures shared by every test package: the scripted model server, a private data dir."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest

from .fake_model import FakeModel

# Stores live in the Jupyter data directory (issue 9): one folder per workspace. Tests create
# thousands of temporary workspaces; keep their stores out of the real data directory. Kernels
# the tests start inherit this. (pytest-jupyter's server fixtures patch it again per test.)
os.environ["JUPYTER_DATA_DIR"] = tempfile.mkdtemp(prefix="think-test-data-")
# And the config directory: a developer's own mcp.json (issue 15) or think_kernel_config.py
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
