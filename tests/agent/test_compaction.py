"""Long sessions: compaction against a scripted model with a small context window."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from think_kernel.agent.messages import to_model_messages, transform_context
from think_kernel.config import ThinkConfig
from think_kernel.runtime import Runtime
from think_kernel.tools.base import ToolContext, read_only

from ..fake_model import FakeModel, Reply, count_tokens
from .conftest import collect

WINDOW = 4_000


@read_only  # changes nothing: runs without approval
async def lookup(ctx: ToolContext, key: str) -> str:
    """Look a key up in the project's notes."""
    return f"notes for {key}:\n" + "\n".join(
        f"{key} detail line {i} " + "x" * 40 for i in range(30)
    )


class Notes(Runtime):
    extra_tools = [lookup]


def _summaries(fake_model: FakeModel) -> None:
    counter = itertools.count(1)

    def answer(body: dict[str, Any]) -> Reply:
        if body.get("_purpose") == "compaction":
            return Reply(text=f"SUMMARY-{next(counter)}: the user asked for numbered steps.")
        return Reply(text="short summary of a tool output")

    fake_model.internal = answer


CUT = "\n\n[... cut to fit the context window ...]\n\n"


def _uncut(content: Any, pairs: list[tuple[str, Any]]) -> Any:
    """The stored text a cut message was made from (the content itself when not cut)."""
    if not isinstance(content, str) or CUT not in content:
        return content
    head, tail = content.split(CUT, 1)
    found = [c for _, c in pairs if isinstance(c, str) and c.startswith(head) and c.endswith(tail)]
    assert len(found) == 1, content
    return found[0]


async def test_300_turns_in_a_4000_token_window_never_error(
    tmp_path: Path, fake_model: FakeModel
) -> None:
    fake_model.context_window = WINDOW
    _summaries(fake_model)
    cfg = ThinkConfig(
        base_url=fake_model.url,
        api_key="k",
        context_window=WINDOW,
        summarizer_model="sum-model",
        retry_delays=[0.01],
    )
    (tmp_path / "ws").mkdir()
    rt = Notes(cfg, tmp_path / "ws", extensions=[])
    await rt.start()
    try:
        for turn in range(300):
            if turn % 3 == 1:
                fake_model.reply(tool_calls=[("lookup", {"key": f"k{turn}"})])
            fake_model.reply(text=f"answer {turn}: done with step {turn}.")
            events = await collect(rt, f"turn {turn}: please do step {turn} of the plan")
            kinds = [e["type"] for e in events]
            assert "error" not in kinds, [e for e in events if e["type"] == "error"]
            assert events[-2]["type"] == "chat" and f"answer {turn}" in events[-2]["content"]
        stored = await rt.store.get_messages(rt.session_id)
        usage = await rt.store.usage_totals(rt.session_id)
    finally:
        await rt.close()

    requests = fake_model.requests
    assert len(requests) == 400  # 300 answers + 100 tool steps, no retry was needed
    assert all(count_tokens(r) <= WINDOW for r in requests)
    compactions = [r for r in fake_model.internal_requests if r["_purpose"] == "compaction"]
    summaries = [m for m in stored if m["role"] == "summary"]
    assert len(compactions) >= 20 and len(summaries) == len(compactions)
    assert {r["model"] for r in compactions} == {"sum-model"}

    # Non-destructive: every request, answer and tool result is still stored.
    assert sum(m["role"] == "user" for m in stored) == 300
    assert sum(m["role"] == "tool" for m in stored) == 100

    # Tool results inside a compacted span reach the summarizer as their summaries only.
    summarized = "\n".join(r["messages"][1]["content"] for r in compactions)
    assert "Result of lookup (ok)" in summarized
    assert "detail line 7" not in summarized

    # After the first compaction every request is: the summary (in the system message), the
    # first request verbatim, then a contiguous verbatim tail ending with the newest message.
    visible = transform_context([m for m in stored if m["role"] != "summary"])
    pairs = [(m["role"], m.get("content")) for m in to_model_messages("", visible)[1:]]
    first_compacted = next(
        i for i, r in enumerate(requests) if "SUMMARY-" in r["messages"][0]["content"]
    )
    assert first_compacted < 20
    for body in requests[first_compacted:]:
        msgs = body["messages"]
        assert "SUMMARY-" in msgs[0]["content"]
        assert msgs[1] == {"role": "user", "content": "turn 0: please do step 0 of the plan"}
        # A message too long for what the tool specs leave is sent cut (head and tail of
        # its text, the last resort of the context's fitting): compared as its original.
        tail = [(m["role"], _uncut(m.get("content"), pairs)) for m in msgs[2:]]
        assert tail, "the tail is never empty"
        end = pairs.index(tail[-1]) + 1
        assert pairs[end - len(tail) : end] == tail
        # The newest message is the request of this turn or a result of its own tool call.
        assert tail[-1][0] in ("user", "tool")
    # The summary in each request is the newest one stored before it.
    numbers = [
        int(r["messages"][0]["content"].split("SUMMARY-")[1].split(":")[0])
        for r in requests[first_compacted:]
    ]
    assert numbers == sorted(numbers) and numbers[-1] == len(summaries)

    # Usage: every call recorded with its role (the endpoint reported it, nothing estimated).
    by_role = usage["by_role"]
    assert by_role["primary"]["calls"] == 400
    assert by_role["summarizer"]["calls"] == len(compactions)
    assert usage["total"]["estimated"] == 0
    assert by_role["primary"]["tokens_in"] == sum(count_tokens(r) for r in requests)
