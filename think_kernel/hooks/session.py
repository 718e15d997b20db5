"""A session's hooks, wired: its extensions' hooks, its settings, its action log.

    runtime.hooks = open_hooks(layers.hooks(), config, lambda: runtime.store)

A hook skipped for failing or hanging is written to the session's action log (tool
``hook:<name>``, not successful, the reason as its error), where the sidebar's log shows it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from traitlets.config import Config

from .config import HooksConfig
from .runner import HookProblem, HookRunner

if TYPE_CHECKING:
    from ..agent.stores import RunLog


def open_hooks(
    hooks: Sequence[object],
    config: Config | None,
    store: Callable[[], RunLog | None],
    workspace: str = "",
) -> HookRunner:
    """The hooks of one session (``store``: its store once open)."""

    async def report(problem: HookProblem) -> None:
        log = store()
        if log is None or not problem.session_id:
            return
        await log.log_action(
            session_id=problem.session_id,
            tool=f"hook:{problem.hook}",
            action=f"hook skipped at {problem.stage}",
            input_summary=problem.stage,
            output_summary=problem.reason,
            duration_ms=round(problem.duration_ms, 3),
            success=False,
            error=problem.reason,
        )

    timeout = HooksConfig(config=config).hook_timeout
    return HookRunner(hooks, timeout=timeout, on_problem=report, workspace=workspace)
