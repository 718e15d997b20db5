"""Coalescing of text deltas on the kernel link: every character, in order, fewer frames."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from think_kernel.kernel.coalesce import DeltaCoalescer


def delta(text: str, message_id: str = "m1", run_id: str = "r1") -> dict[str, Any]:
    event = {"type": "text_delta", "message_id": message_id, "delta": text}
    return {"kind": "event", "session_id": "s", "run_id": run_id, "event": event}


def other(kind: str) -> dict[str, Any]:
    return {"kind": "event", "session_id": "s", "run_id": "r1", "event": {"type": kind}}


async def test_a_burst_keeps_every_character_in_fewer_frames() -> None:
    out: list[dict[str, Any]] = []
    c = DeltaCoalescer(out.append, interval=0.02, max_parts=16)
    words = [f"w{i} " for i in range(200)]
    for w in words:
        c.add(delta(w))
    assert out[0]["event"]["delta"] == "w0 "  # the first token at once, alone
    c.add(other("text_done"))  # the end flushes what is held, before itself
    frames = [f for f in out if f["event"]["type"] == "text_delta"]
    assert "".join(f["event"]["delta"] for f in frames) == "".join(words)
    assert len(frames) <= 20
    assert out[-1]["event"]["type"] == "text_done"
    assert all(f["event"]["message_id"] == "m1" and f["run_id"] == "r1" for f in frames)


async def test_held_text_goes_out_after_the_interval_without_more_input() -> None:
    out: list[dict[str, Any]] = []
    c = DeltaCoalescer(out.append, interval=0.01)
    c.add(delta("a"))
    c.add(delta("b"))
    assert [f["event"]["delta"] for f in out] == ["a"]
    for _ in range(200):
        if len(out) == 2:
            break
        await asyncio.sleep(0.005)
    assert [f["event"]["delta"] for f in out] == ["a", "b"]


async def test_other_events_and_other_messages_are_never_overtaken() -> None:
    rng = random.Random(7)
    out: list[dict[str, Any]] = []
    c = DeltaCoalescer(out.append, interval=0.05, max_parts=5)
    sent: list[tuple[str, str]] = []  # (message id or event type, text)
    for i in range(500):
        r = rng.random()
        if r < 0.1:
            kind = rng.choice(["tool_call", "status", "run_end"])
            item = other(kind) if kind != "run_end" else {"kind": "run_end", "run_id": "r1"}
            c.add(item)
            sent.append((kind, ""))
        else:
            mid = rng.choice(["m1", "m2"])
            text = f"<{i}>"
            c.add(delta(text, mid))
            sent.append((mid, text))
        if rng.random() < 0.05:
            await asyncio.sleep(0.06)  # a pause lets the timer flush
    c.flush()
    got: list[tuple[str, str]] = []
    for f in out:
        ev = f.get("event") or {}
        if ev.get("type") == "text_delta":
            got.append((ev["message_id"], ev["delta"]))
        else:
            got.append((ev.get("type") or f["kind"], ""))
    # Joining consecutive deltas of one message in what was sent gives what arrived.
    merged: list[tuple[str, str]] = []
    for key, text in sent:
        if merged and text and merged[-1][0] == key and merged[-1][1]:
            merged[-1] = (key, merged[-1][1] + text)
        else:
            merged.append((key, text))
    joined: list[tuple[str, str]] = []
    for key, text in got:
        if joined and text and joined[-1][0] == key and joined[-1][1]:
            joined[-1] = (key, joined[-1][1] + text)
        else:
            joined.append((key, text))
    assert joined == merged
    assert len(got) < len(sent)


def test_without_a_loop_nothing_is_held() -> None:
    out: list[dict[str, Any]] = []
    c = DeltaCoalescer(out.append, interval=10)
    c.add(delta("a"))
    c.add(delta("b"))
    assert "".join(f["event"]["delta"] for f in out) == "ab"
