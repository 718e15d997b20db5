"""MCP servers in a real think kernel: a request cell whose model calls a server's tool,
``%think_mcp``, and no server left behind when the kernel stops (shut down, or killed)."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.waiting import wait_until

from ..fake_model import FakeModel
from ..kernel.conftest import Kernel, kernel_env, markdown_of, start_kernel, workspace_in
from .conftest import pid_alive, stdio_entry, write_mcp_json

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow


def kernel_with_server(tmp_path: Path, fake_model: FakeModel, **entry: Any) -> Kernel:
    """A think kernel whose Jupyter config directory has an ``mcp.json``."""
    env = kernel_env(tmp_path, fake_model)
    write_mcp_json(Path(env["JUPYTER_CONFIG_DIR"]), {"test": stdio_entry(**entry)})
    return start_kernel(workspace_in(tmp_path), env)


def server_pid(kernel: Kernel, fake_model: FakeModel) -> int:
    """Ask the model to call ``test__pid`` in a request cell; the pid the model was told."""
    fake_model.reply(tool_calls=[("test__pid", {})])
    fake_model.reply(text="Its pid is known.")
    seen = len(fake_model.requests)
    reply, outputs = kernel.execute("what is the MCP server's pid?", timeout=120)
    assert reply["status"] == "ok", reply
    assert "Its pid is known." in markdown_of(outputs)
    tool_msg = [m for m in fake_model.requests[seen + 1]["messages"] if m["role"] == "tool"][-1]
    return int(tool_msg["content"])


def test_kernel_calls_a_server_and_stops_it_on_shutdown(
    tmp_path: Path, fake_model: FakeModel
) -> None:
    kernel = kernel_with_server(tmp_path, fake_model)
    try:
        pid = server_pid(kernel, fake_model)
        assert pid_alive(pid)
        offered = [t["function"]["name"] for t in fake_model.requests[0]["tools"]]
        assert "test__pid" in offered and "test__echo" in offered
        reply, outputs = kernel.execute("%think_mcp")
        text = markdown_of(outputs)
        assert "| **test**" in text and "running" in text and "`test__pid` (read-only)" in text
        reply, outputs = kernel.execute("%think_status")
        assert "**MCP servers**: test (running)" in markdown_of(outputs)
    finally:
        kernel.kc.stop_channels()
        kernel.km.shutdown_kernel(now=False)  # a shutdown_request: the kernel closes its runtime
    wait_until(lambda: not pid_alive(pid), 30, "the MCP server to stop with the kernel")


def test_a_killed_kernel_leaves_no_server_behind(tmp_path: Path, fake_model: FakeModel) -> None:
    # A server that outlives the end of its input: only the kernel's death can stop it.
    kernel = kernel_with_server(tmp_path, fake_model, env={"LINGER": "1"})
    try:
        pid = server_pid(kernel, fake_model)
        assert pid_alive(pid)
        process = kernel.km.provisioner.process  # type: ignore[union-attr]
        os.kill(process.pid, signal.SIGKILL)  # no shutdown, no cleanup in the kernel
        wait_until(lambda: not pid_alive(pid), 30, "the MCP server to stop with its kernel")
    finally:
        kernel.kc.stop_channels()
        kernel.km.shutdown_kernel(now=True)
