"""Background jobs on a real server with a real chat kernel and sandbox: the model starts a
job that prints progress, the person keeps chatting while it runs, the jobs API and the
session's tabs show its progress, its chat does not hibernate meanwhile, its end notifies
every tab and wakes the agent, which reads its output; a person's Stop ends jobs.

``THINK_JOB_TEST_SECONDS`` sets the job's length (default 3 s; 180 for the three-minute case
of the benchmarks)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from jupyter_ext.jobs import message_id
from tests.waiting import until
from think_kernel.jobs import setting_key

from .conftest import WSClient

SECONDS = float(os.environ.get("THINK_JOB_TEST_SECONDS", "3"))
pytestmark = pytest.mark.timeout(120 + 2 * SECONDS)


@pytest.fixture
def think_config():
    # The scheduler's own poll is a minute: a job's end that shows in seconds proves the
    # kernel woke it over the link. A chat idle for a second hibernates, unless jobs run.
    return {"heartbeat_interval": 0.2, "kernel_pool_size": 0, "scheduler_poll": 60.0,
            "hibernate_after": 1.0}  # fmt: skip


@pytest.fixture
async def notifications(jp_ws_fetch, think):
    """A tab's user-level notification socket."""
    conn = await jp_ws_fetch("api", "think", "notifications")
    client = WSClient(conn)
    await until(lambda: client.of("hello"), 10, "the hello frame")
    yield client
    client.conn.close()


def jobs_frames(tab: WSClient) -> list[list[dict]]:
    """The jobs of each ``jobs`` frame the tab got (frames of no job left out)."""
    return [f["jobs"] for f in tab.of("jobs") if f["jobs"]]


def chat_text(tab: WSClient, text: str) -> bool:
    """Whether the tab saw the assistant say ``text``."""
    return any(f.get("type") == "chat" and text in json.dumps(f) for f in tab.frames)


async def test_a_job_runs_while_the_person_chats_and_wakes_the_agent(
    model_env, api, ws, think, notifications, jp_root_dir: Path
) -> None:
    steps = max(4, int(SECONDS * 4))
    # The job's end waits for a file the test writes once the person's second message is
    # answered and the chat has been idle past hibernate_after: the job surely runs then.
    command = (f"for i in $(seq 1 {steps}); do echo \"step $i/{steps} "
               f"$((i * 100 / {steps}))%\"; sleep 0.25; done; "
               "until [ -e release ]; do echo waiting; sleep 0.2; done; echo finished")  # fmt: skip
    model_env.reply(tool_calls=[("run_job", {"command": command, "name": "train", "wake": True})])
    model_env.reply(text="Training started.")
    model_env.reply(text="Sunny all week.")
    model_env.reply(tool_calls=[("job_output", {"name": "train", "tail": 3})])
    model_env.reply(text="Training finished.")
    _, s = await api("POST", "sessions", {"title": "jobs"})
    sid = s["id"]
    tab = await ws(sid)
    await api("POST", f"sessions/{sid}/messages", {"content": "train the model"})
    await until(lambda: chat_text(tab, "Training started."), 60, "the job started")

    async def progress():
        _, body = await api("GET", f"sessions/{sid}/jobs")
        jobs = body["jobs"]
        return jobs if jobs and (jobs[0]["percent"] or 0) >= 25 else None

    [job] = await until(progress, 30 + SECONDS, "the job's progress in the API", every=0.2)
    assert job["name"] == "train" and job["state"] == "running" and job["lines"] >= 1
    assert job["wake"] is True and job["limits"]["timeout_s"] > 30  # its own wall clock

    # The person keeps chatting while it runs.
    await api("POST", f"sessions/{sid}/messages", {"content": "and the weather?"})
    await until(lambda: chat_text(tab, "Sunny all week."), 60, "the chat answered")
    _, body = await api("GET", f"sessions/{sid}/jobs")
    assert body["jobs"][0]["state"] == "running"
    # The tab follows it live; idle for longer than hibernate_after, the chat keeps its
    # kernel (hibernating would end the job with it).
    idle_from = body["jobs"][0]["elapsed"]
    seen = await until(lambda: [f for f in jobs_frames(tab) if f[0]["elapsed"] >= idle_from + 3],
                       30 + SECONDS, "the tab's jobs frames")  # fmt: skip
    assert seen[-1][0]["name"] == "train" and seen[-1][0]["state"] == "running"
    assert think.services.chats.pool.culled == 0

    (jp_root_dir / "release").write_text("")
    # The job ends once its steps are done (THINK_JOB_TEST_SECONDS) and it sees the file.
    frame = (await until(lambda: notifications.of("job"), 60 + SECONDS, "its notification"))[0]
    assert frame["session_id"] == sid and frame["name"] == "train" and frame["state"] == "done"
    assert frame["session_title"] == "jobs" and "ended (done, exit code 0)" in frame["message"]
    await until(lambda: chat_text(tab, "Training finished."), 60, "the woken run answered")

    _, page = await api("GET", f"sessions/{sid}/messages")
    users = [m for m in page["messages"] if m["role"] == "user"]
    woke = users[-1]
    assert woke["id"] == frame["message_id"] == message_id(frame["key"])
    assert woke["content"].startswith("Background job 'train' ended (done, exit code 0)")
    assert "finished" in woke["content"] and woke["attachments"][0]["kind"] == "job"
    # The woken run read the job's log through job_output.
    sent = json.dumps(model_env.requests[-1]["messages"][-1])
    assert "train: done, exit code 0" in sent and "finished" in sent, sent
    _, body = await api("GET", f"sessions/{sid}/jobs")
    [job] = body["jobs"]
    assert job["state"] == "done" and job["lines"] > steps and job["percent"] == 100
    assert job["tail"].endswith(f"step {steps}/{steps} 100%\nfinished") or job["tail"].endswith(
        "waiting\nfinished"
    )


