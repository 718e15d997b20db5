"""The pause and the decisions, through a real Runtime against the scripted model."""

from __future__ import annotations

import asyncio
from typing import Any

from think_kernel.runtime import Runtime

from ..fake_model import FakeModel


async def run_until_approval(
    rt: Runtime, request: str
) -> tuple[asyncio.Task[list[dict]], list[dict], dict]:
    """Start a run; return it, its events so far and the first approval_requested frame."""
    events: list[dict] = []
    asked: asyncio.Future[dict] = asyncio.get_running_loop().create_future()

    async def consume() -> list[dict]:
        async for ev in rt.run(request):
            frame = ev.to_dict()
            events.append(frame)
            if frame["type"] == "approval_requested" and not asked.done():
                asked.set_result(frame)
        return events

    task = asyncio.ensure_future(consume())
    done, _ = await asyncio.wait([task, asked], timeout=30, return_when=asyncio.FIRST_COMPLETED)
    assert asked in done, [e["type"] for e in events]
    return task, events, asked.result()


def decide(rt: Runtime, aid: str, decision: str, **extra: Any) -> Any:
    return rt.resolve_approval(aid, {"local": True, "decision": decision, **extra})


async def test_approve_runs_the_call_and_logs_who(runtime: Runtime, fake_model: FakeModel) -> None:
    (runtime.workspace.root / "old.txt").write_text("bye\n")
    fake_model.reply(tool_calls=[("delete_file", {"path": "old.txt"})])
    fake_model.reply(text="Deleted.")
    task, events, asked = await run_until_approval(runtime, "delete old.txt")
    assert asked["tool"] == "delete_file" and asked["summary"] == "delete old.txt"
    assert "-bye" in asked["diff"]
    assert (runtime.workspace.root / "old.txt").exists()  # not before the decision
    assert len(fake_model.requests) == 1  # the model is not held while waiting
    assert await decide(runtime, asked["id"], "approve", user="ada", source="notebook")
    assert not await decide(runtime, asked["id"], "reject")  # the first decision wins
    events = await asyncio.wait_for(task, 30)
    assert not (runtime.workspace.root / "old.txt").exists()
    resolved = [e for e in events if e["type"] == "approval_resolved"]
    assert resolved[0]["decision"] == "approve" and resolved[0]["user"] == "ada"
    at = events.index(asked)
    assert events[at + 1] == {
        "type": "status",
        "status": "waiting",
        "detail": "approval needed: delete old.txt",
    }
    assert events[-2]["type"] == "chat"
    assert runtime.store is not None
    log = await runtime.store.list_actions(runtime.session_id)
    assert any(r["action"].startswith("approved by ada via notebook") for r in log)
    row = (await runtime.store.list_approvals(runtime.session_id))[0]
    assert row["status"] == "approved" and row["executed_at"]


async def test_reject_reason_reaches_the_model(runtime: Runtime, fake_model: FakeModel) -> None:
    (runtime.workspace.root / "keep.txt").write_text("x\n")
    fake_model.reply(tool_calls=[("delete_file", {"path": "keep.txt"})])
    fake_model.reply(text="OK, I kept it.")
    task, _, asked = await run_until_approval(runtime, "clean up")
    assert await decide(runtime, asked["id"], "reject", reason="that file is my thesis")
    await asyncio.wait_for(task, 30)
    assert (runtime.workspace.root / "keep.txt").exists()
    tool_msg = [m for m in fake_model.requests[1]["messages"] if m["role"] == "tool"][0]
    assert "rejected" in tool_msg["content"] and "my thesis" in tool_msg["content"]


async def test_edited_input_and_always(runtime: Runtime, fake_model: FakeModel) -> None:
    runtime.config.approval_policy = "strict"
    (runtime.workspace.root / "a.txt").write_text("one\n")
    fake_model.reply(tool_calls=[("read_file", {"path": "a.txt"})])
    fake_model.reply(tool_calls=[("write_file", {"path": "a.txt", "content": "two\n"})])
    fake_model.reply(tool_calls=[("write_file", {"path": "a.txt", "content": "four\n"})])
    fake_model.reply(text="Done.")
    task, events, asked = await run_until_approval(runtime, "rewrite a.txt")
    assert not any(e["type"] == "approval_requested" and e["tool"] == "read_file" for e in events)
    assert "-one" in asked["diff"] and "+two" in asked["diff"]
    edited = {"path": "a.txt", "content": "three\n"}
    assert await decide(runtime, asked["id"], "approve", input=edited, always=True)
    events = await asyncio.wait_for(task, 30)
    # The second write_file did not ask: "always" holds for the session.
    assert [e["type"] for e in events].count("approval_requested") == 1
    assert (runtime.workspace.root / "a.txt").read_text() == "four\n"
    first_write = [m for m in fake_model.requests[2]["messages"] if m["role"] == "tool"][-1]
    assert first_write["tool_call_id"] == asked["call_id"]
    assert "always" in str((await runtime.props())["approval"])


async def test_timeout_rejects(runtime: Runtime, fake_model: FakeModel) -> None:
    runtime.config.approval_timeout = 0.3
    fake_model.reply(tool_calls=[("run_in_kernel_like", {})])  # unknown: never asks
    fake_model.reply(tool_calls=[("delete_file", {"path": "x.txt"})])
    fake_model.reply(text="No answer, so I left it.")
    task, _, asked = await run_until_approval(runtime, "delete x.txt")
    events = await asyncio.wait_for(task, 30)
    resolved = [e for e in events if e["type"] == "approval_resolved"][0]
    assert resolved["decision"] == "reject" and resolved["source"] == "timeout"
    tool_msg = [m for m in fake_model.requests[2]["messages"] if m["role"] == "tool"][-1]
    assert "in time" in tool_msg["content"]
    assert asked["expires_at"] > 0


async def test_cancel_rejects_pending(runtime: Runtime, fake_model: FakeModel) -> None:
    fake_model.reply(tool_calls=[("delete_file", {"path": "x.txt"})])
    task, _, asked = await run_until_approval(runtime, "delete x.txt")
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert runtime.store is not None
    row = await runtime.store.get_approval(asked["id"])
    assert row is not None and row["status"] == "rejected"
    assert row["decision"]["source"] == "cancel"


async def test_a_decision_stored_elsewhere_is_found(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    """The server (REST) writes the row; the waiting run finds it without being told."""
    from think_kernel.approvals import decide as store_decide
    from think_kernel.approvals import decision_record

    (runtime.workspace.root / "x.txt").write_text("x\n")
    fake_model.reply(tool_calls=[("delete_file", {"path": "x.txt"})])
    fake_model.reply(text="Deleted.")
    task, _, asked = await run_until_approval(runtime, "delete x.txt")
    assert runtime.store is not None
    row = await runtime.store.get_approval(asked["id"])
    assert row is not None
    assert await store_decide(runtime.store, row, decision_record("approve", source="api"))
    await asyncio.wait_for(task, 30)
    assert not (runtime.workspace.root / "x.txt").exists()
