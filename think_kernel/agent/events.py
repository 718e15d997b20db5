"""The closed set of events the agent loop yields.

Every consumer (the kernel renderer, the server link, the store, the browser) sees the same
frozen dataclasses; ``to_dict()`` gives the JSON frame (``{"type": ..., **fields}``) that travels
over the kernel link and the WebSocket. These classes are the one declaration of the event
frames: the OpenAPI document, the WebSocket reference and ``labextension/src/wire.ts`` are
generated from their type hints (:mod:`think_kernel.wire`).

``tool_progress`` carries live output of a running tool (stdout of ``bash`` /
``execute_code``, outputs of ``execute_cell``), so users see long tools as they run; ``usage``
reports the tokens and cost of each model call, with its role and model; ``compaction`` says
older messages were summarised to fit the context window. Task-graph events are
``task_created`` / ``task_updated``: ``task_queued`` and the other :class:`TaskEvent` names are
the durable *run* lifecycle.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

from ..wire.base import Frame, FrameError, Ref, from_dict

Status = Literal["idle", "thinking", "executing", "waiting"]
TaskKind = Literal["queued", "retrying", "complete", "failed"]
TaskObject = Annotated[dict[str, Any], Ref("Task", "ITask")]


@dataclass(frozen=True, slots=True)
class Event(Frame):
    """Base class: every event has a ``type`` name and serialises to a flat JSON object."""

    type: ClassVar[str] = "event"


@dataclass(frozen=True, slots=True)
class StatusEvent(Event):
    """The run changed state; ``detail`` explains (e.g. a retry countdown)."""

    type: ClassVar[str] = "status"
    status: Status
    detail: str = ""


@dataclass(frozen=True, slots=True)
class TextDelta(Event):
    """A chunk of assistant text as it streams."""

    type: ClassVar[str] = "text_delta"
    message_id: str
    delta: str


@dataclass(frozen=True, slots=True)
class TextDone(Event):
    """The assistant text of one model step is complete."""

    type: ClassVar[str] = "text_done"
    message_id: str
    text: str


@dataclass(frozen=True, slots=True)
class Reasoning(Event):
    """A chunk of reasoning text, when the endpoint returns it."""

    type: ClassVar[str] = "reasoning"
    message_id: str
    delta: str


@dataclass(frozen=True, slots=True)
class ToolCall(Event):
    """The model asked for a tool; ``input`` is the parsed arguments (or the raw text)."""

    type: ClassVar[str] = "tool_call"
    id: str
    name: str
    input: Any
    message_id: str = ""


@dataclass(frozen=True, slots=True)
class ToolProgress(Event):
    """Live output of a running tool: ``stream`` names it, ``text`` or ``data`` carry it."""

    type: ClassVar[str] = "tool_progress"
    call_id: str
    stream: str
    text: str = ""
    data: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolResult(Event):
    """A tool finished; ``output`` is what the model sees (already summarised if large)."""

    type: ClassVar[str] = "tool_result"
    call_id: str
    name: str
    output: str
    duration_ms: float
    ok: bool
    summary: str = ""
    display: list[dict[str, Any]] = field(default_factory=list)
    # The stored tool message, and the size of the whole output when the model saw less of
    # it (0 otherwise): ``GET .../messages/{result_id}/content`` serves all of it.
    result_id: str = ""
    full_size: int = 0


@dataclass(frozen=True, slots=True)
class Usage(Event):
    """Tokens and estimated cost of one model call, and which role and model made it.

    ``purpose`` is ``step`` (the main loop), ``compaction``, ``tool_summary`` or ``title``;
    ``estimated`` marks counts we estimated because the endpoint reported none; ``cost`` is
    USD from the price table (None when the model has no price).
    """

    type: ClassVar[str] = "usage"
    message_id: str
    role: str
    model: str
    purpose: str = "step"
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    tokens_reasoning: int = 0
    cost: float | None = None
    estimated: bool = False


@dataclass(frozen=True, slots=True)
class Compaction(Event):
    """Older messages were summarised; the stored rows stay (non-destructive).

    ``message_id`` is the stored summary row; it covers every message from the session's
    start to ``to_seq`` except the first request, ``count`` of them, from ``first_id`` up to
    (not including) ``tail_id``, the first message still sent verbatim.
    """

    type: ClassVar[str] = "compaction"
    message_id: str
    summary: str
    count: int
    first_id: str
    tail_id: str
    to_seq: int
    tokens_before: int
    tokens_after: int
    role: str = "summarizer"
    model: str = ""


@dataclass(frozen=True, slots=True)
class Chat(Event):
    """The final assistant message of a run."""

    type: ClassVar[str] = "chat"
    message_id: str
    content: str
    stop_reason: str = "stop"


@dataclass(frozen=True, slots=True)
class ErrorEvent(Event):
    """The run failed; ``message`` says what to fix. ``code`` is machine readable."""

    type: ClassVar[str] = "error"
    message: str
    code: str = "error"
    retryable: bool = False


@dataclass(frozen=True, slots=True)
class TaskEvent(Event):
    """A durable run changed state: sent as ``task_queued``, ``task_retrying``, ... ."""

    type: ClassVar[str] = "task"
    kind: TaskKind
    task_id: str
    detail: str = ""
    attempt: int = 0

    @classmethod
    def wire_types(cls) -> tuple[str, ...]:
        """``task_queued``, ``task_retrying``, ``task_complete`` and ``task_failed``."""
        return tuple(f"task_{k}" for k in typing.get_args(TaskKind))

    def to_dict(self) -> dict[str, Any]:
        """Serialise with the name of the change, e.g. ``task_retrying``."""
        out = Frame.to_dict(self)
        out["type"] = f"task_{self.kind}"
        return out


@dataclass(frozen=True, slots=True)
class FileChanged(Event):
    """A tool changed a file in the workspace."""

    type: ClassVar[str] = "file_changed"
    path: str
    action: str


@dataclass(frozen=True, slots=True)
class ApprovalRequested(Event):
    """A tool call waits for a person's decision (see :mod:`think_kernel.approvals`)."""

    type: ClassVar[str] = "approval_requested"
    id: str
    tool: str
    input: Any
    summary: str = ""
    diff: str = ""
    reason: str = ""
    call_id: str = ""
    message_id: str = ""
    expires_at: float | None = None
    task_id: str = ""  # a subagent's call: the task it works on


