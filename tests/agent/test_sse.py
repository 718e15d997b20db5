"""The server-sent-event decoder (think_kernel/agent/sse.py): frames split anywhere across
reads, comments, ``data: [DONE]``, multi-line data, and the three line endings."""

from __future__ import annotations

import json

import pytest

from think_kernel.agent.sse import ServerSentEvent, SSEDecoder

STREAM = (
    b": keep-alive comment\n"
    b"data: " + json.dumps({"choices": [{"delta": {"content": "h\u00e9"}}]}).encode() + b"\n\n"
    b"event: error\n"
    b'data: {"error":\n'
    b'data:  "two lines"}\n'
    b"id: 7\n"
    b"retry: 100\n\n"
    b":another comment\n\n"
    b"data\n\n"  # a field without a colon: empty data
    b"data: [DONE]\n\n"
)
EVENTS = [
    ServerSentEvent("message", json.dumps({"choices": [{"delta": {"content": "h\u00e9"}}]})),
    ServerSentEvent("error", '{"error":\n "two lines"}'),
    ServerSentEvent("message", ""),
    ServerSentEvent("message", "[DONE]"),
]


def decode(pieces: list[bytes]) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    return [event for piece in pieces for event in decoder.feed(piece)]


def test_a_whole_stream_in_one_read() -> None:
    assert decode([STREAM]) == EVENTS


@pytest.mark.parametrize("newline", [b"\r\n", b"\r"])
def test_crlf_and_cr_line_endings(newline: bytes) -> None:
    assert decode([STREAM.replace(b"\n", newline)]) == EVENTS


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_frames_split_at_every_byte(newline: bytes) -> None:
    stream = STREAM.replace(b"\n", newline)
    # One byte a read: every field, every UTF-8 sequence and every \r\n is split somewhere.
    assert decode([stream[i : i + 1] for i in range(len(stream))]) == EVENTS
    for cut in range(1, len(stream)):
        assert decode([stream[:cut], stream[cut:]]) == EVENTS, cut


def test_events_are_dispatched_by_the_blank_line_only() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n") == []
    assert decoder.feed(b"data: b\n") == []
    assert decoder.feed(b"\n") == [ServerSentEvent("message", "a\nb")]
    # A \r that ends one read and the \n that starts the next are one line ending: the
    # event is out at the \r, and the \n is not a second, empty line.
    assert decoder.feed(b"data: c\r\r") == [ServerSentEvent("message", "c")]
    assert decoder.feed(b"\ndata: d\n\n") == [ServerSentEvent("message", "d")]


def test_a_byte_order_mark_is_skipped_even_split() -> None:
    assert decode([b"\xef\xbb", b"\xbfdata: x\n\n"]) == [ServerSentEvent("message", "x")]
    assert decode([b"\xef\xbb\xbfdata: x\n\n"]) == [ServerSentEvent("message", "x")]


def test_only_one_leading_space_is_dropped_and_unknown_fields_are_skipped() -> None:
    events = decode([b"data:  two spaces\nfoo: bar\ndata:none\n\n"])
    assert events == [ServerSentEvent("message", " two spaces\nnone")]


def test_an_event_without_its_blank_line_is_not_dispatched() -> None:
    assert decode([b"data: complete\n\ndata: cut off"]) == [ServerSentEvent("message", "complete")]
