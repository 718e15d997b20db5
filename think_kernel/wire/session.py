"""Frames of the session socket (``/api/think/sessions/{id}/ws``) besides the agent events.

A tab receives, on connect, ``sync``, ``history`` and (while a run streams) ``partial``; then
the session's events (:mod:`think_kernel.agent.events`, with ``seq``, ``session_id`` and
``run_id`` added: :class:`LiveFields`), ``message`` frames, and the answers to what it sent
(:data:`CLIENT_FRAMES`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

from .base import Frame, Ref

SessionObject = Annotated[dict[str, Any], Ref("Session", "ISession")]
MessageObject = Annotated[dict[str, Any], Ref("Message", "IWireMessage")]
RunObject = Annotated[dict[str, Any], Ref("Run", "IRunInfo")]
AgentStatus = Literal["idle", "thinking", "executing", "waiting", "running"]


@dataclass(frozen=True, slots=True)
class LiveFields:
    """What the server adds to each event it sends live (the stored event has them too)."""

    seq: int = 0  # the event's position in the session's stored events
    session_id: str = ""
    run_id: str = ""  # the run (a durable task) the event belongs to


@dataclass(frozen=True, slots=True)
class LiveTool:
    """A tool call that runs, with its live output so far (in a ``partial`` frame)."""

    id: str
    name: str
    progress: str
    input: Any = None
    message_id: str = ""


@dataclass(frozen=True, slots=True)
class SyncFrame(Frame):
    """First frame: the session, the agent's status (``running`` while a run is in flight)
    with the detail of its last status, the run, and the last stored event's seq."""

    type: ClassVar[str] = "sync"
    session: SessionObject | None
    status: AgentStatus
    run: RunObject | None
    last_seq: int
    detail: str = ""


@dataclass(frozen=True, slots=True)
class HistoryFrame(Frame):
    """The newest stored messages (oldest first) and the cursor for the page before them."""

    type: ClassVar[str] = "history"
    messages: list[MessageObject]
    next_cursor: int | None = None


@dataclass(frozen=True, slots=True)
class PartialFrame(Frame):
    """What the run is doing as the tab connects: the message it streams, its running tool
    calls, and the seq the snapshot includes (later frames follow it)."""

    type: ClassVar[str] = "partial"
    message: MessageObject | None = None
    tools: list[LiveTool] = field(default_factory=list)
    upto: int = 0


@dataclass(frozen=True, slots=True)
class MessageFrame(Frame):
    """A whole stored message (one sent from another tab, a status change of a queued one)."""

    type: ClassVar[str] = "message"
    message: MessageObject


@dataclass(frozen=True, slots=True)
class CancelledFrame(Frame):
    """The answer to a ``cancel``: the run that was cancelled, if any."""

    type: ClassVar[str] = "cancelled"
    run: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ApprovalDecidedFrame(Frame):
    """The answer to an ``approval``: the decided approval (every tab also hears
    ``approval_resolved``)."""

    type: ClassVar[str] = "approval_decided"
    approval: dict[str, Any]


@dataclass(frozen=True, slots=True)
class JobsFrame(Frame):
    """The session's background jobs as its kernel last recorded them (sent on each change,
    at most every few seconds while one prints; not stored): see ``GET .../jobs``."""

    type: ClassVar[str] = "jobs"
    jobs: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class AppListFrame(Frame):
    """The session's live apps as its kernel last recorded them (sent on each change; not
    stored): see ``GET .../apps``."""

    type: ClassVar[str] = "apps"
    session_id: str
    apps: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class SessionPongFrame(Frame):
    """The answer to a ``ping``."""

    type: ClassVar[str] = "pong"


@dataclass(frozen=True, slots=True)
class SessionErrorFrame(Frame):
    """What a tab sent was refused: ``code`` is ``bad_frame``, ``too_large``, ``forbidden``,
    ``not_found`` or ``already_decided`` (with the ``approval`` as it stands)."""

    type: ClassVar[str] = "session_error"
    message: str
    code: str = "bad_frame"
    approval: dict[str, Any] | None = None

    @classmethod
    def wire_types(cls) -> tuple[str, ...]:
        """Sent as ``error``, like the agent's error event (``code`` tells them apart)."""
        return ("error",)

    def to_dict(self) -> dict[str, Any]:
        """Serialise as an ``error`` frame."""
        out = Frame.to_dict(self)
        out["type"] = "error"
        return out


@dataclass(frozen=True, slots=True)
class SessionPingFrame(Frame):
    """A tab asks whether the socket is alive (answered ``pong``)."""

    type: ClassVar[str] = "ping"


@dataclass(frozen=True, slots=True)
class SessionCancelFrame(Frame):
    """Cancel the session's running request (``write`` permission)."""

    type: ClassVar[str] = "cancel"


@dataclass(frozen=True, slots=True)
class SessionApprovalFrame(Frame):
    """Decide an approval, as the sidebar's buttons do (``write`` permission)."""

    type: ClassVar[str] = "approval"
    id: str
    decision: Literal["approve", "reject"]
    input: dict[str, Any] | None = None
    reason: str = ""
    always: bool = False


@dataclass(frozen=True, slots=True)
class ProposalFrame(Frame):
    """The session's proposal changed (review mode): ``count`` files are proposed now; the
    tab fetches ``GET .../proposal`` again."""

    type: ClassVar[str] = "proposal"
    session_id: str
    count: int


#: What the server sends a tab, besides the agent events.
SESSION_FRAMES: tuple[type[Frame], ...] = (
    SyncFrame, HistoryFrame, PartialFrame, MessageFrame, CancelledFrame, ApprovalDecidedFrame,
    SessionPongFrame, SessionErrorFrame, JobsFrame, ProposalFrame, AppListFrame,
)  # fmt: skip
#: What a tab may send.
CLIENT_FRAMES: tuple[type[Frame], ...] = (
    SessionPingFrame,
    SessionCancelFrame,
    SessionApprovalFrame,
)
