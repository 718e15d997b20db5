"""Usage and cost of every model call, model roles, and the context-length retry."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from think_kernel.config import ThinkConfig
from think_kernel.runtime import Runtime

from ..fake_model import FakeModel, Reply, count_tokens
from .conftest import collect


async def make(tmp_path: Path, fake_model: FakeModel, **cfg: Any) -> Runtime:
    (tmp_path / "ws").mkdir(exist_ok=True)
    config = ThinkConfig(base_url=fake_model.url, api_key="k", retry_delays=[0.01], **cfg)
    rt = Runtime(config, tmp_path / "ws", extensions=[])
    await rt.start()
    return rt


async def test_each_call_records_tokens_role_model_and_cost(
    tmp_path: Path, fake_model: FakeModel
) -> None:
    # No title call: the totals below count the loop's own calls only.
    rt = await make(tmp_path, fake_model, primary_model="gpt-4o-mini", auto_title=False)
    fake_model.reply(tool_calls=[("list_files", {})], cached_tokens=64, reasoning_tokens=7)
    fake_model.reply(text="The folder is empty.")
    try:
        events = await collect(rt, "what is here?")
        usages = [e for e in events if e["type"] == "usage"]
        rows = await rt.store.get_messages(rt.session_id)
        totals = await rt.store.usage_totals(rt.session_id)
    finally:
        await rt.close()
    # The request asked for the usage chunk, and the numbers are the endpoint's own.
    assert all(r["stream_options"] == {"include_usage": True} for r in fake_model.requests)
    assert [u["tokens_in"] for u in usages] == [count_tokens(r) for r in fake_model.requests]
    assert usages[0]["tokens_cached"] == 64 and usages[0]["tokens_reasoning"] == 7
    assert all(u["role"] == "primary" and u["model"] == "gpt-4o-mini" for u in usages)
    assert all(u["purpose"] == "step" and not u["estimated"] for u in usages)
    first = usages[0]
    expected = ((first["tokens_in"] - 64) * 0.15 + 64 * 0.075 + first["tokens_out"] * 0.6) / 1e6
    assert first["cost"] == pytest.approx(expected)
    # Stored with the message that made the call.
    replies = [m for m in rows if m["role"] == "assistant"]
    assert [(m["model"], m["model_role"]) for m in replies] == [("gpt-4o-mini", "primary")] * 2
    assert [m["tokens_in"] for m in replies] == [u["tokens_in"] for u in usages]
    assert replies[0]["tokens_cached"] == 64 and replies[0]["cost"] == pytest.approx(expected)
    assert totals["total"]["calls"] == 2 and totals["total"]["cost_complete"]
    assert totals["total"]["tokens_in"] == sum(u["tokens_in"] for u in usages)
    assert totals["by_role"]["primary"]["calls"] == 2
    assert totals["role_models"] == {"primary": ["gpt-4o-mini"]}


async def test_endpoint_without_usage_gets_estimates(tmp_path: Path, fake_model: FakeModel) -> None:
    fake_model.reject_stream_options = True  # an older server: 400 on stream_options
    rt = await make(tmp_path, fake_model, primary_model="llama3.1", auto_title=False)
    fake_model.reply(text="hello there")
    fake_model.reply(text="again")
    try:
        first = await collect(rt, "hi")
        second = await collect(rt, "hi again")
        totals = await rt.store.usage_totals(rt.session_id)
    finally:
        await rt.close()
    assert first[-2]["content"] == "hello there" and second[-2]["content"] == "again"
    # Asked once with the option, then without it from then on.
    assert ["stream_options" in r for r in fake_model.requests] == [True, False, False]
    usage = [e for e in first + second if e["type"] == "usage"]
    assert all(u["estimated"] and u["tokens_in"] > 20 and u["cost"] is None for u in usage)
    assert totals["total"]["estimated"] == 2 and totals["total"]["cost"] is None


async def test_roles_resolve_props_over_class_over_config(
    tmp_path: Path, fake_model: FakeModel
) -> None:
    class Custom(Runtime):
        models = {"summarizer": "class-summarizer"}

    config = ThinkConfig(
        base_url=fake_model.url, api_key="k", primary_model="cfg-primary", fast_model="cfg-fast"
    )
    rt = Custom(config, tmp_path, extensions=[])
    await rt.start()
    try:
        assert rt.role_models({}) == {
            "primary": "cfg-primary",
            "fast": "cfg-fast",
            "summarizer": "class-summarizer",
            "vision": "cfg-primary",  # follows primary
        }
        props = await rt.set_props(model="session-primary", models={"summarizer": "s-sum"})
        assert rt.role_models(props) == {
            "primary": "session-primary",
            "fast": "cfg-fast",
            "summarizer": "s-sum",
            "vision": "session-primary",
        }
    finally:
        await rt.close()
    bare = Runtime(ThinkConfig(base_url=fake_model.url, primary_model="p"), tmp_path, extensions=[])
    assert bare.role_models({}) == dict.fromkeys(("primary", "fast", "summarizer", "vision"), "p")


async def test_context_length_error_compacts_once_and_retries(
    tmp_path: Path, fake_model: FakeModel
) -> None:
    # Our table says 128k, the endpoint really serves 3,000 tokens.
    rt = await make(tmp_path, fake_model, primary_model="gpt-4o-mini")
    fake_model.internal = lambda body: Reply(text="SUMMARY: earlier numbered requests.")
    try:
        for i in range(12):
            await rt.store.add_message(rt.session_id, "user", f"request {i} " + "word " * 60)
            await rt.store.add_message(rt.session_id, "assistant", f"answer {i} " + "done " * 60)
        fake_model.context_window = 3_000
        fake_model.reply(text="fits now")
        events = await collect(rt, "one more")
        rows = await rt.store.get_messages(rt.session_id)
        learned = dict(rt.roles.learned_windows)
        fake_model.reply(text="second run fits too")
        again = await collect(rt, "and another")
    finally:
        await rt.close()
    kinds = [e["type"] for e in events]
    assert "error" not in kinds and events[-2]["content"] == "fits now"
    assert kinds.index("compaction") < kinds.index("chat")
    # One refused request, one compaction, one retry that fitted.
    sizes = [count_tokens(r) for r in fake_model.requests]
    assert sizes[0] > 3_000 and sizes[1] <= 3_000
    assert learned == {"gpt-4o-mini": 3_000}
    assert [m["role"] for m in rows].count("summary") == 1
    assert sum(m["role"] == "user" for m in rows) == 13  # nothing deleted
    # The next run knows the real window and never sends too much again.
    assert "error" not in [e["type"] for e in again]
    assert all(s <= 3_000 for s in sizes[1:]) and len(sizes) == 3


async def test_a_second_context_length_error_is_reported(
    tmp_path: Path, fake_model: FakeModel
) -> None:
    rt = await make(tmp_path, fake_model, primary_model="gpt-4o-mini")
    fake_model.context_window = 500  # smaller than the system prompt and tools alone
    try:
        events = await collect(rt, "hello")
    finally:
        await rt.close()
    errors = [e for e in events if e["type"] == "error"]
    assert len(errors) == 1 and errors[0]["code"] == "context_length"
    assert "context window" in errors[0]["message"]
    assert len(fake_model.requests) == 2  # the request and exactly one retry


async def test_think_context_window_env_overrides_every_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("THINK_CONTEXT_WINDOW", "4000")
    rt = Runtime(ThinkConfig(api_key="k"), Path.cwd(), extensions=[])
    assert rt.context_window("gpt-4.1") == 4000
    monkeypatch.setenv("THINK_CONTEXT_WINDOW", "not a number")
    assert (
        Runtime(ThinkConfig(api_key="k"), Path.cwd(), extensions=[]).context_window("gpt-4.1")
        == 1_047_576
    )


async def test_untitled_sessions_are_named_by_the_fast_model(
    tmp_path: Path, fake_model: FakeModel
) -> None:
    rt = await make(tmp_path, fake_model, fast_model="quick")
    fake_model.internal = lambda body: Reply(text='"Price distribution plot."\n')
    fake_model.reply(text="ok")
    fake_model.reply(text="ok again")
    try:
        await collect(rt, "plot the distribution of price in sales.csv")
        await asyncio.wait_for(asyncio.gather(*rt.titler.tasks), 10)
        session = await rt.store.get_session(rt.session_id)
        await collect(rt, "and now the median")  # titled already: no second call
        await asyncio.gather(*rt.titler.tasks)
        totals = await rt.store.usage_totals(rt.session_id)
    finally:
        await rt.close()
    assert session["title"] == "Price distribution plot"
    (call,) = fake_model.internal_requests
    assert call["_purpose"] == "title" and call["model"] == "quick"
    assert "sales.csv" in call["messages"][1]["content"]
    assert totals["by_purpose"]["title"]["calls"] == 1
    assert totals["role_models"]["fast"] == ["quick"]
