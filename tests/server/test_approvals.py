"""Approvals through a running server: the WebSocket and REST decide, the first
decision wins, every tab hears it, and a waiting run survives its kernel being killed.

Real server, real think kernels, real sockets; the model is scripted at HTTP.
"""

from __future__ import annotations

import json
import os
import signal

import pytest

from tests.waiting import until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


@pytest.fixture
def strict_kernel(jp_config_dir):
    """Kernels the server starts ask before every execution (bash runs in the sandbox here;
    the file tools need jupyter-collaboration, which these servers do not load)."""
    (jp_config_dir / "think_kernel_config.py").write_text(
        'c.ThinkConfig.approval_policy = "strict"\n'
    )


async def _session(api) -> str:
    code, s = await api("POST", "sessions", {"title": "approvals"})
    assert code == 201
    return s["id"]


def _waiting_at(frames: list[dict]) -> list[int]:
    """Where the "waiting" statuses are among a tab's frames."""
    waiting = ("status", "waiting")
    return [i for i, f in enumerate(frames) if (f.get("type"), f.get("status")) == waiting]


async def test_websocket_and_rest_decide_first_wins_all_tabs_hear(
    api, ws, think, model_env, jp_root_dir, strict_kernel
):
    (jp_root_dir / "a.txt").write_text("a\n")
    (jp_root_dir / "b.txt").write_text("b\n")
    model_env.reply(tool_calls=[("bash", {"command": "rm a.txt"})])
    model_env.reply(tool_calls=[("bash", {"command": "rm b.txt"})])
    model_env.reply(text="Deleted a.txt; kept b.txt.")
    sid = await _session(api)
    tab, other = await ws(sid), await ws(sid)
    await api("POST", f"sessions/{sid}/messages", {"content": "delete a.txt and b.txt"})
    first = (await until(lambda: tab.of("approval_requested"), 60, "the first approval"))[0]
    assert first["tool"] == "bash" and first["summary"] == "bash: rm a.txt"
    # Then the run says it waits for a person: the kernel emits the request first, the status
    # after it, and every tab gets frames in that order (not always in one WebSocket message).
    waiting = (await until(lambda: _waiting_at(tab.frames), 30, "the waiting status"))[0]
    assert waiting > tab.frames.index(first)
    assert tab.frames[waiting]["detail"] == "approval needed: bash: rm a.txt"
    assert (jp_root_dir / "a.txt").exists()
    # The pending approval is listed (a reloaded page shows it again from here).
    _, listed = await api("GET", f"sessions/{sid}/approvals", status="pending")
    assert [a["id"] for a in listed["approvals"]] == [first["id"]]

    await tab.send({"type": "approval", "id": first["id"], "decision": "approve"})
    decided = await until(lambda: tab.of("approval_decided"), 30, "the WebSocket answer")
    assert decided[0]["approval"]["status"] == "approved"
    heard = await until(lambda: other.of("approval_resolved"), 30, "the other tab hears it")
    assert heard[0]["id"] == first["id"] and heard[0]["source"] == "sidebar"
    # People are named as Jupyter names them (its identity provider), never by a raw id;
    # the id is kept beside the name so a tab can tell its own decisions.
    record = decided[0]["approval"]["decision"]
    record = json.loads(record) if isinstance(record, str) else record
    assert heard[0]["user"] == record["user"] and record["user"].startswith("Anonymous ")
    assert record["user_id"] and record["user_id"] not in record["user"]
    # A second decision, on any surface, loses.
    code, _ = await api("POST", f"sessions/{sid}/approvals/{first['id']}", {"decision": "reject"})
    assert code == 409

    second = (await until(lambda: len(tab.of("approval_requested")) == 2 and tab.of(
        "approval_requested"), 60, "the second approval"))[1]  # fmt: skip
    code, row = await api(
        "POST",
        f"sessions/{sid}/approvals/{second['id']}",
        {"decision": "reject", "reason": "b.txt is still needed"},
    )
    assert code == 200 and row["status"] == "rejected"
    rejected = row["decision"]
    rejected = json.loads(rejected) if isinstance(rejected, str) else rejected
    assert rejected["user"].startswith("Anonymous ") and rejected["user_id"]
    await tab.send({"type": "approval", "id": second["id"], "decision": "approve"})
    late = await until(
        lambda: [f for f in tab.of("error") if f.get("code") == "already_decided"], 30, "late"
    )
    assert late[0]["approval"]["status"] == "rejected"
    await until(lambda: tab.of("task_complete"), 60, "the run ends")
    assert not (jp_root_dir / "a.txt").exists(), tab.of("tool_result")
    assert (jp_root_dir / "b.txt").exists()
    tool_msgs = [m for m in model_env.requests[2]["messages"] if m["role"] == "tool"]
    assert "b.txt is still needed" in tool_msgs[-1]["content"]
    _, actions = await api("GET", f"sessions/{sid}/actions")
    log = [a["action"] for a in actions["actions"]]
    assert any(a.startswith("approved by") and "via sidebar" in a for a in log), log
    assert any(a.startswith("rejected by") and "via api: b.txt" in a for a in log), log
    # Bad frames are refused without harm.
    await tab.send({"type": "approval", "id": first["id"], "decision": "maybe"})
    await until(lambda: [f for f in tab.of("error") if f.get("code") == "bad_frame"], 10, "bad")


