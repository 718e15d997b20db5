"""Running a session's hooks: in order, each timed and bounded, a failing one skipped.

    hooks = HookRunner([NoRm(), DataDictionary()], timeout=5.0, on_problem=report)
    change = await hooks.before_model(ModelCall(sid, 1, "primary", "gpt-4o", "plot it"))
    decision = await hooks.before_tool(ToolUse(sid, "call_1", "bash", {"command": "ls"}))
    output = await hooks.after_tool(use, output)
    await hooks.run_end(RunEnd(sid, "complete", "Done."))

A hook that raises, answers something that is not one of its answers, or runs past its time
is skipped for that call: the run goes on as if it had answered None, a warning is logged and
``on_problem`` is told (the runtime writes it to the action log). A hook's time counts against
the step it runs in, so the limit is per call, not per run. Each call's duration is logged at
debug level and added to :attr:`HookRunner.timings`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..agent.calls import ROLES
from ..tools.base import ToolOutput
from ..waits import wait_for
from .spec import (
    Hook,
    ModelCall,
    ModelChange,
    ResultChange,
    RunEnd,
    ToolUse,
    ToolVerdict,
    hook_name,
)

log = logging.getLogger(__name__)

STAGES = ("before_model", "before_tool", "after_tool", "run_end")
#: What each stage may answer (besides None).
ANSWERS: dict[str, type | None] = {
    "before_model": ModelChange,
    "before_tool": ToolVerdict,
    "after_tool": ResultChange,
    "run_end": None,
}


@dataclass(frozen=True)
class HookProblem:
    """A hook call that was skipped, and why."""

    hook: str
    stage: str
    session_id: str
    reason: str
    duration_ms: float


@dataclass(frozen=True)
class ToolDecision:
    """What the hooks decided about a tool call: blocked (by whom, why), or its arguments."""

    arguments: Any
    blocked_by: str = ""
    reason: str = ""
    rewritten: bool = False

    def refusal(self, tool: str) -> str:
        """The text the model reads for a blocked call."""
        return f"The {tool} call was blocked by the {self.blocked_by!r} hook: {self.reason}"


Report = Callable[[HookProblem], Awaitable[None]]


def _defines(hook: object, stage: str) -> bool:
    """Whether ``hook`` has its own ``stage`` method (the base class's are no-ops)."""
    method = getattr(type(hook), stage, None)
    if method is None or not callable(method):
        return False
    return not (isinstance(hook, Hook) and method is getattr(Hook, stage))


class HookRunner:
    """The hooks of one session, ready to call (see the module doc)."""

    def __init__(
        self,
        hooks: Sequence[object] = (),
        *,
        timeout: float = 5.0,
        on_problem: Report | None = None,
        workspace: str = "",
    ) -> None:
        self.hooks = list(hooks)
        #: The session's workspace folder, given to hooks with each call.
        self.workspace = workspace
        self.timeout = timeout
        self.on_problem = on_problem
        # Only the hooks that define a stage are called at it: a hook costs nothing where it
        # has nothing to say.
        self._stages: dict[str, list[tuple[str, Any, float]]] = {
            stage: [
                (hook_name(h), getattr(h, stage), _limit(h, timeout))
                for h in self.hooks
                if _defines(h, stage)
            ]
            for stage in STAGES
        }
        #: (hook, stage) -> [calls, total milliseconds, slowest milliseconds].
        self.timings: dict[tuple[str, str], list[float]] = {}

    def status(self) -> str:
        """The hooks, in order, for ``%think_status`` (Markdown)."""
        return ", ".join(f"`{hook_name(h)}`" for h in self.hooks) or "none"

    def has(self, stage: str) -> bool:
        """Whether any hook acts at ``stage``."""
        return bool(self._stages[stage])

    async def _call(self, stage: str, session_id: str, *args: Any) -> list[tuple[str, Any]]:
        """Each hook's answer at ``stage``, in order (skipped ones left out)."""
        out = []
        for name, method, limit in self._stages[stage]:
            ok, answer = await self._one(stage, session_id, name, method, limit, args)
            if ok:
                out.append((name, answer))
        return out

    async def _one(
        self,
        stage: str,
        session_id: str,
        name: str,
        method: Any,
        limit: float,
        args: tuple[Any, ...],
    ) -> tuple[bool, Any]:
        start = time.perf_counter()
        reason = ""
        answer: Any = None
        try:
            answer = await wait_for(method(*args), limit)
        except asyncio.CancelledError:
            raise  # the run was stopped: not the hook's failure
        except TimeoutError:
            if time.perf_counter() - start >= limit:
                reason = f"took longer than its limit of {limit:g} s"
            else:
                reason = "raised TimeoutError"
        except Exception as e:  # a hook's bug must not end the run
            reason = f"raised {type(e).__name__}: {e}"
        expected = ANSWERS[stage]
        if (
            not reason
            and answer is not None
            and (expected is None or not isinstance(answer, expected))
        ):
            want = f"None or a {expected.__name__}" if expected else "None"
            reason = f"answered {type(answer).__name__}, not {want}"
        ms = (time.perf_counter() - start) * 1000
        stats = self.timings.setdefault((name, stage), [0, 0.0, 0.0])
        stats[0] += 1
        stats[1] += ms
        stats[2] = max(stats[2], ms)
        if not reason:
            if log.isEnabledFor(logging.DEBUG):
                log.debug("hook %s %s: %.3f ms", name, stage, ms)
            return True, answer
        log.warning("hook %s skipped at %s: %s", name, stage, reason)
        if self.on_problem is not None:
            try:
                await self.on_problem(HookProblem(name, stage, session_id, reason, ms))
            except Exception:
                log.exception("could not report the problem of hook %s", name)
        return False, None

    async def before_model(self, call: ModelCall) -> ModelChange:
        """The hooks' changes to one model call, merged: contexts in order, the last role."""
        if not self._stages["before_model"]:
            return ModelChange()
        contexts, role = [], ""
        for name, change in await self._call("before_model", call.session_id, call):
            if change is None:
                continue
            if change.context.strip():
                contexts.append(change.context.strip())
            if change.role:
                if change.role in ROLES:
                    role = change.role
                else:
                    log.warning("hook %s named an unknown role %r; ignored", name, change.role)
        return ModelChange("\n\n".join(contexts), role)

    async def before_tool(self, use: ToolUse) -> ToolDecision:
        """The hooks' decision on a tool call: the first block wins; rewrites chain."""
        decision = ToolDecision(use.arguments)
        for name, method, limit in self._stages["before_tool"]:
            ok, verdict = await self._one(
                "before_tool", use.session_id, name, method, limit, (use,)
            )
            if not ok or verdict is None or verdict.action == "allow":
                continue
            if verdict.action == "block":
                reason = verdict.reason or "no reason given"
                return ToolDecision(use.arguments, name, reason, decision.rewritten)
            if verdict.action == "rewrite" and isinstance(verdict.arguments, dict):
                use = replace(use, arguments=verdict.arguments)
                decision = ToolDecision(verdict.arguments, rewritten=True)
            else:
                log.warning("hook %s answered an unknown verdict %r", name, verdict.action)
        return decision

    async def after_tool(self, use: ToolUse, output: ToolOutput) -> ToolOutput:
        """The result as the hooks leave it: replaced, then with their notes appended."""
        if not self._stages["after_tool"]:
            return output
        for _, change in await self._call("after_tool", use.session_id, use, output):
            if change is None:
                continue
            if change.replace is not None:
                output = replace(output, text=change.replace, full=None)
            note = change.note.strip()
            if note:
                whole = f"{output.full}\n\n{note}" if output.full is not None else None
                output = replace(output, text=f"{output.text}\n\n{note}", full=whole)
        return output

    async def run_end(self, run: RunEnd) -> None:
        """Tell every hook that a run ended."""
        if self._stages["run_end"]:
            await self._call("run_end", run.session_id, run)


def _limit(hook: object, default: float) -> float:
    own = getattr(hook, "timeout", None)
    return float(own) if isinstance(own, int | float) and own > 0 else default
