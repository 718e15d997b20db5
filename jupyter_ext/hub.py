"""Fan-out of a session's live frames to every open WebSocket, and what its run is doing.

    hub = Hub()
    hub.subscribe(session_id, client)      # client.send_text(str) for every frame
    live = hub.snapshot(session_id)        # what the run is doing, as of the subscription
    hub.publish(session_id, frame)         # frame already carries seq and session_id

A tab that (re)connects must show the run as a tab that never left shows it: the text being
streamed, the tools that run (with their output so far), and the agent's status (waiting for
an approval, a retry's countdown). The hub rebuilds that from the frames it publishes, because
none of it is a stored message yet. Frames are serialised once per publish, not once per client.
"""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict
from typing import Any, Protocol

#: Live output a running tool keeps for a tab that joins late (the sidebar keeps as much).
MAX_PROGRESS_CHARS = 20_000

# "...; retry 1/3 in 8 s": the countdown a status detail ends with (think_kernel/render.py
# reads the same text to count down in a notebook).
_RETRY_IN = re.compile(r"in ([0-9.]+) s$")


class Client(Protocol):
    """A connected tab: anything that can take a serialised frame."""

    def send_text(self, text: str) -> None:
        """Queue one JSON text frame to the client."""


class Partial:
    """The assistant message a run is streaming, rebuilt from its live events."""

    def __init__(self, message_id: str, run_id: str | None) -> None:
        self.message_id = message_id
        self.run_id = run_id
        self.chunks: list[str] = []
        self.reasoning: list[str] = []
        self.tool_calls: list[dict[str, Any]] = []
        self.seq = 0

    @property
    def content(self) -> str:
        """The text streamed so far."""
        return "".join(self.chunks)

    def to_dict(self) -> dict[str, Any]:
        """The ``message`` of a ``partial`` frame."""
        return {
            "id": self.message_id,
            "role": "assistant",
            "content": self.content,
            "reasoning": "".join(self.reasoning) or None,
            "tool_calls": self.tool_calls or None,
            "status": "streaming",
            "run_id": self.run_id,
            "seq": self.seq,
        }


class _Live:
    """What a session's run is doing: status, streamed message, running tools."""

    def __init__(self) -> None:
        self.status = ""
        self.detail = ""
        self.status_at = 0.0  # monotonic time of the status frame (for its countdown)
        self.partial: Partial | None = None
        self.tools: dict[str, dict[str, Any]] = {}  # running calls, by id
        self.seq = 0  # the last frame published in the session


class Hub:
    """Per-session subscriber sets and live run state."""

    def __init__(self) -> None:
        self._clients: dict[str, set[Client]] = defaultdict(set)
        self._live: dict[str, _Live] = {}

    def subscribe(self, session_id: str, client: Client) -> None:
        """Start delivering the session's frames to a client."""
        self._clients[session_id].add(client)

    def unsubscribe(self, session_id: str, client: Client) -> None:
        """Stop delivering to a client."""
        clients = self._clients.get(session_id)
        if clients is not None:
            clients.discard(client)
            if not clients:
                del self._clients[session_id]

    def client_count(self, session_id: str) -> int:
        """How many tabs watch a session."""
        return len(self._clients.get(session_id, ()))

    def partial(self, session_id: str) -> Partial | None:
        """The message being streamed in a session, if any."""
        live = self._live.get(session_id)
        return live.partial if live is not None else None

    def snapshot(self, session_id: str) -> dict[str, Any] | None:
        """What the session's run is doing now, or None when the hub knows nothing of one.

        ``{"status", "detail", "message", "tools", "upto"}``: the last status (a countdown
        in its detail counts the time since), the message being streamed (or None), the
        running tool calls with their output so far, and the seq of the last frame
        published, which the snapshot includes. Take it right after :meth:`subscribe`,
        with no ``await`` between: every later frame goes to the new client.
        """
        live = self._live.get(session_id)
        if live is None:
            return None
        detail = live.detail
        match = _RETRY_IN.search(detail)
        if match:
            left = max(0.0, float(match.group(1)) - (time.monotonic() - live.status_at))
            detail = _RETRY_IN.sub(f"in {left:.0f} s", detail)
        return {
            "status": live.status,
            "detail": detail,
            "message": live.partial.to_dict() if live.partial is not None else None,
            "tools": [dict(t) for t in live.tools.values()],
            "upto": live.seq,
        }

    def clear(self, session_id: str) -> None:
        """Forget the run's live state (the run ended)."""
        self._live.pop(session_id, None)

    def publish(self, session_id: str, frame: dict[str, Any]) -> None:
        """Track the run's live state and send the frame to every subscriber."""
        self._track(session_id, frame)
        clients = self._clients.get(session_id)
        if not clients:
            return
        text = json.dumps(frame, default=str)
        for client in list(clients):
            client.send_text(text)

    def _track(self, session_id: str, frame: dict[str, Any]) -> None:
        kind = str(frame.get("type") or "")
        if kind in ("task_complete", "task_failed", "chat", "error") or (
            kind == "status" and frame.get("status") == "idle"
        ):
            self._live.pop(session_id, None)
            return
        live = self._live.get(session_id)
        if live is None:
            if kind not in _LIVE_KINDS:
                return
            live = self._live[session_id] = _Live()
        live.seq = int(frame.get("seq") or live.seq)
        if kind in ("text_delta", "reasoning"):
            mid = str(frame.get("message_id") or "")
            part = live.partial
            if part is None or part.message_id != mid:
                part = live.partial = Partial(mid, frame.get("run_id"))
            (part.chunks if kind == "text_delta" else part.reasoning).append(
                str(frame.get("delta") or "")
            )
            part.seq = live.seq
        elif kind == "text_done":
            live.partial = None
        elif kind == "tool_call":
            call = {"id": frame.get("id"), "name": frame.get("name"), "input": frame.get("input")}
            if live.partial is not None:
                live.partial.tool_calls.append(call)
                live.partial.seq = live.seq
            mid = str(frame.get("message_id") or "")
            live.tools[str(frame.get("id"))] = dict(call, message_id=mid, progress="")
        elif kind == "tool_progress":
            tool = live.tools.get(str(frame.get("call_id")))
            if tool is not None and frame.get("text"):
                tool["progress"] = (tool["progress"] + str(frame["text"]))[-MAX_PROGRESS_CHARS:]
        elif kind == "tool_result":
            live.tools.pop(str(frame.get("call_id")), None)
        elif kind == "status":
            live.status = str(frame.get("status") or "")
            live.detail = str(frame.get("detail") or "")
            live.status_at = time.monotonic()
        elif kind == "task_retrying":
            # The run lost its kernel and waits for its next attempt (the server's retry).
            live.status, live.status_at = "waiting", time.monotonic()
            live.detail = f"retrying (attempt {frame.get('attempt') or 0}): {frame.get('detail')}"
            live.partial = None
            live.tools.clear()


# Frames that begin a run's live state; any frame of the session then advances its seq.
_LIVE_KINDS = frozenset(
    ("status", "text_delta", "reasoning", "tool_call", "tool_progress", "task_retrying")
)
