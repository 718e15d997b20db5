"""The agent loop against the scripted model: tools, concurrency, limits, faults, history."""

from __future__ import annotations

import asyncio
import json

from think_kernel.config import ThinkConfig
from think_kernel.runtime import Runtime
from think_kernel.tools.base import ToolContext, read_only

from ..fake_model import FakeModel
from .conftest import collect


def types(events: list[dict]) -> list[str]:
    return [e["type"] for e in events]


async def test_multi_step_tool_use(runtime: Runtime, fake_model: FakeModel) -> None:
    fake_model.reply(
        reasoning="I will write then list.",
        tool_calls=[
            ("write_file", {"path": "hello.py", "content": "print('hi')\n"}),
            ("list_files", {}),
        ],
    )
    fake_model.reply(tool_calls=[("list_files", {"path": "."})])
    fake_model.reply(text="Created **hello.py**; the folder holds it.")
    events = await collect(runtime, "create hello.py that prints hi, run nothing, list the folder")

    assert (runtime.workspace.root / "hello.py").read_text() == "print('hi')\n"
    assert "reasoning" in types(events)
    calls = [e for e in events if e["type"] == "tool_call"]
    results = {e["call_id"]: e for e in events if e["type"] == "tool_result"}
    assert [c["name"] for c in calls] == ["write_file", "list_files", "list_files"]
    assert all(results[c["id"]]["ok"] for c in calls)
    assert "hello.py" in results[calls[2]["id"]]["output"]
    assert events[-2]["type"] == "chat" and "hello.py" in events[-2]["content"]
    assert events[-1] == {"type": "status", "status": "idle", "detail": ""}
    # The third model call saw every tool result, answered in call order.
    msgs = fake_model.requests[2]["messages"]
    assert [m["role"] for m in msgs] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
    ]
    assert msgs[3]["tool_call_id"] == msgs[2]["tool_calls"][0]["id"]