async def test_cancel_rejects_the_pending_approval(api, ws, think, model_env):
    model_env.reply(tool_calls=[("delete_file", {"path": "x.txt"})])
    sid = await _session(api)
    tab = await ws(sid)
    await api("POST", f"sessions/{sid}/messages", {"content": "delete x.txt"})
    asked = (await until(lambda: tab.of("approval_requested"), 60, "approval"))[0]
    await api("POST", f"sessions/{sid}/cancel")
    resolved = await until(lambda: tab.of("approval_resolved"), 30, "rejected by the cancel")
    assert resolved[0]["decision"] == "reject" and resolved[0]["source"] == "cancel"
    _, row = await api("GET", f"sessions/{sid}/approvals/{asked['id']}")
    assert row["status"] == "rejected"


async def test_a_killed_kernel_resumes_waiting_and_continues_without_repeats(
    api, ws, think, model_env, jp_root_dir, strict_kernel
):
    model_env.reply(tool_calls=[("bash", {"command": "echo ran >> count.txt"})])
    model_env.reply(text="Deleted after the restart.")
    sid = await _session(api)
    tab = await ws(sid)
    await api("POST", f"sessions/{sid}/messages", {"content": "count"})
    asked = (await until(lambda: tab.of("approval_requested"), 60, "approval"))[0]
    chats = think.services.chats
    kid = chats.kernels[sid]
    km = think.serverapp.kernel_manager
    pid = km.get_kernel(kid).provisioner.process.pid
    os.kill(pid, signal.SIGKILL)  # the kernel dies while the run waits
    # Recovery retries the run in a new kernel, which waits on the same approval again.
    await until(lambda: chats.kernels.get(sid) not in (None, kid), 90, "a new kernel")
    again = await until(
        lambda: [f for f in tab.of("approval_requested") if f is not asked], 90, "asked again"
    )
    assert again[0]["id"] == asked["id"]
    assert len(model_env.requests) == 1  # the step was not asked of the model again
    code, _ = await api("POST", f"sessions/{sid}/approvals/{asked['id']}", {"decision": "approve"})
    assert code == 200
    await until(lambda: tab.of("task_complete"), 90, "the run ends")
    assert (jp_root_dir / "count.txt").read_text() == "ran\n"  # the tool ran once
    assert len(model_env.requests) == 2
    _, page = await api("GET", f"sessions/{sid}/messages")
    assert page["messages"][-1]["content"] == "Deleted after the restart."


def test_a_killed_server_leaves_the_run_waiting_and_approval_continues_it(tmp_path, fake_model):
    """Server and kernel killed while a run waits; the next server shows the same pending
    approval, and approving it runs the call once without asking the model again."""
    from tests.waiting import wait_until as until_sync

    from .test_restart import Server, _setup

    env = _setup(tmp_path, fake_model)
    config = tmp_path / "config" / "think_kernel_config.py"
    config.write_text('c.ThinkConfig.approval_policy = "strict"\n')
    fake_model.reply(tool_calls=[("bash", {"command": "echo ran >> count.txt"})])
    fake_model.reply(text="Counted after the restart.")
    root = tmp_path / "root"
    first = Server(tmp_path, env)
    try:
        first.wait_up()
        sid = first.call("POST", "sessions", {"title": "durable approval"})["id"]
        first.call("POST", f"sessions/{sid}/messages", {"content": "count"})
        pending = until_sync(
            lambda: first.call("GET", f"sessions/{sid}/approvals?status=pending")["approvals"],
            90,
            "the approval",
        )
    finally:
        first.kill()
    second = Server(tmp_path, env)
    try:
        second.wait_up()
        # A reloaded page asks the new server: the approval is still pending, the run waits.
        listed = second.call("GET", f"sessions/{sid}/approvals?status=pending")["approvals"]
        assert [a["id"] for a in listed] == [pending[0]["id"]]

        def asked_again() -> bool:
            events = second.call("GET", f"sessions/{sid}/events")["events"]
            return any(
                e["type"] == "approval_requested" and e["data"]["id"] == pending[0]["id"]
                for e in events[len(events) // 2 :]
            ) and any(e["type"] == "task_retrying" for e in events)

        until_sync(asked_again, 120, "the resumed run waits on the same approval")
        assert len(fake_model.requests) == 1
        second.call("POST", f"sessions/{sid}/approvals/{pending[0]['id']}", {"decision": "approve"})

        def finished():
            run = second.call("GET", f"sessions/{sid}")["run"]
            return run is None and second.call("GET", f"sessions/{sid}/messages")

        page = until_sync(finished, 120, "the run to finish on the second server")
        assert page["messages"][-1]["content"] == "Counted after the restart."
        assert (root / "count.txt").read_text() == "ran\n"
        assert len(fake_model.requests) == 2
    finally:
        second.kill()


async def test_the_session_policy_is_set_over_the_api(api, think):
    sid = await _session(api)
    code, s = await api("PATCH", f"sessions/{sid}", {"approval": {"mode": "strict"}})
    assert code == 200 and s["options"]["approval"] == {"mode": "strict"}
    for bad in (
        {"mode": "lax"},
        {"rules": [{"tool": "bash", "arg": "command", "regex": "("}]},
        {"always": "bash"},
        {"colour": "red"},
        "strict",
    ):
        code, _ = await api("PATCH", f"sessions/{sid}", {"approval": bad})
        assert code == 400, bad
    code, s = await api("PATCH", f"sessions/{sid}", {"approval": None})
    assert code == 200 and "approval" not in s["options"]
