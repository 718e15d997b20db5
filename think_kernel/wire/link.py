"""Frames of the kernel link (``/api/think/link``): one WebSocket per think kernel.

The handshake (the server speaks first; ``mac`` is ``think_kernel.kernel.link.link_mac``):

    server -> ChallengeFrame(nonce)
    kernel -> HelloFrame(kernel_id, epoch, cnonce, mac)
    server -> WelcomeFrame(mac, store_path, root_dir, session_id)

Then each side decodes what it receives against its table (:data:`TO_SERVER`,
:data:`TO_KERNEL`) and dispatches on the class; a frame outside the table, or with a field
missing or of the wrong type, is answered with an :class:`ErrorFrame` and logged, and the link
stays up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from .base import Frame, frame_table

RpcId = int | str


@dataclass(frozen=True, slots=True)
class ChallengeFrame(Frame):
    """The server's first frame: the nonce the kernel's ``hello`` must sign."""

    type: ClassVar[str] = "challenge"
    nonce: str


@dataclass(frozen=True, slots=True)
class HelloFrame(Frame):
    """The kernel proves it holds the kernel's connection key (an HMAC over the nonce)."""

    type: ClassVar[str] = "hello"
    kernel_id: str
    epoch: str
    cnonce: str
    mac: str


@dataclass(frozen=True, slots=True)
class WelcomeFrame(Frame):
    """The server proves it knows the key too, and says where the store and files are."""

    type: ClassVar[str] = "welcome"
    mac: str
    store_path: str | None = None
    root_dir: str | None = None
    session_id: str | None = None


@dataclass(frozen=True, slots=True)
class ItemsFrame(Frame):
    """Numbered items of the kernel's outbox (``{"n", "kind", "session_id", ...}``): events,
    run starts and ends, MCP results; resent until acknowledged, duplicates dropped."""

    type: ClassVar[str] = "items"
    items: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class AckFrame(Frame):
    """Every item up to ``n`` is stored: the kernel may forget them."""

    type: ClassVar[str] = "ack"
    n: int


@dataclass(frozen=True, slots=True)
class RpcFrame(Frame):
    """A call of a server method (``doc.read``, ...); a repeated ``id`` gets the cached answer."""

    type: ClassVar[str] = "rpc"
    id: RpcId
    method: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RpcResultFrame(Frame):
    """The answer of an RPC."""

    type: ClassVar[str] = "rpc_result"
    id: RpcId
    result: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class RpcErrorFrame(Frame):
    """An RPC failed: ``error`` is ``{"code", "message"}``."""

    type: ClassVar[str] = "rpc_error"
    id: RpcId
    error: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ChatFrame(Frame):
    """Run one attempt of a chat request (a resend of the same attempt is dropped, a higher
    attempt replaces the one running)."""

    type: ClassVar[str] = "chat"
    run_id: str
    attempt: int = 0
    session_id: str = ""
    message_id: str | None = None
    content: str = ""
    context: str = ""


@dataclass(frozen=True, slots=True)
class CancelFrame(Frame):
    """Cancel a chat run."""

    type: ClassVar[str] = "cancel"
    run_id: str


@dataclass(frozen=True, slots=True)
class ApprovalFrame(Frame):
    """A person decided an approval (already stored by the server)."""

    type: ClassVar[str] = "approval"
    approval_id: str
    decision: str = ""
    input: dict[str, Any] | None = None
    reason: str = ""
    always: bool = False
    source: str = ""
    user: str = ""


@dataclass(frozen=True, slots=True)
class ToolFrame(Frame):
    """Run one tool call of an MCP client of Think's endpoint (answered by a ``tool_result``
    item; a resend of the same ``call_id`` is dropped)."""

    type: ClassVar[str] = "tool"
    call_id: str
    name: str
    arguments: Any = None
    session_id: str = ""
    client: str = ""


@dataclass(frozen=True, slots=True)
class JobsStopFrame(Frame):
    """Stop a session's background jobs: ``name``, or every one when it is empty (a
    person's Stop in the sidebar; the jobs' next record tells how they ended)."""

    type: ClassVar[str] = "jobs_stop"
    session_id: str
    name: str = ""


@dataclass(frozen=True, slots=True)
class ReleaseFrame(Frame):
    """A kernel that hosts several chat sessions gives one back: it closes that session's
    runtime and sandbox (the session hibernates; its state is in the store)."""

    type: ClassVar[str] = "release"
    session_id: str


@dataclass(frozen=True, slots=True)
class AppsFrame(Frame):
    """Stop or restart one of a session's live apps (a person's Stop or Restart in the
    sidebar; the apps' next record tells how it went)."""

    type: ClassVar[str] = "apps"
    session_id: str
    name: str
    action: str = "stop"  # or "restart"


@dataclass(frozen=True, slots=True)
class ToolCancelFrame(Frame):
    """Cancel an MCP tool call."""

    type: ClassVar[str] = "tool_cancel"
    call_id: str


@dataclass(frozen=True, slots=True)
class RoomsFrame(Frame):
    """Whether any document room is open on the server (with none, a run needs no flush)."""

    type: ClassVar[str] = "rooms"
    open: bool


@dataclass(frozen=True, slots=True)
class PingFrame(Frame):
    """Are you there? Answered by a ``pong`` with the same ``id``."""

    type: ClassVar[str] = "ping"
    id: RpcId | None = None


@dataclass(frozen=True, slots=True)
class PongFrame(Frame):
    """The answer to a ping; the kernel's lists ``[run_id, attempt]`` of the runs it owns."""

    type: ClassVar[str] = "pong"
    id: RpcId | None = None
    runs: list[list[Any]] | None = None


@dataclass(frozen=True, slots=True)
class ErrorFrame(Frame):
    """The peer sent something this side cannot use: the frame is dropped, the link stays."""

    type: ClassVar[str] = "error"
    message: str
    code: str = "bad_frame"


#: What an authenticated kernel may send.
TO_SERVER = frame_table((ItemsFrame, RpcFrame, PingFrame, PongFrame, ErrorFrame))
#: What the server sends an authenticated kernel.
TO_KERNEL = frame_table(
    (AckFrame, RpcResultFrame, RpcErrorFrame, ChatFrame, CancelFrame, ApprovalFrame, ToolFrame,
     ToolCancelFrame, RoomsFrame, PingFrame, PongFrame, ErrorFrame, JobsStopFrame, ReleaseFrame,
     AppsFrame)
)  # fmt: skip
#: Every link frame, the handshake included, in the order the reference lists them.
LINK_FRAMES: tuple[type[Frame], ...] = (
    ChallengeFrame, HelloFrame, WelcomeFrame, ItemsFrame, AckFrame, RpcFrame, RpcResultFrame,
    RpcErrorFrame, ChatFrame, CancelFrame, ApprovalFrame, ToolFrame, ToolCancelFrame,
    RoomsFrame, PingFrame, PongFrame, ErrorFrame, JobsStopFrame, ReleaseFrame, AppsFrame,
)  # fmt: skip
