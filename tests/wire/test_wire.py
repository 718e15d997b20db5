"""The wire, declared once: generated TypeScript is current, frames decode by their hints,
and both ends of the kernel link have a handler for every frame they may receive."""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyter_ext.link import KernelLinks
from jupyter_ext.openapi import OPENAPI
from think_kernel.agent.events import EVENTS, TaskEvent, TextDelta, ToolResult, event_from_dict
from think_kernel.kernel.link import KernelLink
from think_kernel.wire.base import FrameError, decode
from think_kernel.wire.gen_ts import generate
from think_kernel.wire.link import TO_KERNEL, TO_SERVER, ChatFrame, RpcFrame

WIRE_TS = Path(__file__).resolve().parents[2] / "labextension" / "src" / "wire.ts"


def test_wire_ts_is_generated_from_the_declarations():
    """``labextension/src/wire.ts`` is what the generator prints today; when this fails, run
    ``python -m think_kernel.wire.gen_ts > labextension/src/wire.ts`` and commit it."""
    assert WIRE_TS.read_text(encoding="utf-8") == generate()


def test_every_event_is_in_the_typescript_and_the_openapi_document():
    ts = generate()
    schemas = OPENAPI["components"]["schemas"]
    for cls in EVENTS:
        assert cls.__name__ in schemas
        for name in cls.wire_types():
            assert f"'{name}'" in ts
    mapping = schemas["AgentEvent"]["discriminator"]["mapping"]
    assert set(mapping) == {n for cls in EVENTS for n in cls.wire_types()}


def test_events_round_trip_and_bad_ones_are_refused():
    for event in (
        TextDelta(message_id="m", delta="hi"),
        TaskEvent(kind="retrying", task_id="t", attempt=2),
        ToolResult(call_id="c", name="bash", output="ok", duration_ms=1.5, ok=True),
    ):
        assert event_from_dict(event.to_dict()) == event
    assert TaskEvent(kind="failed", task_id="t").to_dict()["type"] == "task_failed"
    with pytest.raises(FrameError, match="unknown event type"):
        event_from_dict({"type": "nope"})
    with pytest.raises(FrameError, match="'delta' of a 'text_delta' frame must be str"):
        event_from_dict({"type": "text_delta", "message_id": "m", "delta": 3})


@pytest.mark.parametrize(
    ("data", "code", "words"),
    [
        ("not an object", "bad_frame", "a frame is a JSON object"),
        ({"no": "type"}, "unknown_type", "unknown frame type None"),
        ({"type": "nope"}, "unknown_type", "unknown frame type 'nope'"),
        ({"type": "chat"}, "bad_frame", "a 'chat' frame needs 'run_id'"),
        ({"type": "chat", "run_id": "r", "attempt": True}, "bad_frame", "'attempt'"),
        ({"type": "chat", "run_id": "r", "attempt": 1.5}, "bad_frame", "'attempt'"),
        ({"type": "ack", "n": "7"}, "bad_frame", "'n' of a 'ack' frame must be int"),
    ],
)
def test_decode_refuses_what_the_hints_do_not_allow(data, code, words):
    with pytest.raises(FrameError, match=words) as e:
        decode(data, TO_KERNEL)
    assert e.value.code == code


def test_decode_builds_typed_frames_and_ignores_unknown_keys():
    frame = decode({"type": "chat", "run_id": "r", "attempt": 2, "later": 1}, TO_KERNEL)
    assert frame == ChatFrame(run_id="r", attempt=2)
    rpc = decode({"type": "rpc", "id": "x", "method": "doc.read"}, TO_SERVER)
    assert rpc == RpcFrame(id="x", method="doc.read", params={})


def test_both_ends_handle_every_frame_they_may_receive():
    server = KernelLinks(None, None, "", lambda kid: None)  # type: ignore[arg-type]
    assert set(server._handlers) == set(TO_SERVER.values())
    kernel = KernelLink(None, "http://127.0.0.1:1/", "k", b"key")
    assert set(kernel._handlers) == set(TO_KERNEL.values())