@dataclass(frozen=True, slots=True)
class ApprovalResolved(Event):
    """An approval was decided: ``decision`` is approve or reject, with who and from where."""

    type: ClassVar[str] = "approval_resolved"
    id: str
    decision: str
    input: Any = None
    reason: str = ""
    always: bool = False
    source: str = ""
    user: str = ""
    tool: str = ""


@dataclass(frozen=True, slots=True)
class QuestionAsked(Event):
    """The agent asks a person (``ask_user``); the run waits for the answer
    (see :mod:`think_kernel.questions`)."""

    type: ClassVar[str] = "question_asked"
    id: str
    question: str
    options: list[str] = field(default_factory=list)
    allow_text: bool = True
    call_id: str = ""
    message_id: str = ""
    expires_at: float | None = None
    task_id: str = ""  # a subagent's question: the task it works on


@dataclass(frozen=True, slots=True)
class QuestionAnswered(Event):
    """A question was answered (or closed: ``source`` "timeout" or "cancel", no answer)."""

    type: ClassVar[str] = "question_answered"
    id: str
    answer: str = ""
    source: str = ""
    user: str = ""


@dataclass(frozen=True, slots=True)
class TaskCreated(Event):
    """A task of the task graph was created; ``task`` is the whole task object (not to be
    confused with ``task_queued`` ... of the run lifecycle, :class:`TaskEvent`)."""

    type: ClassVar[str] = "task_created"
    task: TaskObject


@dataclass(frozen=True, slots=True)
class TaskUpdated(Event):
    """A task changed (status, result, progress of its subtree, its subagent); the whole
    object each time, so a client never has to merge."""

    type: ClassVar[str] = "task_updated"
    task: TaskObject


@dataclass(frozen=True, slots=True)
class SubagentSpawned(Event):
    """A subagent started working on a task."""

    type: ClassVar[str] = "subagent_spawned"
    task_id: str
    title: str
    model: str


@dataclass(frozen=True, slots=True)
class SubagentTextDelta(Event):
    """Text a subagent streams (coalesced: at most ~20 frames a second per subagent)."""

    type: ClassVar[str] = "subagent_text_delta"
    task_id: str
    delta: str


@dataclass(frozen=True, slots=True)
class SubagentToolCall(Event):
    """A subagent called a tool (through the parent: logged and approved there)."""

    type: ClassVar[str] = "subagent_tool_call"
    task_id: str
    id: str
    name: str
    input: Any


@dataclass(frozen=True, slots=True)
class SubagentToolResult(Event):
    """A subagent's tool call finished; ``output`` is its summary."""

    type: ClassVar[str] = "subagent_tool_result"
    task_id: str
    call_id: str
    name: str
    output: str
    ok: bool
    duration_ms: float


@dataclass(frozen=True, slots=True)
class SubagentComplete(Event):
    """A subagent finished; ``result`` is its final answer (the task's result)."""

    type: ClassVar[str] = "subagent_complete"
    task_id: str
    result: str


@dataclass(frozen=True, slots=True)
class SubagentError(Event):
    """A subagent ended without a result: ``code`` is timeout, interrupted, cancelled or
    error."""

    type: ClassVar[str] = "subagent_error"
    task_id: str
    message: str
    code: str = "error"


AgentEvent = (
    StatusEvent
    | TextDelta
    | TextDone
    | Reasoning
    | ToolCall
    | ToolProgress
    | ToolResult
    | Chat
    | ErrorEvent
    | TaskEvent
    | FileChanged
    | Usage
    | Compaction
    | ApprovalRequested
    | ApprovalResolved
    | QuestionAsked
    | QuestionAnswered
    | TaskCreated
    | TaskUpdated
    | SubagentSpawned
    | SubagentTextDelta
    | SubagentToolCall
    | SubagentToolResult
    | SubagentComplete
    | SubagentError
)

#: Every event class, in the order the references list them.
EVENTS: tuple[type[Event], ...] = (
    StatusEvent,
    TextDelta,
    TextDone,
    Reasoning,
    ToolCall,
    ToolProgress,
    ToolResult,
    Chat,
    ErrorEvent,
    TaskEvent,
    FileChanged,
    Usage,
    Compaction,
    ApprovalRequested,
    ApprovalResolved,
    QuestionAsked,
    QuestionAnswered,
    TaskCreated,
    TaskUpdated,
    SubagentSpawned,
    SubagentTextDelta,
    SubagentToolCall,
    SubagentToolResult,
    SubagentComplete,
    SubagentError,
)
_BY_TYPE: dict[str, type[Event]] = {name: cls for cls in EVENTS for name in cls.wire_types()}


def event_from_dict(data: dict[str, Any]) -> Event:
    """Rebuild an event from its JSON frame (the inverse of ``to_dict``); unknown keys are
    ignored, an unknown type or a missing or mistyped field is a ``FrameError``."""
    kind = data.get("type", "")
    cls = _BY_TYPE.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise FrameError(f"unknown event type {kind!r:.60}", "unknown_type")
    if cls is TaskEvent:
        data = {**data, "kind": kind[len("task_") :]}
    return from_dict(cls, data)