async def test_the_jobs_api_needs_a_session_and_tells_lost_jobs(api, think) -> None:
    status, _ = await api("GET", "sessions/s_nope/jobs")
    assert status == 404
    _, s = await api("POST", "sessions", {"title": "none"})
    assert await api("GET", f"sessions/{s['id']}/jobs") == (200, {"jobs": []})
    # A kernel that died with a job running left it recorded as running: shown lost.
    gone = await asyncio.create_subprocess_exec("true")
    await gone.wait()
    row = {"name": "orphan", "state": "running", "error": ""}
    record = {"kernel": "k", "pid": gone.pid, "jobs": [row]}
    await think.services.store.set_setting(setting_key(s["id"]), record)
    _, body = await api("GET", f"sessions/{s['id']}/jobs")
    assert body["jobs"] == [{**row, "state": "lost", "error": "its kernel stopped while it ran"}]


async def test_a_persons_stop_ends_the_jobs(model_env, api, ws, think, notifications) -> None:
    model_env.reply(tool_calls=[("run_job", {"command": "while true; do echo tick; sleep 0.1; "
                                             "done", "name": "forever"})])  # fmt: skip
    model_env.reply(text="Running.")
    _, s = await api("POST", "sessions", {"title": "stop"})
    sid = s["id"]
    tab = await ws(sid)
    await api("POST", f"sessions/{sid}/messages", {"content": "run forever"})
    await until(lambda: chat_text(tab, "Running."), 60, "the job started")
    await until(lambda: jobs_frames(tab), 30, "the tab's jobs frame")

    status, body = await api("POST", f"sessions/{sid}/jobs/stop", {})
    assert status == 202 and body == {"sent": True, "name": ""}

    def stopped():
        return [jobs for jobs in jobs_frames(tab) if jobs[0]["state"] == "stopped"]

    frame = (await until(stopped, 30, "the stopped job's frame"))[-1][0]
    assert frame["error"] == "stopped from the sidebar (Stop all)"
    bell = (await until(lambda: notifications.of("job"), 30, "the notification"))[0]
    assert bell["state"] == "stopped" and "message_id" not in bell  # it did not ask to wake
    _, listed = await api("GET", f"sessions/{sid}/jobs")
    assert listed["jobs"][0]["state"] == "stopped"
    _, other = await api("POST", "sessions", {"title": "no kernel"})
    assert (await api("POST", f"sessions/{other['id']}/jobs/stop", {}))[0] == 409
