"""Whole tool results and attachments: what the model sees, what is stored."""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path
from typing import Any

from think_kernel.agent.attachments import describe_attachment
from think_kernel.config import ThinkConfig
from think_kernel.kernel.commands import run_command
from think_kernel.runtime import Runtime
from think_kernel.tools.base import ToolContext, ToolOutput, read_only

from ..fake_model import FakeModel, Reply
from .conftest import collect


def png(width: int = 2, height: int = 2) -> bytes:
    """A real (tiny) PNG image."""
    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


@read_only  # changes nothing: runs without approval
async def flood(ctx: ToolContext, lines: int) -> ToolOutput:
    """Print many numbered lines."""
    whole = "".join(f"row {i}: value {i * 3}\n" for i in range(lines))
    return ToolOutput(text=whole, summary=f"{lines} lines")


def summaries(fake_model: FakeModel) -> list[dict[str, Any]]:
    """The summaries of tool outputs the fast model was asked for (not titles)."""
    return [r for r in fake_model.internal_requests if r["_purpose"] == "tool_summary"]


class Flood(Runtime):
    extra_tools = [flood]


async def make(
    tmp_path: Path, fake_model: FakeModel, cls: type[Runtime] = Runtime, **cfg: Any
) -> Runtime:
    (tmp_path / "ws").mkdir(exist_ok=True)
    config = ThinkConfig(base_url=fake_model.url, api_key="k", retry_delays=[0.01], **cfg)
    rt = cls(config, tmp_path / "ws", extensions=[])
    await rt.start()
    return rt


async def test_large_output_summary_for_the_model_whole_in_the_store(
    tmp_path: Path, fake_model: FakeModel
) -> None:
    rt = await make(tmp_path, fake_model, Flood, fast_model="fast-m")
    fake_model.internal = lambda body: Reply(text="FAST SUMMARY: 5000 numbered rows, no errors.")
    fake_model.reply(tool_calls=[("flood", {"lines": 5000})])
    fake_model.reply(text="seen")
    try:
        events = await collect(rt, "flood me")
        result = next(e for e in events if e["type"] == "tool_result")
        row = await rt.store.get_message(result["result_id"])
        whole = await rt.store.full_output(row)
        usage = [e for e in events if e["type"] == "usage"]
    finally:
        await rt.close()
    expected = "".join(f"row {i}: value {i * 3}\n" for i in range(5000))
    assert whole == expected and row["output_size"] == len(expected) == result["full_size"]
    # The fast model summarised it, reading excerpts only.
    (summary_call,) = summaries(fake_model)
    assert summary_call["_purpose"] == "tool_summary" and summary_call["model"] == "fast-m"
    assert len(summary_call["messages"][1]["content"]) < 70_000
    # The model got the summary and excerpts, within the 30,000-character bound.
    sent = [m for m in fake_model.requests[1]["messages"] if m["role"] == "tool"][0]["content"]
    assert "FAST SUMMARY" in sent and "row 0: value 0" in sent and "row 4999" in sent
    assert len(sent) <= 30_000 and "whole output is" in sent
    assert result["output"] == sent
    assert [(u["role"], u["purpose"]) for u in usage] == [
        ("primary", "step"),
        ("fast", "tool_summary"),
        ("primary", "step"),
    ]


async def test_small_outputs_are_not_duplicated(tmp_path: Path, fake_model: FakeModel) -> None:
    rt = await make(tmp_path, fake_model, Flood)
    fake_model.reply(tool_calls=[("flood", {"lines": 10})])
    fake_model.reply(text="ok")
    try:
        events = await collect(rt, "a few")
        result = next(e for e in events if e["type"] == "tool_result")
        row = await rt.store.get_message(result["result_id"])
    finally:
        await rt.close()
    assert row["output_blob"] is None and result["full_size"] == 0
    assert summaries(fake_model) == []


async def test_summaries_can_be_turned_off(tmp_path: Path, fake_model: FakeModel) -> None:
    rt = await make(tmp_path, fake_model, Flood, summarize_outputs=False)
    fake_model.reply(tool_calls=[("flood", {"lines": 5000})])
    fake_model.reply(text="ok")
    try:
        await collect(rt, "flood")
    finally:
        await rt.close()
    assert summaries(fake_model) == []
    sent = [m for m in fake_model.requests[1]["messages"] if m["role"] == "tool"][0]["content"]
    assert "characters omitted" in sent and "Summary:" not in sent


async def test_image_attachment_goes_to_the_vision_role_once(
    tmp_path: Path, fake_model: FakeModel
) -> None:
    rt = await make(tmp_path, fake_model, primary_model="text-only", vision_model="eyes")
    image = png()
    (rt.workspace.root / "plot.png").write_bytes(image)
    (rt.workspace.root / "notes.txt").write_text("the axis is in metres\n")
    fake_model.reply(text="A red square.")
    fake_model.reply(text="Metres, as the note says.")
    try:
        reply = await run_command(rt, "think_attach", "plot.png")
        assert "plot.png" in reply.markdown and "image" in reply.markdown
        await run_command(rt, "think_attach", "notes.txt")
        listing = await run_command(rt, "think_attach", "")
        assert "plot.png" in listing.markdown and "notes.txt" in listing.markdown
        first = await collect(rt, "what is in the picture?")
        second = await collect(rt, "which unit?")
        users = [m for m in await rt.store.get_messages(rt.session_id) if m["role"] == "user"]
    finally:
        await rt.close()
    assert first[-2]["content"] == "A red square." and second[-2]["content"].startswith("Metres")
    one, two = fake_model.requests
    assert one["model"] == "eyes" and two["model"] == "text-only"
    parts = one["messages"][-1]["content"]
    assert parts[0]["type"] == "text" and "what is in the picture?" in parts[0]["text"]
    assert '<attachment name="notes.txt">' in parts[0]["text"] and "metres" in parts[0]["text"]
    url = parts[1]["image_url"]["url"]
    assert url == "data:image/png;base64," + base64.b64encode(image).decode()
    # Later runs: a placeholder instead of the image, the note's text still there.
    earlier = two["messages"][1]["content"]
    assert isinstance(earlier, str) and "plot.png was attached" in earlier and "metres" in earlier
    assert [a["kind"] for a in users[0]["attachments"]] == ["image", "file"]
    assert users[1]["attachments"] is None
    usage = [e for e in first if e["type"] == "usage"]
    assert usage[0]["role"] == "vision" and usage[0]["model"] == "eyes"


async def test_attach_refuses_what_it_cannot_send(tmp_path: Path, fake_model: FakeModel) -> None:
    rt = await make(tmp_path, fake_model)
    (rt.workspace.root / "data.bin").write_bytes(b"\x00\x01\xfe\xff" * 10)
    try:
        for arg, words in (
            ("data.bin", "neither an image"),
            ("../outside.png", "outside the workspace"),
            ("missing.png", "no file"),
        ):
            try:
                await run_command(rt, "think_attach", arg)
            except Exception as e:  # CommandError
                assert words in str(e), (arg, e)
            else:
                raise AssertionError(f"{arg} was attached")
        cleared = await run_command(rt, "think_attach", "-")
        assert "cleared" in cleared.markdown.lower()
    finally:
        await rt.close()
    assert describe_attachment("x.gif", b"GIF89a" + b"\x00" * 10)["mime"] == "image/gif"
