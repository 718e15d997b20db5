"""Fan-out of a session's live frames to every open WebSocket, and its in-flight partial.

    hub = Hub()
    hub.subscribe(session_id, client)      # client.send_text(str) for every frame
    hub.publish(session_id, frame)         # frame already carries seq and session_id
    hub.partial(session_id)                # the message being streamed, or None

Frames are serialised once per publish, not once per client.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Protocol


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


class Hub:
    """Per-session subscriber sets and partial messages."""

    def __init__(self) -> None:
        self._clients: dict[str, set[Client]] = defaultdict(set)
        self._partials: dict[str, Partial] = {}

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
        return self._partials.get(session_id)

    def clear(self, session_id: str) -> None:
        """Forget the partial message (the run ended)."""
        self._partials.pop(session_id, None)

    def publish(self, session_id: str, frame: dict[str, Any]) -> None:
        """Track the partial message and send the frame to every subscriber."""
        self._track(session_id, frame)
        clients = self._clients.get(session_id)
        if not clients:
            return
        text = json.dumps(frame, default=str)
        for client in list(clients):
            client.send_text(text)

    def _track(self, session_id: str, frame: dict[str, Any]) -> None:
        kind = frame.get("type")
        seq = int(frame.get("seq") or 0)
        if kind in ("text_delta", "reasoning"):
            mid = str(frame.get("message_id") or "")
            part = self._partials.get(session_id)
            if part is None or part.message_id != mid:
                part = self._partials[session_id] = Partial(mid, frame.get("run_id"))
            (part.chunks if kind == "text_delta" else part.reasoning).append(
                str(frame.get("delta") or "")
            )
            part.seq = seq
        elif kind == "tool_call":
            part = self._partials.get(session_id)
            if part is not None:
                part.tool_calls.append(
                    {"id": frame.get("id"), "name": frame.get("name"), "input": frame.get("input")}
                )
                part.seq = seq
        elif kind in ("text_done", "chat", "error") or (
            kind == "status" and frame.get("status") == "idle"
        ):
            self._partials.pop(session_id, None)
        elif kind in ("task_complete", "task_failed"):
            self._partials.pop(session_id, None)
