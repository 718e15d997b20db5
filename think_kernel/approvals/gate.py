"""The gate a tool call passes before it runs: ask, wait durably, learn the decision.

    gate = ApprovalGate(store, policy=approvals.policy, known=approvals.known_tools, timeout=600)
    decision = await gate.check(session_id, message_id, call_id, "bash", '{"command": ...}',
                                workspace, emit)
    # None: no approval needed; else decision.approved, decision.input, decision.reason

The approval is a row in ``approvals`` before anyone hears of it, so the wait survives the
process: a resumed run finds the row of its call (pending: it waits again; decided while
nobody waited: it acts on the stored decision). While waiting nothing but the store is held:
the model's stream ended with the step. Decisions arrive in-process (:meth:`resolve`, the
cell's buttons), as a nudge from the server link after the server stored one (:meth:`wake`),
or are found by re-reading the row every ``poll`` seconds (a decision made while this
process had no link). Past ``expires_at`` the call counts as rejected; a cancelled run
rejects its pending approval.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..agent.events import (
    ApprovalRequested,
    ApprovalResolved,
    Event,
    QuestionAnswered,
    QuestionAsked,
    StatusEvent,
)
from ..questions.spec import ASK_USER, QuestionError, answer_text, closing_record, question_spec
from ..waits import wait_for
from .describe import describe_call
from .policy import Policy
from .record import decide, decision_record

if TYPE_CHECKING:
    from ..store import Store

Emit = Callable[[Event], Any]


class ApprovalSuperseded(Exception):
    """Another process already ran this approved call (this attempt was superseded)."""


@dataclass(frozen=True)
class Decision:
    """What a person (or a timeout, or a cancel) decided about one call."""

    approval_id: str
    approved: bool
    input: dict[str, Any] | None = None
    reason: str = ""
    source: str = ""
    user: str = ""
    #: A question's outcome: what the model reads as the result of ``ask_user``.
    answer: str | None = None

    def rejection_text(self, tool: str) -> str:
        """What the model sees instead of the tool's output."""
        why = self.reason or "no reason given"
        if self.source == "timeout":
            return f"The user did not approve this {tool} call in time; it was not run ({why})."
        return f"The user rejected this {tool} call; it was not run. Their reason: {why}"


