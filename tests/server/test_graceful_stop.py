"""A graceful stop of the server is not a cancel: SIGTERM (a container stop, a hub's cull),
SIGINT (Ctrl-C) and ``jupyter server stop`` leave the runs, approvals and reminders to continue
after the next start exactly as a crash (SIGKILL) does; a person's Stop still cancels.

Real ``jupyter server`` subprocesses on one store, real think kernels and sandbox; the model is
scripted at HTTP.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid

import psutil
import pytest

from tests.procs import marked_loop, processes_with
from tests.waiting import wait_until

from .test_restart import Server, _setup

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def _think_kernels(server: Server) -> list[psutil.Process]:
    found = []
    for p in psutil.Process(server.proc.pid).children(recursive=True):
        try:
            if "think_kernel" in " ".join(p.cmdline()):
                found.append(p)
        except psutil.Error:
            continue
    return found


def _stop(server: Server, how: str, env: dict[str, str]) -> None:
    """Stop the server as a person or a host does, and wait until it and its kernels exit."""
    kernels = _think_kernels(server)
    if how == "SIGTERM":
        os.kill(server.proc.pid, signal.SIGTERM)
    elif how == "SIGINT":
        os.kill(server.proc.pid, signal.SIGINT)
    else:  # jupyter server stop <port>: the server's /api/shutdown, then SIGTERM
        subprocess.run(
            [sys.executable, "-m", "jupyter_server", "stop", str(server.port)],
            env=env,
            check=True,
            timeout=60,
            capture_output=True,
        )
    try:
        server.proc.wait(60)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the server did not exit within 60 s of {how}") from None
    _, alive = psutil.wait_procs(kernels, timeout=30)
    assert not alive, f"kernels left running: {alive}"


def _finished(server: Server, sid: str):
    run = server.call("GET", f"sessions/{sid}")["run"]
    return run is None and server.call("GET", f"sessions/{sid}/messages")


def _strict(tmp_path) -> None:
    config = tmp_path / "config" / "think_kernel_config.py"
    config.write_text('c.ThinkConfig.approval_policy = "strict"\n')


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "jupyter server stop"])
def test_a_stopped_server_leaves_the_approval_pending_and_approving_continues(
    tmp_path, fake_model, how
):
    """A run waits on an approval; the server is stopped gracefully; the next server shows
    the same approval pending, and approving it runs the call once and ends the run."""
    env = _setup(tmp_path, fake_model)
    _strict(tmp_path)
    fake_model.reply(tool_calls=[("bash", {"command": "echo ran >> count.txt"})])
    fake_model.reply(text="Counted after the restart.")
    first = Server(tmp_path, env)
    try:
        first.wait_up()
        sid = first.call("POST", "sessions", {"title": "graceful approval"})["id"]
        first.call("POST", f"sessions/{sid}/messages", {"content": "count"})
        pending = wait_until(
            lambda: first.call("GET", f"sessions/{sid}/approvals?status=pending")["approvals"],
            90,
            "the approval",
        )
        _stop(first, how, env)
    finally:
        if first.proc.poll() is None:
            first.kill()
    second = Server(tmp_path, env)
    try:
        second.wait_up()
        listed = second.call("GET", f"sessions/{sid}/approvals?status=pending")["approvals"]
        assert [a["id"] for a in listed] == [pending[0]["id"]], second.call(
            "GET", f"sessions/{sid}/approvals"
        )

        def asked_again() -> bool:
            events = second.call("GET", f"sessions/{sid}/events")["events"]
            retried = [i for i, e in enumerate(events) if e["type"] == "task_retrying"]
            return bool(retried) and any(
                e["type"] == "approval_requested" and e["data"]["id"] == pending[0]["id"]
                for e in events[retried[-1] :]
            )

        wait_until(asked_again, 120, "the resumed run waits on the same approval")
        assert len(fake_model.requests) == 1
        second.call("POST", f"sessions/{sid}/approvals/{pending[0]['id']}", {"decision": "approve"})
        page = wait_until(lambda: _finished(second, sid), 120, "the run to finish")
        assert page["messages"][-1]["content"] == "Counted after the restart."
        assert page["messages"][-1]["status"] == "complete"
        assert (tmp_path / "root" / "count.txt").read_text() == "ran\n"
        assert len(fake_model.requests) == 2
        [row] = second.call("GET", f"sessions/{sid}/approvals")["approvals"]
        assert row["status"] == "approved", row
    finally:
        second.kill()


def test_a_server_stopped_during_a_tool_call_resumes_the_run(tmp_path, fake_model):
    """A run is in the middle of a bash call when the server gets SIGTERM: the next server
    resumes the run as after a crash: the call counts as interrupted (no result of it is
    stored, cancelled or failed), the model is told so, and the run ends with its answer."""
    env = _setup(tmp_path, fake_model)
    marker = f"stopmark{uuid.uuid4().hex[:8]}"
    fake_model.reply(tool_calls=[("bash", {"command": marked_loop(marker, "sleep 0.2")})])
    fake_model.reply(text="Answer after the restart.")
    first = Server(tmp_path, env)
    try:
        first.wait_up()
        sid = first.call("POST", "sessions", {"title": "graceful tool"})["id"]
        sent = first.call("POST", f"sessions/{sid}/messages", {"content": "run a command"})
        wait_until(lambda: processes_with(marker), 90, "the tool runs in the sandbox")
        _stop(first, "SIGTERM", env)
    finally:
        if first.proc.poll() is None:
            first.kill()
    wait_until(lambda: not processes_with(marker), 30, "the stopped run's process gone")
    second = Server(tmp_path, env)
    try:
        second.wait_up()
        page = wait_until(lambda: _finished(second, sid), 120, "the run to finish")
        rows = page["messages"]
        shown = [(m["role"], m["status"], m["content"][:60]) for m in rows]
        assert [m["content"] for m in rows if m["role"] == "user"] == ["run a command"]
        assert rows[-1]["content"] == "Answer after the restart.", shown
        assert rows[-1]["status"] == "complete"
        steps = [m for m in rows if m["role"] == "assistant" and m["tool_calls"]]
        assert len(steps) == 1 and steps[0]["status"] == "complete", shown
        assert [m for m in rows if m["role"] == "tool"] == [], shown
        assert len(fake_model.requests) == 2
        told = json.dumps(fake_model.requests[1]["messages"])
        assert "the run was interrupted before this tool finished" in told
        events = second.call("GET", f"sessions/{sid}/events")["events"]
        assert events[-1]["type"] == "task_complete"
        assert events[-1]["data"]["task_id"] == sent["run_id"]
    finally:
        second.kill()


def test_a_server_stopped_mid_delegation_leaves_the_subagent_interrupted(tmp_path, fake_model):
    """A subagent works when the server gets SIGTERM: after the next start it counts as
    interrupted, as after a crash (not cancelled by the kernel's shutdown), the resumed run's
    model is told, and the run ends."""
    env = _setup(tmp_path, fake_model)
    fake_model.reply(
        tool_calls=[("delegate_to_subagent", {"task": "SUB-G long job", "instructions": "work"})]
    )
    fake_model.reply(tool_calls=[("wait_for_subagents", {})])
    fake_model.reply_for("SUB-G", hang=True, text="never")
    first = Server(tmp_path, env)
    try:
        first.wait_up()
        sid = first.call("POST", "sessions", {"title": "graceful delegation"})["id"]
        first.call("POST", f"sessions/{sid}/messages", {"content": "delegate a long job"})
        wait_until(
            lambda: [s for s in fake_model.spans if s["key"] == "SUB-G"], 90, "the subagent runs"
        )
        wait_until(lambda: len(fake_model.requests) >= 2, 30, "the parent waits")
        fake_model.reply(text="The subagent was interrupted; I will redo it later.")
        _stop(first, "SIGTERM", env)
    finally:
        if first.proc.poll() is None:
            first.kill()
    second = Server(tmp_path, env)
    try:
        second.wait_up()
        page = wait_until(lambda: _finished(second, sid), 120, "the resumed run to finish")
        assert page["messages"][-1]["content"] == (
            "The subagent was interrupted; I will redo it later."
        ), [(m["role"], m["status"], m["content"][:60]) for m in page["messages"]]
        events = second.call("GET", f"sessions/{sid}/events")["events"]
        errors = [e["data"] for e in events if e["type"] == "subagent_error"]
        assert [e["code"] for e in errors] == ["interrupted"], errors
        (root,) = second.call("GET", f"sessions/{sid}/tasks")["tasks"]
        assert root["status"] == "complete"
        (task,) = root["children"]
        assert task["status"] == "failed" and task["subagent"]["status"] == "interrupted", task
    finally:
        second.kill()


def test_a_persons_stop_still_cancels_and_a_stop_of_the_server_keeps_it(tmp_path, fake_model):
    """Stop from a person is a cancel: the pending approval is rejected and the run ends
    cancelled; the server's SIGTERM after it changes nothing, and the next server does not
    run the request again."""
    env = _setup(tmp_path, fake_model)
    _strict(tmp_path)
    fake_model.reply(tool_calls=[("bash", {"command": "echo ran >> count.txt"})])
    first = Server(tmp_path, env)
    try:
        first.wait_up()
        sid = first.call("POST", "sessions", {"title": "stopped by a person"})["id"]
        first.call("POST", f"sessions/{sid}/messages", {"content": "count"})
        [asked] = wait_until(
            lambda: first.call("GET", f"sessions/{sid}/approvals?status=pending")["approvals"],
            90,
            "the approval",
        )
        run = first.call("POST", f"sessions/{sid}/cancel")["run"]
        assert run["status"] == "cancelled", run
        _stop(first, "SIGTERM", env)
    finally:
        if first.proc.poll() is None:
            first.kill()
    second = Server(tmp_path, env)
    try:
        second.wait_up()
        row = second.call("GET", f"sessions/{sid}/approvals/{asked['id']}")
        assert row["status"] == "rejected" and row["decision"]["source"] == "cancel", row
        assert second.call("GET", f"sessions/{sid}")["run"] is None
        events = second.call("GET", f"sessions/{sid}/events")["events"]
        assert [e["type"] for e in events if e["type"].startswith("task_")][-1] == "task_failed"
        assert not [e for e in events if e["type"] == "task_retrying"]
        assert len(fake_model.requests) == 1
        assert not (tmp_path / "root" / "count.txt").exists()
    finally:
        second.kill()


def test_a_reminder_set_before_a_graceful_stop_fires_once_after_the_start(tmp_path, fake_model):
    """The model sets a reminder; the server is stopped with SIGTERM before it is due and its
    time passes while nothing runs; the next server fires it once, marked late, and answers
    it (as after a crash)."""
    env = _setup(tmp_path, fake_model)
    fake_model.reply(
        tool_calls=[("schedule_reminder", {"when": "in 15 seconds", "message": "check the tea"})]
    )
    fake_model.reply(text="Set.")
    fake_model.reply(text="Tea checked.")
    first = Server(tmp_path, env)
    try:
        first.wait_up()
        sid = first.call("POST", "sessions", {"title": "tea"})["id"]
        first.call("POST", f"sessions/{sid}/messages", {"content": "remind me about the tea"})

        def set_and_answered():
            rows = first.call("GET", f"sessions/{sid}/schedules?kind=reminder")["schedules"]
            return first.call("GET", f"sessions/{sid}")["run"] is None and rows

        [row] = wait_until(set_and_answered, 90, "the reminder set")
        due = row["due_at"]
        assert row["status"] == "pending" and time.time() < due - 1, "too slow to stop first"
        _stop(first, "SIGTERM", env)
    finally:
        if first.proc.poll() is None:
            first.kill()
    wait_until(lambda: time.time() > due + 1, 30, "the reminder's time to pass")
    second = Server(tmp_path, env)
    try:
        second.wait_up()

        def answered():
            page = second.call("GET", f"sessions/{sid}/messages")["messages"]
            run = second.call("GET", f"sessions/{sid}")["run"]
            return run is None and page[-1]["content"] == "Tea checked." and page

        page = wait_until(answered, 90, "the late reminder's run answered")
        reminders = [
            m
            for m in page
            if m["role"] == "user" and any(a["kind"] == "reminder" for a in m["attachments"] or [])
        ]
        assert len(reminders) == 1, [(m["role"], m["content"][:60]) for m in page]
        assert reminders[0]["attachments"][0]["late"] is True
        [row] = second.call("GET", f"sessions/{sid}/schedules?kind=reminder")["schedules"]
        assert row["status"] == "done" and row["fired_count"] == 1
        assert len(fake_model.requests) == 3
    finally:
        second.kill()
