"""The agent loop: a request in, an async stream of typed events out.

    agent = Agent(model, tools, store, system=prompt, model_name="gpt-4o-mini")
    async for event in agent.run(session_id, "create hello.py", make_context):
        render(event)

It knows nothing of ipykernel or tornado. Every message is stored before the events that refer
to it are yielded; a streaming reply is checkpointed and heartbeated so a crash loses at most a
second of text. Several tool calls in one step run concurrently; their progress and results are
yielded as they happen. Cancelling the consumer cancels the tools and marks the reply cancelled.

Long sessions: before each model call the request's size is estimated
(:mod:`.tokens`, calibrated by the usage the endpoint reports); past ``compact_at`` of the
model's window the older turns are summarised by the ``summarizer`` role (:mod:`.summarizer`),
and a context-length error from the endpoint triggers one compaction and one retry. Each call
names its role (``primary``, or ``vision`` while the request carries images) and records its
usage and cost (:mod:`.calls`). Tool outputs too large for the model reach it as a summary and
excerpts (:mod:`.outputs`); the whole output is stored with the tool message.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..hooks.spec import ModelCall
from ..store.ids import new_id
from ..tools.base import ToolRegistry
from .attachments import load_history
from .calls import ModelCaller
from .context import ModelContext
from .events import (
    Chat,
    ErrorEvent,
    Event,
    Reasoning,
    StatusEvent,
    TextDelta,
    TextDone,
)
from .model import Chunk, ModelClient, ModelError
from .summarizer import budget, compact_if_needed
from .tokens import Calibration, estimate_tools
from .toolcalls import ContextFactory, run_tool_calls
from .toolspecs import fit_specs

if TYPE_CHECKING:
    from ..approvals import ApprovalGate
    from ..hooks import HookRunner
    from .stores import AgentStore


HEARTBEAT_SECONDS = 1.0


@dataclass
class _Step:
    """What one model call produced."""

    text: str = ""
    reasoning: str = ""
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    finish: str = ""
    usage: Chunk | None = None
    estimated_in: int = 0
    stored: Any = None  # the insert of the step's row (an asyncio future; see Agent.run)
    #: What hooks added to this call's system message (never stored, never kept).
    context: str = ""


class Agent:
    """Runs requests against a model with tools, recording everything in the store.

    ``models`` maps roles to model names (``primary`` defaults to ``model_name``); the
    context window of each model comes from ``windows`` (see :mod:`.catalog`), learned
    windows and the token ``calibration`` are shared across runs when the caller passes them.
    """

    def __init__(
        self,
        model: ModelClient,
        tools: ToolRegistry,
        store: AgentStore,
        *,
        system: str,
        model_name: str,
        max_steps: int = 20,
        retry_delays: Sequence[float] = (2.0, 4.0, 8.0),
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        models: Mapping[str, str] | None = None,
        windows: Callable[[str], int] | None = None,
        prices: Mapping[str, Any] | None = None,
        calibration: Calibration | None = None,
        learned_windows: dict[str, int] | None = None,
        compact_at: float = 0.8,
        compact_keep: float = 0.4,
        summarize_outputs: bool = True,
        gate: ApprovalGate | None = None,
        step_role: str = "primary",
        before_step: Callable[[], AsyncIterator[Event]] | None = None,
        hooks: HookRunner | None = None,
    ) -> None:
        self.model = model
        self.tools = tools
        self.store = store
        self.system = system
        self.model_name = model_name
        self.max_steps = max_steps
        self.retry_delays = list(retry_delays)
        self.sleep = sleep
        self.models = {**(models or {}), "primary": (models or {}).get("primary") or model_name}
        self.windows = windows
        self.prices = prices
        self.calibration = calibration or Calibration()
        self.learned_windows = learned_windows if learned_windows is not None else {}
        self.compact_at = compact_at
        self.compact_keep = compact_keep
        self.summarize_outputs = summarize_outputs
        self.gate = gate
        # The role of the model that runs the steps: ``fast`` for a subagent.
        self.step_role = step_role
        # Run before each model step (tools the agent wrote load there); it may change the
        # registry, whose specs are then taken again.
        self.before_step = before_step
        # Extensions' lifecycle hooks: before each model call, around each tool call.
        self.hooks = hooks
        #: ``await notes(session_id)`` before each step after the first: news for the model
        #: that came while it worked (a person's decisions on its proposal), "" for none.
        self.step_notes: Callable[[str], Awaitable[str]] | None = None

    def caller(self, session_id: str) -> ModelCaller:
        """The model caller of a session (roles, usage records, calibration)."""
        return ModelCaller(
            self.model,
            self.store,
            session_id,
            self.models,
            prices=self.prices,
            calibration=self.calibration,
            windows=self.windows,
            learned=self.learned_windows,
            sleep=self.sleep,
        )

    async def run(
        self,
        session_id: str,
        request: str,
        make_context: ContextFactory,
        *,
        user_message_id: str | None = None,
        attachments: list[dict[str, Any]] | None = None,
    ) -> AsyncIterator[Event]:
        """Store the request, then loop model -> tools until the model answers or a limit hits."""
        rows = await self.store.get_messages(
            session_id, statuses=("complete", "cancelled", "error")
        )
        user = await self.store.get_message(user_message_id) if user_message_id else None
        if user is None:
            extra: dict[str, Any] = {"id": user_message_id} if user_message_id else {}
            if attachments:
                extra["attachments"] = attachments
            user = await self.store.add_message(session_id, "user", request, **extra)
            rows.append(user)
        else:
            at = _position(rows, user)
            if request and request != user["content"]:
                # The row keeps what the user typed; the model also sees attached context.
                user = {**user, "content": request}
                if at is not None:
                    rows[at] = user
            if at is None:
                rows.append(user)  # stored by the server with a status the filter left out
        # else: a retry of a stored request; rows hold it and the steps it completed, in order
        caller = self.caller(session_id)
        # A small window gets shortened tool descriptions (the schemas stay whole).
        specs = fit_specs(
            self.tools.specs(), caller.window(self.step_role), optional=self.tools.optional
        )
        # A step whose calls wait on approvals (the process that asked died or restarted):
        # run those calls now instead of asking the model again.
        unfinished = await self._unfinished_step(session_id, rows, user)
        if unfinished is not None:
            mid, calls = unfinished
            yield StatusEvent("executing", ", ".join(c["name"] for c in calls))
            resumed: dict[str, dict[str, Any]] = {}
            async for event in run_tool_calls(
                self.tools,
                self.store,
                self.gate,
                session_id,
                mid,
                calls,
                resumed,
                make_context,
                caller,
                summarize=self.summarize_outputs,
                hooks=self.hooks,
            ):
                yield event
            rows.extend(resumed[c["id"]] for c in calls if c["id"] in resumed)
        rows, loaded = await load_history(self.store, rows, user)
        # Convert history once; each step then appends only what it added, so a step's cost
        # does not grow with the length of the conversation.
        ctx = ModelContext.from_rows(self.system, rows, loaded, estimate_tools(specs))
        version = self.tools.version
        for step_no in range(1, self.max_steps + 1):
            yield StatusEvent("thinking", f"step {step_no}")
            if self.before_step is not None:
                async for event in self.before_step():
                    yield event
                if self.tools.version != version:
                    version = self.tools.version
                    window = caller.window(self.step_role)
                    specs = fit_specs(self.tools.specs(), window, optional=self.tools.optional)
                    ctx.tools_tokens = estimate_tools(specs)
            role = "vision" if ctx.has_images else self.step_role
            async for event in compact_if_needed(
                ctx,
                caller,
                self.store,
                session_id,
                user["id"],
                role=role,
                compact_at=self.compact_at,
                keep=self.compact_keep,
            ):
                yield event
            role = "vision" if ctx.has_images else self.step_role
            step = _Step()
            if self.hooks is not None and self.hooks.has("before_model"):
                model = caller.model(role)
                call = ModelCall(session_id, step_no, role, model, request, self.hooks.workspace)
                change = await self.hooks.before_model(call)
                role, step.context = change.role or role, change.context
            if step_no > 1 and self.step_notes is not None:
                news = await self.step_notes(session_id)
                step.context = f"{step.context}\n\n{news}".strip() if news else step.context
            # The step's row is stored while the request is on its way: the model has it one
            # SQLite commit sooner. Nothing about the step is yielded, and no
            # update of the row is made, before the insert is done (``step.stored``).
            mid = new_id("m_")
            step.stored = asyncio.ensure_future(
                self.store.add_message(
                    session_id,
                    "assistant",
                    "",
                    id=mid,
                    status="streaming",
                    model=caller.model(role),
                    model_role=role,
                    parent_id=user["id"],
                    heartbeat_at=time.time(),
                )
            )
            try:
                async for event in self._stream_with_retries(
                    ctx, specs, mid, step, caller, role, session_id, user["id"]
                ):
                    yield event
                reply = await step.stored
            except ModelError as e:
                await step.stored
                await self.store.update_message(
                    mid, status="error", content=step.text, error=str(e), checkpoint=None
                )
                yield ErrorEvent(str(e), code=e.code, retryable=e.transient)
                yield StatusEvent("idle")
                return
            except BaseException:
                with contextlib.suppress(Exception):
                    await asyncio.shield(step.stored)  # a cancelled run's row exists, then
                    await asyncio.shield(
                        self.store.update_message(mid, status="cancelled", content=step.text)
                    )
                raise

            calls = [_call_record(i, c) for i, c in sorted(step.calls.items())]
            usage = await caller.record(
                role=role,
                purpose="step",
                message_id=mid,
                reported=step.usage,
                estimated_in=step.estimated_in,
                text_out=step.text + "".join(c["arguments"] for c in calls),
            )
            await self.store.update_message(
                mid,
                content=step.text,
                reasoning=step.reasoning or None,
                tool_calls=calls or None,
                status="complete",
                tokens_in=usage.tokens_in,
                tokens_out=usage.tokens_out,
                tokens_cached=usage.tokens_cached or None,
                tokens_reasoning=usage.tokens_reasoning or None,
                cost=usage.cost,
                heartbeat_at=time.time(),
            )
            yield usage
            reply.update(content=step.text, tool_calls=calls or None, status="complete")
            ctx.append([reply])
            if step.text:
                yield TextDone(mid, step.text)
            if not calls:
                yield Chat(mid, step.text, stop_reason=step.finish or "stop")
                yield StatusEvent("idle")
                return
            yield StatusEvent("executing", ", ".join(c["name"] for c in calls))
            results: dict[str, dict[str, Any]] = {}
            async for event in run_tool_calls(
                self.tools,
                self.store,
                self.gate,
                session_id,
                mid,
                calls,
                results,
                make_context,
                caller,
                summarize=self.summarize_outputs,
                hooks=self.hooks,
            ):
                yield event
            # Tool results go back in call order, as endpoints expect after the assistant turn.
            ctx.append(results[c["id"]] for c in calls if c["id"] in results)

        note = (
            f"Stopped after {self.max_steps} model steps without a final answer. "
            "Ask me to continue, or raise the limit (`%think_config max_steps=40` or "
            "c.ThinkConfig.max_steps)."
        )
        yield ErrorEvent(note, code="step_limit")
        yield StatusEvent("idle")

    async def _unfinished_step(
        self, session_id: str, rows: list[dict[str, Any]], user: dict[str, Any]
    ) -> tuple[str, list[dict[str, Any]]] | None:
        """The last step of this request if it has calls with an approval but no result."""
        if self.gate is None:
            return None
        start = _position(rows, user)
        if start is None:
            return None
        later = rows[start + 1 :]
        steps = [r for r in later if r.get("role") == "assistant" and r.get("tool_calls")]
        if not steps or steps[-1].get("status") != "complete":
            return None
        step = steps[-1]
        answered = {r.get("tool_call_id") for r in later if r.get("role") == "tool"}
        calls = []
        for call in step["tool_calls"]:
            if not isinstance(call, dict) or call.get("id") in answered:
                continue
            approval = await self.store.approval_for_call(session_id, str(call.get("id")))
            if approval is not None and approval.get("executed_at") is None:
                calls.append(call)
        return (step["id"], calls) if calls else None

    async def _stream_with_retries(
        self,
        ctx: ModelContext,
        specs: list[dict[str, Any]],
        mid: str,
        step: _Step,
        caller: ModelCaller,
        role: str,
        session_id: str,
        parent_id: str,
    ) -> AsyncIterator[Event]:
        attempt = 0
        compacted = False
        while True:
            try:
                async for event in self._stream_once(ctx, specs, mid, step, caller, role):
                    yield event
                return
            except ModelError as e:
                if step.stored is not None:
                    await step.stored  # the row exists before anything about it changes
                if e.code == "context_length" and not compacted:
                    # One compaction and one retry; the endpoint may have told us
                    # its real window, which later requests then respect.
                    compacted = True
                    ratio = caller.calibration.ratio(caller.model(role))
                    caller.learn_window(role, e.limit, int(ctx.tokens() * ratio))
                    # The learned window may be small enough that the tool specs must shrink.
                    specs[:] = fit_specs(specs, caller.window(role), optional=self.tools.optional)
                    ctx.tools_tokens = estimate_tools(specs)
                    yield StatusEvent("thinking", "the context was too long: compacting")
                    async for event in compact_if_needed(
                        ctx,
                        caller,
                        self.store,
                        session_id,
                        parent_id,
                        role=role,
                        compact_at=self.compact_at,
                        keep=self.compact_keep,
                        force=True,
                    ):
                        yield event
                    ctx.fit(budget(ctx, caller, role, self.compact_at))
                    step.text, step.reasoning, step.calls, step.usage = "", "", {}, None
                    continue
                if not e.transient or attempt >= len(self.retry_delays):
                    raise
                # The endpoint's Retry-After, when it said one, over our own backoff.
                delay = max(self.retry_delays[attempt], e.retry_after or 0.0)
                attempt += 1
                if step.text:
                    # TextDone carries the authoritative text so far: reset the cut attempt.
                    yield TextDone(mid, "")
                step.text, step.reasoning, step.calls, step.usage = "", "", {}, None
                yield StatusEvent(
                    "waiting",
                    f"{e}; retry {attempt}/{len(self.retry_delays)} in {delay:g} s",
                )
                await self.store.update_message(mid, attempt=attempt, heartbeat_at=time.time())
                await self.sleep(delay)
                yield StatusEvent("thinking", f"retry {attempt}")

    async def _stream_once(
        self,
        ctx: ModelContext,
        specs: list[dict[str, Any]],
        mid: str,
        step: _Step,
        caller: ModelCaller,
        role: str,
    ) -> AsyncIterator[Event]:
        last_beat = time.monotonic()
        step.estimated_in = ctx.tokens()
        messages = ctx.messages
        if step.context:
            system = {**messages[0], "content": f"{messages[0]['content']}\n\n{step.context}"}
            messages = [system, *messages[1:]]
        chunk: Chunk
        async for chunk in self.model.stream(messages, specs, caller.model(role), purpose="step"):
            if step.stored is not None and not step.stored.done():
                await step.stored  # the request is out: its row first (see ``run``)
            kind = chunk.kind
            if kind == "text":
                step.text += chunk.text
                yield TextDelta(mid, chunk.text)
            elif kind == "reasoning":
                step.reasoning += chunk.text
                yield Reasoning(mid, chunk.text)
            elif kind == "tool_call":
                call = step.calls.setdefault(chunk.index, {"id": "", "name": "", "arguments": ""})
                if chunk.call_id:
                    call["id"] = chunk.call_id
                if chunk.name:
                    call["name"] += chunk.name
                call["arguments"] += chunk.arguments
            elif kind == "finish":
                step.finish = chunk.text
            elif kind == "usage":
                step.usage = chunk
            now = time.monotonic()
            if now - last_beat >= HEARTBEAT_SECONDS:
                last_beat = now
                await self.store.update_message(
                    mid, content=step.text, checkpoint=step.text, heartbeat_at=time.time()
                )


def _position(rows: list[dict[str, Any]], row: dict[str, Any]) -> int | None:
    """Where ``row`` is in ``rows`` (ordered by seq), looking from the end: a request is the
    last row or close to it, and a long history is not scanned for it."""
    seq = row.get("seq")
    for i in range(len(rows) - 1, -1, -1):
        if rows[i]["id"] == row["id"]:
            return i
        if seq is not None and (rows[i].get("seq") or 0) < seq:
            return None  # past where it would be
    return None


def _call_record(index: int, call: dict[str, str]) -> dict[str, Any]:
    return {
        "id": call["id"] or f"call_{new_id()}_{index}",
        "name": call["name"],
        "arguments": call["arguments"],
    }
