"""The durable ``subagent_check`` schedules: what the server does with a subagent
row at each check, with the real store, event pipeline and hub (no kernel needed)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_ext.hub import Hub
from jupyter_ext.pipeline import EventPipeline
from jupyter_ext.subagents import SubagentChecks
from tests.waiting import until
from think_kernel.store import Store
from think_kernel.subagents import Checks, owner_alive, verdict
from think_kernel.subagents.monitor import this_owner
from think_kernel.tasks import TaskBoard

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow


class Tab:
    """A subscriber of the hub (what a WebSocket gets)."""

    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []

    def send_text(self, text: str) -> None:
        self.frames.append(json.loads(text))


@pytest.fixture
async def setup(tmp_path: Path) -> AsyncIterator[tuple[Store, EventPipeline, Tab, str]]:
    store = await Store.open(tmp_path / "think.db")
    hub = Hub()
    pipeline = EventPipeline(hub)
    runner = asyncio.ensure_future(pipeline.run(store))
    session = await store.create_session(title="checks")
    tab = Tab()
    hub.subscribe(session["id"], tab)
    try:
        yield store, pipeline, tab, session["id"]
    finally:
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
        await store.close()


async def _running_task(store: Store, sid: str, owner: str, **fields: Any) -> dict[str, Any]:
    board = TaskBoard(store, lambda event: None)
    root = await board.begin(sid, "the request", "m_1")
    task = await board.create(root["id"], title="job")
    await board.start(task["id"])
    now = time.time()
    row = dict(
        subagent_status="running",
        subagent_owner=owner,
        subagent_started_at=now,
        subagent_heartbeat_at=now,
        subagent_deadline=now + 600,
    )
    await store.update_subagent(task["id"], **{**row, **fields})
    return task


def test_the_verdict() -> None:
    now = 1000.0
    row = {
        "subagent_status": "running",
        "subagent_owner": "o",
        "subagent_started_at": 900.0,
        "subagent_heartbeat_at": 995.0,
        "subagent_deadline": 1500.0,
    }
    alive = lambda owner: True  # noqa: E731
    assert verdict(row, now, alive=alive, stale_after=30) == ("running", "")
    assert (
        verdict({**row, "subagent_status": "complete"}, now, alive=alive, stale_after=30)[0]
        == "done"
    )
    assert verdict(row, now, alive=lambda o: False, stale_after=30)[0] == "interrupted"
    assert verdict(row, 1100.0, alive=alive, stale_after=30)[0] == "interrupted"  # silent
    assert verdict(row, 1600.0, alive=alive, stale_after=1e9)[0] == "timeout"
    assert owner_alive(this_owner()) is True
    assert owner_alive("another-host/1/x") is None
    assert Checks(30, 60).attempts(600) == 12  # through the timeout, and one more


async def test_a_live_subagent_is_checked_again_a_bounded_number_of_times(setup) -> None:
    store, pipeline, tab, sid = setup
    task = await _running_task(store, sid, this_owner())
    checks = SubagentChecks(store, pipeline)
    payload = {"task_id": task["id"], "attempt": 1, "attempts": 2, "every": 60, "stale_after": 30}
    await checks(payload)
    (again,) = [r for r in await store.due_schedules(time.time() + 61)]
    assert again["payload"] == {**payload, "attempt": 2} and again["kind"] == "subagent_check"
    assert again["due_at"] > time.time() + 50
    await store.finish_schedule(again["id"], "done")
    await checks({**payload, "attempt": 2})  # the last one: still running is a timeout
    assert not await store.due_schedules(time.time() + 3600)
    row = await store.get_task(task["id"])
    assert row is not None and row["subagent_status"] == "timeout" and row["status"] == "failed"
    await until(lambda: [f for f in tab.frames if f["type"] == "subagent_error"], 5)
    (error,) = [f for f in tab.frames if f["type"] == "subagent_error"]
    assert error["code"] == "timeout" and error["task_id"] == task["id"]


async def test_a_dead_owner_is_reported_once(setup) -> None:
    store, pipeline, tab, sid = setup
    proc = await asyncio.create_subprocess_exec("true")
    await proc.wait()
    task = await _running_task(store, sid, f"{os.uname().nodename}/{proc.pid}/gone")
    asked = await store.create_approval(
        sid, "m_2", "call_1", "bash", {"command": "ls"}, task_id=task["id"]
    )
    checks = SubagentChecks(store, pipeline)
    payload = {"task_id": task["id"], "attempt": 1, "attempts": 5}
    await checks(payload)
    await checks(payload)  # a repeated check (at-least-once schedules) changes nothing
    row = await store.get_task(task["id"])
    assert row is not None and row["subagent_status"] == "interrupted"
    approval = await store.get_approval(asked["id"])  # nobody waits for it any more
    assert approval is not None and approval["status"] == "rejected"
    assert approval["decision"]["reason"] == "the subagent was interrupted"
    await until(lambda: [f for f in tab.frames if f["type"] == "message"], 5)
    reports = [m for m in await store.get_messages(sid) if m["name"] == "subagent_report"]
    assert len(reports) == 1 and "was interrupted" in reports[0]["content"]
    kinds = [f["type"] for f in tab.frames]
    assert kinds.count("subagent_error") == 1 and kinds.count("message") == 1
    updated = [f["task"] for f in tab.frames if f["type"] == "task_updated"]
    assert updated[-1]["status"] == "failed" and updated[-1]["subagent"]["status"] == "interrupted"


async def test_bad_payloads_do_nothing(setup) -> None:
    store, pipeline, tab, sid = setup
    checks = SubagentChecks(store, pipeline)
    for payload in ({}, {"task_id": 7}, {"task_id": "t_nope"}, {"task_id": "x", "attempt": "y"}):
        await checks(payload)
    assert not await store.due_schedules(time.time() + 3600) and not tab.frames
