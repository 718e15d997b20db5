"""Lifecycle hooks that extensions register: before a model call, before and after a tool
call, at the end of a run (:mod:`.spec`); run in order, timed, bounded, and skipped when they
fail (:mod:`.runner`). An extension lists them in its ``hooks`` attribute
(:class:`~think_kernel.layers.AgentExtension`).
"""

from .config import HooksConfig
from .runner import HookProblem, HookRunner, ToolDecision
from .spec import Hook, ModelCall, ModelChange, ResultChange, RunEnd, ToolUse, ToolVerdict

__all__ = [
    "Hook",
    "HookProblem",
    "HookRunner",
    "HooksConfig",
    "ModelCall",
    "ModelChange",
    "ResultChange",
    "RunEnd",
    "ToolDecision",
    "ToolUse",
    "ToolVerdict",
]
