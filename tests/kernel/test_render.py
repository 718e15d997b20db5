"""Unit tests of the event -> Markdown rendering (pure, no kernel)."""

from __future__ import annotations

from think_kernel.agent.events import (
    Chat,
    ErrorEvent,
    Reasoning,
    StatusEvent,
    TextDelta,
    TextDone,
    ToolCall,
    ToolProgress,
    ToolResult,
)
from think_kernel.config import HOW_TO_CONFIGURE
from think_kernel.kernel.render import Transcript, code_span, short_args


def feed(view: Transcript, *events, now: float = 0.0) -> Transcript:
    for e in events:
        view.feed(e, now)
    return view


def test_text_streams_and_status_line_disappears_at_the_end() -> None:
    view = feed(Transcript(), StatusEvent("thinking", "step 1"), TextDelta("m1", "Hel"))
    view.feed(TextDelta("m1", "lo."))
    live = view.render()
    assert live.startswith("Hello.")
    assert "thinking: step 1" in live
    feed(view, TextDone("m1", "Hello."), Chat("m1", "Hello."), StatusEvent("idle"))
    assert view.render() == view.render(final=True) == "Hello.\n"


def test_reasoning_is_collapsed_and_tools_are_compact_lines() -> None:
    view = feed(
        Transcript(),
        Reasoning("m1", "I should write "),
        Reasoning("m1", "the file."),
        ToolCall("c1", "write_file", {"path": "hello.py", "content": "print('hi')\n"}),
    )
    live = view.render()
    assert "<details><summary>Reasoning</summary>\n\nI should write the file.\n\n</details>" in live
    assert "> ▸ **write_file** `hello.py, content=<2 lines>` · running…" in live
    view.feed(ToolResult("c1", "write_file", "ok", 3.2, True, summary="wrote hello.py: 1 line"))
    view.feed(ToolCall("c2", "read_file", {"path": "../x"}))
    view.feed(ToolResult("c2", "read_file", "Error: ../x is outside the workspace", 0.4, False))
    final = view.render(final=True)
    write = "> ▸ **write_file** `hello.py, content=<2 lines>` · ✓ · 3 ms · wrote hello.py: 1 line"
    assert write in final
    refused = "> ▸ **read_file** `../x` · ✗ error · 0 ms · Error: ../x is outside the workspace"
    assert refused in final
    # Blocks are separate paragraphs so Markdown renderers keep them apart.
    assert "</details>\n\n> ▸" in final


def test_tool_progress_shows_live_and_is_dropped_from_the_final_text() -> None:
    view = feed(
        Transcript(),
        ToolCall("c1", "bash", {"command": "make"}),
        ToolProgress("c1", "stdout", "step 1\n"),
        ToolProgress("c1", "stdout", "step 2\n"),
    )
    assert "> ```\n> step 1\n> step 2\n> ```" in view.render()
    view.feed(ToolResult("c1", "bash", "step 1\nstep 2", 1500.0, True, summary="exit=0"))
    final = view.render(final=True)
    assert "step 2" not in final and "· ✓ · 1.5 s · exit=0" in final


def test_errors_are_messages_and_not_configured_is_verbatim() -> None:
    view = feed(Transcript(), ErrorEvent(HOW_TO_CONFIGURE, code="not_configured"))
    view.feed(StatusEvent("idle"))
    assert view.render(final=True) == HOW_TO_CONFIGURE + "\n"
    other = feed(Transcript(), ErrorEvent("The endpoint rejected the API key (401).", "auth"))
    assert other.render(final=True) == "**Error:** The endpoint rejected the API key (401).\n"
    assert "Traceback" not in other.render()


def test_retry_countdown_counts_down() -> None:
    view = Transcript()
    view.feed(StatusEvent("waiting", "rate limited (429); retry 1/3 in 4 s"), now=100.0)
    assert "retry 1/3 in 4 s" in view.render(now=100.0)
    assert "retry 1/3 in 1 s" in view.render(now=103.0)
    assert view.render(final=True) == ""


def test_retry_resets_cut_text() -> None:
    view = feed(Transcript(), TextDelta("m1", "partial ans"), TextDone("m1", ""))
    view.feed(TextDelta("m1", "full answer"))
    assert view.render(final=True) == "full answer\n"


def test_short_args_and_code_span() -> None:
    assert short_args({"path": "a.py"}) == "a.py"
    assert short_args({"old_string": "x", "path": "b.py"}) == 'b.py, old_string="x"'
    assert len(short_args({"path": "p" * 500})) <= 60
    assert short_args("{not json") == "{not json"
    assert code_span("a `b` c") == "``a `b` c``"
    assert code_span("`x") == "`` `x ``"
