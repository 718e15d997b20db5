"""The first spare chat kernel is started while the server still loads (the first
message after a server start no longer waits for a whole kernel start), and it serves the
first chat (a real ``jupyter server`` process: only a server whose loop has not started yet
can do this; pytest-jupyter loads extensions on a running loop)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.procs import running
from tests.waiting import wait_until

from .test_restart import Server, _setup

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def _log(server: Server) -> str:
    server.log.flush()
    return open(server.log.name, encoding="utf-8", errors="replace").read()  # noqa: SIM115


def test_the_first_spare_starts_at_extension_load_and_serves_the_first_chat(tmp_path, fake_model):
    env = _setup(tmp_path, fake_model)
    server = Server(tmp_path, env)
    try:
        server.wait_up()
        log = _log(server)
        started = re.search(r"Kernel started: ([0-9a-f-]{36})", log)
        assert started, log[-3000:]
        early = started.group(1)
        # Before the server said it runs (its start hook, where the pool starts, comes after).
        assert log.index(started.group(0)) < log.index("is running at"), log[-3000:]
        # It became the process the server started importing when it linked the extension.
        assert f"kernel {early} runs in the preloaded process" in log, log[-3000:]
        wait_until(
            lambda: _ready_spares(server) == [early], 90, "the early kernel ready as a spare"
        )
        fake_model.reply(text="first answer")
        sid = server.call("POST", "sessions", {"title": "first"})["id"]
        server.call("POST", f"sessions/{sid}/messages", {"content": "hello"})
        wait_until(lambda: server.call("GET", f"sessions/{sid}")["status"] == "idle", 60, "answer")
        kernels = server.call("GET", "kernels")["kernels"]
        assert [k["id"] for k in kernels if k["session_id"] == sid] == [early]
        messages = server.call("GET", f"sessions/{sid}/messages")["messages"]
        assert messages[-1]["content"] == "first answer"
        pid = next(k["pid"] for k in kernels if k["id"] == early)
        assert pid and running(pid)
    finally:
        server.kill()
    # Like any kernel it watches the server that started it, and ends with it (ipykernel
    # reads that pid when imported, before the preloaded process knew it).
    wait_until(lambda: not running(pid), 15, "the kernel gone with its server")


def test_no_early_kernel_without_a_pool(tmp_path, fake_model):
    env = _setup(tmp_path, fake_model)
    config = tmp_path / "config" / "jupyter_server_config.json"
    settings = json.loads(config.read_text())
    settings["ThinkExtension"]["kernel_pool_size"] = 0
    config.write_text(json.dumps(settings))
    server = Server(tmp_path, env)
    try:
        server.wait_up()
        assert "Kernel started" not in _log(server)
        assert server.call("GET", "kernels")["kernels"] == []
    finally:
        server.kill()


def _ready_spares(server: Server) -> list[str]:
    kernels = server.call("GET", "kernels")["kernels"]
    return [k["id"] for k in kernels if k["session_id"] is None and k.get("prepared")]


def test_reading_the_extension_points_outside_a_server_starts_nothing():
    """`jupyter server extension list` and other tools read the extension points: only a
    server that is starting preloads a kernel."""
    code = (
        "import jupyter_ext; from think_kernel.kernel import provisioner; "
        "jupyter_ext._jupyter_server_extension_points(); print(provisioner._waiting)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "None", out
