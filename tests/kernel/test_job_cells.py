"""``%%think_job`` cells in a real think kernel with its sandbox: the cell's body runs as a
background job whose progress the cell follows in one display updated in place; interrupting
the cell stops following, and the job runs on. Without a server, a job that asked to wake the
agent starts a run in its kernel when it ends."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.fake_model import FakeModel
from tests.kernel.conftest import Kernel, markdown_of
from tests.procs import marked_loop, processes_with
from tests.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def test_a_job_cell_follows_its_job_to_the_end(shared_kernel: Kernel) -> None:
    reply, outputs = shared_kernel.execute(
        '%%think_job train\nfor i in 1 2 3 4; do echo "step $i $((i * 25))%"; sleep 0.3; done',
        timeout=60,
    )
    assert reply["status"] == "ok", outputs
    kinds = [m["msg_type"] for m in outputs]
    assert kinds[0] == "display_data" and "update_display_data" in kinds
    ids = {m["content"]["transient"]["display_id"] for m in outputs}
    assert len(ids) == 1  # one display, updated in place
    final = markdown_of(outputs)
    assert final.startswith("**job train: done · 100% · 4 lines · "), final
    assert "step 4 100%" in final

    reply, outputs = shared_kernel.execute("%%think_job broken\necho oops; exit 3", timeout=60)
    assert reply["status"] == "error" and "failed" in reply["evalue"], reply
    assert "exit 3" in markdown_of(outputs)


def test_interrupting_a_job_cell_leaves_the_job_running(shared_kernel: Kernel) -> None:
    marker = f"jobmark{uuid.uuid4().hex[:8]}"
    msg_id = shared_kernel.kc.execute(f"%%think_job forever\n{marked_loop(marker)}")
    wait_until(lambda: processes_with(marker), 60, "the job runs in the sandbox")
    shared_kernel.km.interrupt_kernel()
    reply, outputs = shared_kernel.collect(msg_id, timeout=30)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    assert "No longer followed here: the job runs on" in markdown_of(outputs)
    assert processes_with(marker)  # the job goes on
    reply, outputs = shared_kernel.execute("%%think_job forever\necho again", timeout=30)
    assert reply["status"] == "error" and "is running" in reply["evalue"], reply


def test_without_a_server_a_job_wakes_the_agent_in_its_kernel(
    shared_kernel: Kernel, model: FakeModel
) -> None:
    command = "sleep 0.5; echo wake-marker"
    model.reply(tool_calls=[("run_job", {"command": command, "name": "nap", "wake": True})])
    model.reply(text="Started.")
    model.reply(tool_calls=[("job_output", {"name": "nap"})])
    model.reply(text="Read it.")
    reply, _ = shared_kernel.execute("nap in the background, then tell me", timeout=60)
    assert reply["status"] == "ok"

    def woken() -> list[str]:
        sent = [json.dumps(r["messages"]) for r in model.requests]
        return [m for m in sent if "Background job 'nap' ended (done, exit code 0)" in m]

    wait_until(woken, 60, "the run the job's end started")
    wait_until(lambda: len(model.requests) >= 4, 60, "the woken run read the log")
    assert "wake-marker" in json.dumps(model.requests[-1]["messages"][-1])