async def test_tool_calls_in_one_step_run_concurrently(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    barrier = asyncio.Barrier(3)

    @read_only  # changes nothing: runs without approval
    async def rendezvous(ctx: ToolContext, name: str) -> str:
        """Wait until all three calls are running at once."""
        await asyncio.wait_for(barrier.wait(), 5)
        return f"{name} met the others"

    runtime.tools.add(rendezvous)
    fake_model.reply(tool_calls=[("rendezvous", {"name": n}) for n in "abc"])
    fake_model.reply(text="all met")
    events = await collect(runtime, "meet")
    results = [e for e in events if e["type"] == "tool_result"]
    assert len(results) == 3 and all(r["ok"] for r in results), results


async def test_step_limit_ends_with_clear_message(tmp_path, fake_model: FakeModel) -> None:
    cfg = ThinkConfig(base_url=fake_model.url, api_key="k", max_steps=3)
    rt = Runtime(cfg, tmp_path, extensions=[])
    await rt.start()
    fake_model.default.tool_calls = [("list_files", {})]
    fake_model.default.text = ""
    try:
        events = await collect(rt, "loop forever")
    finally:
        await rt.close()
    assert len(fake_model.requests) == 3
    err = [e for e in events if e["type"] == "error"][0]
    assert err["code"] == "step_limit" and "3 model steps" in err["message"]
    assert "max_steps" in err["message"]


async def test_malformed_and_mistyped_arguments_reach_the_model(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    fake_model.reply(tool_calls=[("read_file", '{"path": "a.py",,'), ("read_file", {"path": 7})])
    fake_model.reply(tool_calls=[("no_such_tool", {}), ("read_file", {"path": "a", "x": 1})])
    fake_model.reply(text="I could not read it.")
    events = await collect(runtime, "read a.py")
    results = [e for e in events if e["type"] == "tool_result"]
    assert [r["ok"] for r in results] == [False] * 4
    tool_msgs = [m for m in fake_model.requests[1]["messages"] if m["role"] == "tool"]
    assert "not valid JSON" in tool_msgs[0]["content"]
    assert "path" in tool_msgs[1]["content"] and "string" in tool_msgs[1]["content"]
    # The assistant turn with broken JSON is replayed with valid JSON so endpoints accept it.
    assistant = [m for m in fake_model.requests[1]["messages"] if m["role"] == "assistant"][0]
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {}
    tool_msgs = [m for m in fake_model.requests[2]["messages"] if m["role"] == "tool"]
    assert "unknown tool" in tool_msgs[2]["content"]
    assert "Extra inputs" in tool_msgs[3]["content"]
    assert events[-2]["type"] == "chat"


async def test_transient_errors_are_retried_with_visible_status(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    fake_model.reply(error=429)
    fake_model.reply(error=503)
    fake_model.reply(text="partial answer that will be cut", cut=True)
    fake_model.reply(text="complete answer")
    events = await collect(runtime, "hi")
    waits = [e for e in events if e["type"] == "status" and e["status"] == "waiting"]
    assert len(waits) == 3
    assert "429" in waits[0]["detail"] and "retry 1/3" in waits[0]["detail"]
    assert "503" in waits[1]["detail"]
    # The cut stream's partial text is reset before the retry streams again.
    resets = [e for e in events if e["type"] == "text_done" and e["text"] == ""]
    assert len(resets) == 1
    assert events[-2] == {
        "type": "chat",
        "message_id": events[-2]["message_id"],
        "content": "complete answer",
        "stop_reason": "stop",
    }
    stored = await runtime.store.get_messages(runtime.session_id)
    assert stored[-1]["content"] == "complete answer" and stored[-1]["attempt"] == 3


async def test_retries_exhausted_is_an_error_not_a_crash(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    for _ in range(4):
        fake_model.reply(error=500)
    events = await collect(runtime, "hi")
    assert len(fake_model.requests) == 4
    err = [e for e in events if e["type"] == "error"][0]
    assert err["retryable"] and "500" in err["message"]
    stored = await runtime.store.get_messages(runtime.session_id)
    assert stored[-1]["status"] == "error"


async def test_read_timeout_is_transient(tmp_path, fake_model: FakeModel) -> None:
    cfg = ThinkConfig(
        base_url=fake_model.url, api_key="k", retry_delays=[0.01], request_timeout=0.5
    )
    rt = Runtime(cfg, tmp_path, extensions=[])
    await rt.start()
    fake_model.reply(text="stuck", hang=True)
    fake_model.reply(text="unstuck")
    try:
        events = await collect(rt, "hi")
    finally:
        await rt.close()
    assert any("timed out" in e.get("detail", "") for e in events if e["type"] == "status")
    assert events[-2]["content"] == "unstuck"


async def test_401_ends_the_run_with_what_to_fix(tmp_path) -> None:
    fm = FakeModel(api_key="right").start()
    rt = Runtime(ThinkConfig(base_url=fm.url, api_key="wrong"), tmp_path, extensions=[])
    await rt.start()
    try:
        events = await collect(rt, "hi")
    finally:
        await rt.close()
        fm.stop()
    assert len(fm.requests) == 1  # permanent: no retry
    err = [e for e in events if e["type"] == "error"][0]
    assert err["code"] == "auth" and "OPENAI_API_KEY" in err["message"]
    assert not err["retryable"]


async def test_unknown_model_says_how_to_pick_one(tmp_path) -> None:
    fm = FakeModel(models={"real-model"}).start()
    cfg = ThinkConfig(base_url=fm.url, api_key="k", primary_model="nope")
    rt = Runtime(cfg, tmp_path, extensions=[])
    await rt.start()
    try:
        events = await collect(rt, "hi")
    finally:
        await rt.close()
        fm.stop()
    err = [e for e in events if e["type"] == "error"][0]
    assert err["code"] == "model_not_found"
    assert "'nope'" in err["message"] and "THINK_MODEL" in err["message"]


async def test_no_configuration_gives_the_how_to(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    rt = Runtime(ThinkConfig(), tmp_path, extensions=[])
    await rt.start()
    try:
        events = await collect(rt, "hi")
    finally:
        await rt.close()
    assert types(events) == ["error", "status"]
    assert events[0]["code"] == "not_configured"
    assert "OPENAI_API_KEY" in events[0]["message"] and "OPENAI_BASE_URL" in events[0]["message"]


async def test_history_survives_a_new_runtime(tmp_path, fake_model: FakeModel) -> None:
    cfg = ThinkConfig(base_url=fake_model.url, api_key="k")
    first = Runtime(cfg, tmp_path, extensions=[])
    await first.start()
    fake_model.reply(text="The answer is 42.")
    await collect(first, "what is the answer?")
    sid = first.session_id
    await first.close()

    second = Runtime(cfg, tmp_path, session_id=sid, extensions=[])
    await second.start()
    fake_model.reply(text="You asked for the answer.")
    await collect(second, "what did I ask?")
    listed = await second.store.list_sessions()
    await second.close()
    contents = [m["content"] for m in fake_model.requests[1]["messages"]]
    assert contents[1:] == ["what is the answer?", "The answer is 42.", "what did I ask?"]
    assert listed[0]["id"] == sid and listed[0]["message_count"] == 4


async def test_cancel_mid_stream_keeps_a_consistent_history(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    fake_model.reply(text="a long answer " * 50, delay=0.02)
    seen = asyncio.Event()

    async def consume() -> None:
        async for ev in runtime.run("talk"):
            if ev.type == "text_delta":
                seen.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(seen.wait(), 10)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    stored = await runtime.store.get_messages(runtime.session_id)
    assert stored[-1]["role"] == "assistant" and stored[-1]["status"] == "cancelled"

    fake_model.reply(text="fresh start")
    events = await collect(runtime, "again")
    assert events[-2]["content"] == "fresh start"


async def test_cancel_during_a_tool_answers_the_call_next_time(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    started = asyncio.Event()

    @read_only  # changes nothing: runs without approval
    async def forever(ctx: ToolContext) -> str:
        """Never returns."""
        started.set()
        await asyncio.Event().wait()
        return "unreachable"

    runtime.tools.add(forever)
    fake_model.reply(tool_calls=[("forever", {})])

    async def consume() -> None:
        async for _ in runtime.run("hang"):
            pass

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)

    fake_model.reply(text="ok")
    await collect(runtime, "next")
    msgs = fake_model.requests[-1]["messages"]
    tool = [m for m in msgs if m["role"] == "tool"]
    assert len(tool) == 1 and "interrupted" in tool[0]["content"]


async def test_action_log_rows_summarise_not_store(runtime: Runtime, fake_model: FakeModel) -> None:
    big = "x = 1\n" * 20_000
    fake_model.reply(tool_calls=[("write_file", {"path": "big.py", "content": big})])
    fake_model.reply(tool_calls=[("read_file", {"path": "../etc/passwd"})])
    fake_model.reply(text="done")
    await collect(runtime, "write")
    rows = await runtime.store.list_actions(runtime.session_id)
    assert [r["tool"] for r in rows] == ["write_file", "read_file"]
    w, r = rows
    assert w["success"] and w["output_summary"] == "wrote big.py: 20000 lines"
    assert "content=<120000 chars" in w["input_summary"] and len(w["input_summary"]) < 300
    assert w["message_id"] and w["duration_ms"] > 0 and w["ts"] > 0 and w["id"]
    assert not r["success"] and "outside the workspace" in r["error"]
    # Tool messages keep their outcome too, so a client rebuilds tool cards after a reload.
    tool_rows = [m for m in await runtime.store.get_messages(runtime.session_id) if m["name"]]
    assert [(m["ok"], m["duration_ms"] > 0) for m in tool_rows] == [(True, True), (False, True)]
    assert "outside the workspace" in tool_rows[1]["error"]
    assert len(await runtime.store.list_actions(runtime.session_id, success=False)) == 1
    assert len(await runtime.store.list_actions(runtime.session_id, tool="write_file")) == 1


async def test_large_tool_output_is_summarised_for_the_model(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    many = runtime.workspace.root / "many"
    many.mkdir()
    for i in range(3000):
        (many / f"a_file_with_a_long_enough_name_{i:05}.txt").touch()
    (runtime.workspace.root / "huge.txt").write_text("line of text\n" * 50_000)
    fake_model.reply(tool_calls=[("list_files", {"path": "many"})])
    fake_model.reply(tool_calls=[("read_file", {"path": "huge.txt", "limit": 50000})])
    fake_model.reply(text="read it")
    await collect(runtime, "read")
    tools = [m for m in fake_model.requests[2]["messages"] if m["role"] == "tool"]
    assert len(tools[0]["content"]) < 35_000 and "characters omitted" in tools[0]["content"]
    # read_file pages instead: nothing omitted silently, the next page is named
    page = tools[1]["content"]
    assert len(page) < 30_000 and "characters omitted" not in page
    assert page.endswith("call read_file with offset=" + str(page.count("\n") + 1) + "]")


async def test_layers_add_but_never_remove(tmp_path, fake_model: FakeModel) -> None:
    @read_only  # changes nothing: runs without approval
    async def shout(ctx: ToolContext, text: str) -> str:
        """Upper-case some text."""
        return text.upper()

    class Custom(Runtime):
        instructions = "Always answer in French."
        extra_tools = [shout]
        models = {"fast": "tiny"}

    rt = Custom(ThinkConfig(base_url=fake_model.url, api_key="k"), tmp_path, extensions=[])
    await rt.start()
    await rt.set_props(model="session-model", instructions="Be brief.")
    fake_model.reply(text="ok")
    await collect(rt, "hi")
    await rt.close()
    body = fake_model.requests[0]
    system = body["messages"][0]["content"]
    assert "You are Think" in system and "French" in system and "Be brief." in system
    assert body["model"] == "session-model"
    names = [t["function"]["name"] for t in body["tools"]]
    assert {"read_file", "write_file", "edit_file", "delete_file", "list_files", "shout"} <= set(
        names
    )
    assert rt.model_name({}, "fast") == "tiny"


async def test_a_retried_request_keeps_its_completed_steps_in_order(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    """The server stores the request, then retries the run after a failure."""
    store = runtime.store
    user = await store.add_message(runtime.session_id, "user", "list then answer")
    fake_model.reply(tool_calls=[("list_files", {})])
    for _ in range(4):
        fake_model.reply(error=500)
    first = await collect(runtime, "list then answer", user_message_id=user["id"])
    assert first[-2]["type"] == "error"
    fake_model.reply(text="the folder is empty")
    second = await collect(runtime, "list then answer", user_message_id=user["id"])
    assert second[-2]["content"] == "the folder is empty"
    roles = [m["role"] for m in fake_model.requests[-1]["messages"]]
    assert roles == ["system", "user", "assistant", "tool"]
    assert fake_model.requests[-1]["messages"][1]["content"] == "list then answer"
    users = [m for m in await store.get_messages(runtime.session_id) if m["role"] == "user"]
    assert len(users) == 1


class _AtOnce:
    """A model in the process that answers (or fails) before the loop waits on anything:
    the insert of the step's row, started as the request leaves, has not run yet."""

    def __init__(self, outcome: object) -> None:
        self.outcome = outcome

    async def stream(self, messages, tools, model, *, purpose="step"):  # noqa: ANN001, ANN201
        from think_kernel.agent.model import Chunk

        if isinstance(self.outcome, BaseException):
            raise self.outcome
        yield Chunk("text", text=str(self.outcome))
        yield Chunk("finish", text="stop")


async def test_a_step_row_is_stored_before_anything_names_it(tmp_path) -> None:
    """A step's row is stored while its request is on the way, yet no event names
    it, and no update changes it, before it exists; whatever the model did first."""
    from think_kernel.agent.model import ModelError

    cfg = ThinkConfig(base_url="http://unused", api_key="k", retry_delays=[])
    rt = Runtime(cfg, tmp_path, model=_AtOnce("hi"), extensions=[])  # type: ignore[arg-type]
    await rt.start()
    try:
        seen = []
        async for ev in rt.run("answer at once"):
            if ev.type == "text_delta":
                seen.append(await rt.store.get_message(ev.message_id))
        assert seen and seen[0] is not None and seen[0]["status"] == "streaming", seen
        last = (await rt.store.get_messages(rt.session_id))[-1]
        assert (last["role"], last["status"], last["content"]) == ("assistant", "complete", "hi")

        rt.clients.client = _AtOnce(
            ModelError("refused at once", transient=False, code="bad_request")
        )
        events = await collect(rt, "fail at once")
        assert events[-2]["type"] == "error" and "refused at once" in events[-2]["message"]
        last = (await rt.store.get_messages(rt.session_id, statuses=("error",)))[-1]
        assert (last["role"], last["error"]) == ("assistant", "refused at once")

        rt.clients.client = _AtOnce(RuntimeError("a bug below the loop"))
        try:
            await collect(rt, "break at once")
        except RuntimeError:
            pass
        else:
            raise AssertionError("the bug was swallowed")
        rows = await rt.store.get_messages(rt.session_id, statuses=("cancelled", "streaming"))
        assert [(r["role"], r["status"]) for r in rows] == [("assistant", "cancelled")], rows
    finally:
        await rt.close()