class ApprovalGate:
    """Asks for approvals of one runtime's tool calls and waits for decisions."""

    def __init__(
        self,
        store: Store,
        *,
        policy: Callable[[], Awaitable[Policy]],
        known: Callable[[], Iterable[str]],
        timeout: Callable[[], float],
        on_always: Callable[[str], Awaitable[Any]],
        poll: float = 1.0,
        destructive: Callable[[], Iterable[str]] = tuple,
        question_timeout: Callable[[], float] = lambda: 600.0,
    ) -> None:
        self.store = store
        self.policy = policy
        self.known = known
        self.destructive = destructive
        self.timeout = timeout
        self.question_timeout = question_timeout
        self.on_always = on_always
        self.poll = poll
        self._wakers: dict[str, asyncio.Event] = {}
        self.task_id: str | None = None

    def for_task(
        self, task_id: str, policy: Callable[[], Awaitable[Policy]] | None = None
    ) -> ApprovalGate:
        """This gate (same policy unless ``policy`` replaces it, same waiting calls, same
        decisions) for the calls of a subagent working on a task: its approvals carry the
        task's id."""
        tagged = copy.copy(self)  # shares _wakers: a decision wakes the subagent's call too
        tagged.task_id = task_id
        if policy is not None:
            tagged.policy = policy
        return tagged

    # -- deciding from this process ---------------------------------------------------------

    def pending(self) -> list[str]:
        """Ids of approvals a run of this process is waiting on."""
        return list(self._wakers)

    def wake(self, approval_id: str) -> None:
        """A decision was stored elsewhere (the server link says so): read it now."""
        waker = self._wakers.get(str(approval_id))
        if waker is not None:
            waker.set()

    async def resolve(self, approval_id: str, record: dict[str, Any]) -> bool:
        """Decide here (the cell's buttons); False if another surface decided first."""
        row = await self.store.get_approval(approval_id)
        if row is None:
            return False
        won = await decide(self.store, row, record)
        self.wake(approval_id)
        return won

    # -- the gate ----------------------------------------------------------------------------

    async def check(
        self,
        session_id: str,
        message_id: str,
        call_id: str,
        tool: str,
        raw_args: Any,
        workspace: Any,
        emit: Emit,
        *,
        task_id: str | None = None,
    ) -> Decision | None:
        """None when the call may run now; otherwise the decision, after waiting for it.
        ``task_id``: the call is a subagent's, working on that task (the row says so)."""
        task_id = task_id or self.task_id
        row = await self.store.approval_for_call(session_id, call_id)
        if row is None:
            args = _parsed(raw_args)
            if args is None:
                return None  # invalid arguments: the tool refuses them, nothing runs
            if tool == ASK_USER:
                return await self._ask(session_id, message_id, call_id, args, emit, task_id=task_id)
            # In review mode the workspace carries the session's active proposal: edits
            # only propose.
            proposal = getattr(workspace, "proposal", None)
            reason = (await self.policy()).check(
                tool,
                args,
                known=self.known(),
                destructive=self.destructive(),
                proposing=proposal is not None and bool(await proposal.is_active()),
            )
            if reason is None:
                return None
            summary, diff = await describe_call(tool, args, workspace)
            row = await self.store.create_approval(
                session_id,
                message_id,
                call_id,
                tool,
                args,
                summary=summary,
                diff=diff,
                expires_at=time.time() + max(0.0, float(self.timeout())),
                task_id=task_id,
            )
            row["reason"] = reason
        if row.get("kind") == "question":
            return await self._await_answer(row, emit)
        if row["status"] == "pending":
            await _send(emit, _requested(row))
            await _send(emit, StatusEvent("waiting", f"approval needed: {row.get('summary')}"))
            row = await self._wait(row)
            await _send(emit, StatusEvent("executing", tool))
        decision = _decision(row)
        record = row.get("decision") or {}
        await _send(
            emit,
            ApprovalResolved(
                row["id"],
                "approve" if decision.approved else "reject",
                input=decision.input,
                reason=decision.reason,
                always=bool(record.get("always")),
                source=decision.source,
                user=decision.user,
                tool=tool,
            ),
        )
        if decision.approved:
            if record.get("always"):
                await self.on_always(tool)
            if not await self.store.claim_approval(row["id"]):
                raise ApprovalSuperseded(f"approval {row['id']} was already carried out")
        return decision

    # -- questions (``ask_user``): the same row, wait and first-answer-wins --------------------

    async def _ask(
        self,
        session_id: str,
        message_id: str,
        call_id: str,
        args: dict[str, Any],
        emit: Emit,
        *,
        task_id: str | None,
    ) -> Decision | None:
        try:
            spec = question_spec(args)
        except QuestionError:
            return None  # the tool refuses it with the reason; nobody is asked
        row = await self.store.create_approval(
            session_id,
            message_id,
            call_id,
            ASK_USER,
            spec,
            summary=spec["question"][:200],
            expires_at=time.time() + max(0.0, float(self.question_timeout())),
            task_id=task_id,
            kind="question",
        )
        return await self._await_answer(row, emit)

    async def _await_answer(self, row: dict[str, Any], emit: Emit) -> Decision:
        if row["status"] == "pending":
            await _send(emit, _asked(row))
            await _send(emit, StatusEvent("waiting", f"question: {row.get('summary')}"))
            row = await self._wait(row)
            await _send(emit, StatusEvent("executing", ASK_USER))
        record = row.get("decision") or {}
        if row["status"] != "answered":  # closed by a cancel through the approval path
            record = closing_record("", source=str(record.get("source") or "cancel"))
        await _send(
            emit,
            QuestionAnswered(
                row["id"],
                answer=str(record.get("answer") or ""),
                source=str(record.get("source") or ""),
                user=str(record.get("user") or ""),
            ),
        )
        if not await self.store.claim_approval(row["id"]):
            raise ApprovalSuperseded(f"question {row['id']} was already answered to a run")
        return Decision(
            row["id"],
            approved=True,
            source=str(record.get("source") or ""),
            user=str(record.get("user") or ""),
            answer=answer_text(record, _minutes(self.question_timeout())),
        )

    async def _wait(self, row: dict[str, Any]) -> dict[str, Any]:
        aid = row["id"]
        waker = self._wakers.setdefault(aid, asyncio.Event())
        try:
            while True:
                current = await self.store.get_approval(aid)
                if current is None:  # the session was deleted under us
                    raise asyncio.CancelledError
                if current["status"] != "pending":
                    return current
                left = float(current.get("expires_at") or 0) - time.time()
                if current.get("expires_at") is not None and left <= 0:
                    record = _expired(current, self.timeout())
                    await decide(self.store, current, record)
                    continue
                waker.clear()
                wait = self.poll if current.get("expires_at") is None else min(self.poll, left)
                with contextlib.suppress(TimeoutError):
                    await wait_for(waker.wait(), max(0.01, wait))
        except asyncio.CancelledError:
            # A cancelled run rejects what it was waiting for (the record says so).
            record = _closed(row)
            with contextlib.suppress(Exception):
                await asyncio.shield(decide(self.store, row, record))
            raise
        finally:
            self._wakers.pop(aid, None)


