"""Tasks and subagents in a real think kernel: the request's task tree in the cell,
updated in place, ``%think_tasks``, and a kernel killed mid-delegation."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.fake_model import FakeModel
from tests.kernel.conftest import kernel_env, markdown_of, start_kernel, workspace_in

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def _tree_updates(outputs: list[dict]) -> list[dict]:
    return [
        m for m in outputs if (m["content"].get("metadata") or {}).get("think", {}).get("tasks")
    ]


def test_the_task_tree_is_live_in_the_cell_and_think_tasks_prints_it(
    tmp_path, model: FakeModel
) -> None:
    model.reply(
        tool_calls=[
            ("create_subtask", {"title": "SUB-A count rows", "type": "explore", "name": "a"}),
            ("create_subtask", {"title": "SUB-B list columns", "type": "explore", "name": "b"}),
        ]
    )
    model.reply(
        tool_calls=[
            (
                "create_subtask",
                {"title": "Check both", "type": "review", "name": "c", "dependencies": ["a", "b"]},
            ),
            ("delegate_to_subagent", {"task": "a", "instructions": "Count the rows."}),
            ("delegate_to_subagent", {"task": "b", "instructions": "List the columns."}),
        ]
    )
    model.reply(tool_calls=[("wait_for_subagents", {})])
    model.reply(tool_calls=[("complete_task", {"task_id": "c", "result": "both fine"})])
    model.reply(text="All done.")
    for key in ("SUB-A", "SUB-B"):
        model.reply_for(
            key, barrier="parallel", parties=2, tool_calls=[("execute_code", {"code": "rows = 3"})]
        )
        model.reply_for(key, text=f"{key}: finished")
    kernel = start_kernel(workspace_in(tmp_path), kernel_env(tmp_path, model))
    try:
        reply, outputs = kernel.execute("analyse the data", timeout=180)
        assert reply["status"] == "ok", outputs
        assert "All done." in markdown_of([m for m in outputs if m not in _tree_updates(outputs)])
        tree = _tree_updates(outputs)
        first, *updates = tree
        assert first["msg_type"] == "display_data" and updates, tree
        display_id = first["content"]["transient"]["display_id"]
        assert all(m["msg_type"] == "update_display_data" for m in updates)
        assert {m["content"]["transient"]["display_id"] for m in updates} == {display_id}
        shown = [m["content"]["data"]["text/markdown"] for m in tree]
        assert any("subagent running" in s for s in shown), shown
        final = shown[-1]
        assert final.startswith("**Tasks** · ▰▰▰▰▰▰▰▰▰▰ 100%"), final
        for title in ("SUB-A count rows", "SUB-B list columns", "Check both"):
            assert f"✓ **{title}**" in final, final
        assert "subagent complete — SUB-A: finished" in final

        reply, outputs = kernel.execute("%think_tasks")
        assert reply["status"] == "ok"
        (result,) = [m for m in outputs if m["msg_type"] == "execute_result"]
        text = result["content"]["data"]["text/markdown"]
        assert "✓ **analyse the data** `plan`" in text and "✓ **Check both** `review`" in text
    finally:
        kernel.stop()


def test_a_kernel_killed_mid_delegation_reports_the_subagent_interrupted(
    tmp_path, model: FakeModel
) -> None:
    model.reply(
        tool_calls=[("delegate_to_subagent", {"task": "SUB-K long job", "instructions": "work"})]
    )
    model.reply(tool_calls=[("wait_for_subagents", {})])
    model.reply_for("SUB-K", hang=True, text="never")
    ws = workspace_in(tmp_path)
    env = kernel_env(tmp_path, model)
    kernel = start_kernel(ws, env)
    try:
        kernel.kc.execute("delegate a long job")
        deadline = time.monotonic() + 90
        while not [s for s in model.spans if s["key"] == "SUB-K"]:
            assert time.monotonic() < deadline, "the subagent never called the model"
            time.sleep(0.02)
        os.kill(kernel.km.provisioner.process.pid, signal.SIGKILL)  # type: ignore[union-attr]
        kernel.kc.stop_channels()
        kernel.km.restart_kernel(now=True)
        kernel.kc = kernel.km.client()
        kernel.kc.start_channels()
        kernel.kc.wait_for_ready(timeout=60)
        # The new kernel resumes the session and finds the subagent its predecessor left.
        reply, outputs = kernel.execute("%think_tasks")
        assert reply["status"] == "ok", outputs
        text = [m for m in outputs if m["msg_type"] == "execute_result"][0]["content"]["data"]
        tree = text["text/markdown"]
        assert "✗ **SUB-K long job**" in tree and "subagent interrupted" in tree, tree
        assert "✗ **delegate a long job**" in tree, tree  # no server retries it: it failed
        model.reply(text="It was interrupted; I will redo it.")
        reply, outputs = kernel.execute("what happened?", timeout=60)
        assert reply["status"] == "ok", outputs
        said = model.requests[-1]["messages"]
        assert any("[Think] The subagent working on task" in str(m["content"]) for m in said)
    finally:
        model.release.set()
        kernel.stop()


def test_a_subagents_approval_card_works_in_the_cell(tmp_path, model: FakeModel) -> None:
    from tests.kernel.test_approval_cells import _card, _drain, _send_comm

    ws = workspace_in(tmp_path)
    kernel = start_kernel(ws, kernel_env(tmp_path, model))
    try:
        reply, _ = kernel.execute("%think_approve ask write_file")
        assert reply["status"] == "ok"
        model.reply(
            tool_calls=[
                ("delegate_to_subagent", {"task": "SUB-W write it", "instructions": "write"})
            ]
        )
        model.reply(tool_calls=[("wait_for_subagents", {})])
        model.reply(text="The subagent wrote w.txt.")
        model.reply_for("SUB-W", tool_calls=[("write_file", {"path": "w.txt", "content": "hi"})])
        model.reply_for("SUB-W", text="wrote w.txt")
        msg_id = kernel.kc.execute("have a subagent write w.txt")
        _, ids = _card(kernel, msg_id)  # the subagent's call waits for this cell's buttons
        assert not (ws / "w.txt").exists()
        _send_comm(kernel, ids["Approve"], {"method": "custom", "content": {"event": "click"}})
        outputs, reply = _drain(kernel, msg_id)
        assert reply["status"] == "ok", outputs
        assert (ws / "w.txt").read_text() == "hi"
        tree = _tree_updates(outputs)[-1]["content"]["data"]["text/markdown"]
        assert "✓ **SUB-W write it**" in tree and "subagent complete" in tree
    finally:
        kernel.stop()
