"""Stop means stop: interrupting a think cell or a ``%think`` cell while the
agent's ``bash`` tool runs kills the sandboxed process tree within a second, and the next tool
call still works. (Stop from the sidebar or the API: tests/collab/test_files_e2e.py.)"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from tests.fake_model import FakeModel
from tests.kernel.conftest import Kernel, kernel_env, start_kernel, workspace_in
from tests.procs import marked_loop, processes_with
from tests.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def _stop_a_running_tool(kernel: Kernel, model: FakeModel, cell: str) -> None:
    marker = f"stopmark{uuid.uuid4().hex[:8]}"
    loop = marked_loop(marker)
    model.reply(tool_calls=[("bash", {"command": loop, "timeout": 120})])
    msg_id = kernel.kc.execute(cell)
    wait_until(lambda: processes_with(marker), 90, "the tool runs in the sandbox")
    kernel.km.interrupt_kernel()
    start = time.monotonic()
    wait_until(lambda: not processes_with(marker), 10, "the process tree killed", every=0.01)
    took = time.monotonic() - start
    assert took < 1.0, took
    reply, _ = kernel.collect(msg_id, timeout=20)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    # the kernel and the session's sandbox are usable afterwards
    model.reply(tool_calls=[("bash", {"command": "echo still-working"})])
    model.reply(text="It works.")
    reply, outputs = kernel.execute(cell.replace("loop forever", "echo"), timeout=60)
    assert reply["status"] == "ok", outputs
    assert "still-working" in str(outputs)


@pytest.mark.parametrize("mode", ["signal", "message"])
def test_interrupting_a_think_cell_kills_its_command(
    tmp_path: Path, model: FakeModel, mode: str
) -> None:
    kernel = start_kernel(workspace_in(tmp_path), kernel_env(tmp_path, model), interrupt_mode=mode)
    try:
        _stop_a_running_tool(kernel, model, "loop forever")
    finally:
        kernel.stop()


def test_interrupting_a_percent_think_cell_kills_its_command(
    tmp_path: Path, model: FakeModel
) -> None:
    kernel = start_kernel(workspace_in(tmp_path), kernel_env(tmp_path, model), name="python3")
    try:
        reply, outputs = kernel.execute("%load_ext think_kernel")
        assert reply["status"] == "ok", outputs
        _stop_a_running_tool(kernel, model, "%think loop forever")
    finally:
        kernel.stop()