def _expired(row: dict[str, Any], timeout: float) -> dict[str, Any]:
    """The record of a wait that ran out: an approval rejected, a question unanswered."""
    if row.get("kind") == "question":
        return closing_record("", source="timeout")
    reason = f"no decision within {_minutes(timeout)}"
    return decision_record("reject", reason=reason, source="timeout", user="")


def _closed(row: dict[str, Any]) -> dict[str, Any]:
    """The record of a wait its run gave up (cancelled)."""
    if row.get("kind") == "question":
        return closing_record("", source="cancel")
    return decision_record("reject", reason="the run was cancelled", source="cancel")


def _asked(row: dict[str, Any]) -> QuestionAsked:
    spec = _object(row.get("input"))
    return QuestionAsked(
        row["id"],
        str(spec.get("question") or ""),
        options=list(spec.get("options") or []),
        allow_text=bool(spec.get("allow_text")),
        call_id=row.get("call_id") or "",
        message_id=row.get("message_id") or "",
        expires_at=row.get("expires_at"),
        task_id=row.get("task_id") or "",
    )


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:g} min" if seconds >= 60 else f"{seconds:g} s"


def _parsed(raw: Any) -> dict[str, Any] | None:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _requested(row: dict[str, Any]) -> ApprovalRequested:
    return ApprovalRequested(
        row["id"],
        row["tool"],
        row.get("input"),
        summary=row.get("summary") or "",
        diff=row.get("diff") or "",
        reason=row.get("reason") or "",
        call_id=row.get("call_id") or "",
        message_id=row.get("message_id") or "",
        expires_at=row.get("expires_at"),
        task_id=row.get("task_id") or "",
    )


def _decision(row: dict[str, Any]) -> Decision:
    record = row.get("decision") or {}
    edited = record.get("input")
    return Decision(
        row["id"],
        approved=row["status"] == "approved",
        input=edited if isinstance(edited, dict) and edited else None,
        reason=str(record.get("reason") or ""),
        source=str(record.get("source") or ""),
        user=str(record.get("user") or ""),
    )


async def _send(emit: Emit, event: Event) -> None:
    res = emit(event)
    if asyncio.iscoroutine(res):
        await res


def _object(value: Any) -> dict[str, Any]:
    """A stored JSON object (anything else reads as empty)."""
    return value if isinstance(value, dict) else {}
