"""Review mode around a session's runs: before each, the view is brought in step with the
proposal (switched on or off, rebuilt, written to); after it, what the run changed goes to
the proposal. Part of :class:`~think_kernel.sandbox.sandbox.Sandbox` (a base class)::

    sandbox.review_source = source      # the session's proposal (ReviewSource), or None
    res = await sandbox.run_bash("pytest -q")   # in review mode: sees workspace + proposal
    sandbox.review_mode                 # "overlay", "copy" or "" (off)
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from . import envpaths, launch
from .errors import SandboxError
from .limits import LimitRow
from .review import Plan, ReviewSource, ReviewView, apply_code, parse_failures
from .tiers import Tier, overlay_bwrap

if TYPE_CHECKING:
    from .config import SandboxConfig
    from .launcher import Launcher
    from .result import ExecResult

log = logging.getLogger(__name__)

APPLY_TIMEOUT = 60.0  # seconds the run that writes the proposal into the view may take
_DESCRIBE = {
    "overlay": "runs see workspace + proposal through an overlay mount; their writes go to "
    "the proposal",
    "copy": "runs see a copy of the workspace with the proposal applied; their writes go to "
    "the proposal",
}


def review_folder(session_id: str) -> Path:
    """Where a session's overlay keeps its upper and work folders: the store's private
    folder, hidden from every sandbox."""
    return launch.store_root() / "review" / session_id.replace("/", "_")


class ReviewRuns:
    """Review mode around runs (a base class of ``Sandbox``)."""

    workspace: Path
    scratch: Path
    session_id: str
    config: SandboxConfig
    tier: Tier
    _launcher: Launcher | None
    _launcher_lock: asyncio.Lock
    _warms: dict
    _primed: list

    if TYPE_CHECKING:

        def _kill_session(self) -> None: ...
        async def _run_child(self, kind: str, payload: dict, limit: float | None,
                             on_output: None, worker: str = "") -> ExecResult: ...  # fmt: skip

    def _init_review(self) -> None:
        #: The session's proposal; None: the session has no review mode.
        self.review_source: ReviewSource | None = None
        self._view: ReviewView | None = None
        self._review_lock = asyncio.Lock()

    @property
    def review_mode(self) -> str:
        """How runs see the proposal now: ``overlay``, ``copy``, or "" (review mode off)."""
        return self._view.mode if self._view is not None else ""

    def review_row(self) -> list[LimitRow]:
        """The ``%think_status`` line of review mode, when it is on."""
        view = self._view
        return [LimitRow("review", view.mode, _DESCRIBE[view.mode])] if view else []

    async def _reviewed(
        self, run: Callable[[], Awaitable[ExecResult]], collect: bool = True
    ) -> ExecResult:
        """``run()`` in the view review mode asks for; its changes collected after."""
        before = await self._review_before()
        try:
            res = await run()
        finally:
            after = await asyncio.shield(self._review_after()) if collect else []
        res.warnings[:0] = before
        res.warnings += after
        return res

    async def _review_before(self) -> list[str]:
        source = self.review_source
        if source is None:
            return []
        async with self._review_lock:
            try:
                active = await source.active()
                notes = []
                if active != (self._view is not None):
                    notes += await self._switch(active)
                view = self._view
                if view is None:
                    return notes
                plan = await asyncio.to_thread(view.plan, await source.files())
            except (OSError, RuntimeError, ValueError) as e:
                raise SandboxError(f"review mode: cannot prepare the run's view: {e}") from e
            if plan.rebuild:
                await self._restart_view(view)
                notes.append(f"the sandbox's view was rebuilt ({plan.why}); the warm Python "
                             "worker's variables are gone")  # fmt: skip
            if plan.ops:
                notes += await self._apply(view, plan)
            return notes

    async def _switch(self, active: bool) -> list[str]:
        if not active:
            old, self._view = self._view, None
            await self._restart_view(None)
            if old is not None:
                await asyncio.to_thread(old.remove)
            return ["review mode is off: runs see the live workspace again; the warm Python "
                    "worker was restarted"]  # fmt: skip
        mode, bwrap, folder = "copy", None, self.scratch / "workspace"
        if self.tier == Tier.BUBBLEWRAP:
            bwrap = await asyncio.to_thread(
                overlay_bwrap, self.config.bwrap_path, review_folder("").parent
            )
            if bwrap is not None:
                mode, folder = "overlay", review_folder(self.session_id)
        view = ReviewView(self.workspace, mode, folder, self._skip(), bwrap)
        await self._restart_view(view)
        return [f"review mode is on: {_DESCRIBE[mode]} ({mode}); the warm Python worker was "
                "restarted"]  # fmt: skip

    def _skip(self) -> frozenset[str]:
        ws = str(self.workspace).rstrip("/") + "/"
        inside = [p for p in [*launch.private_paths(self.config), *envpaths.core_paths()]
                  if p.startswith(ws)]  # fmt: skip
        return frozenset(os.path.relpath(p, ws) for p in inside)

    async def _restart_view(self, view: ReviewView | None) -> None:
        """Stop the launcher (killing the session's processes), build ``view`` while nothing
        runs, and let the next run start a launcher that shows it."""
        async with self._launcher_lock:
            if self._launcher is not None:
                await self._launcher.stop(graceful=False, kill_session=self._kill_session)
                self._launcher = None
            self._warms.clear()
            self._primed.clear()
            if view is not None:
                await asyncio.to_thread(view.prepare)
            self._view = view

    async def _apply(self, view: ReviewView, plan: Plan) -> list[str]:
        """Write the plan's files into the view by a sandboxed run (the session's uid, the
        view's own mount)."""
        res = await self._run_child("python", {"code": apply_code(plan.ops)}, APPLY_TIMEOUT, None)
        try:
            failed = parse_failures(res.stdout)
        except ValueError:
            why = res.error or res.stderr.strip()[-500:] or "no output"
            failed = {p: why for p, _ in plan.ops}
        view.applied_ok(plan, set(failed))
        return [f"review mode: {p} could not be put in the run's view: {why}"
                for p, why in sorted(failed.items())]  # fmt: skip

    async def _review_after(self) -> list[str]:
        source, view = self.review_source, self._view
        if source is None or view is None:
            return []
        async with self._review_lock:
            if self._view is not view:
                return []
            edits, notes = await asyncio.to_thread(view.collect)
            done: dict[str, list[str]] = {"created": [], "modified": [], "deleted": []}
            for e in edits:
                try:
                    if e.data is None:
                        await source.delete(e.path, e.base)
                        done["deleted"].append(e.path)
                    else:
                        await source.write(e.path, e.data, e.base)
                        done["created" if e.base is None else "modified"].append(e.path)
                except (OSError, RuntimeError, ValueError) as err:
                    log.warning("could not propose %s: %s", e.path, err)
                    notes.append(f"not proposed: {e.path} ({err})")
        said = "; ".join(f"{k} {', '.join(v[:20])}" for k, v in done.items() if v)
        if said:
            notes.append(f"[proposal: {said}]")
        return notes

    async def collect_review(self) -> list[str]:
        """Take what the session's processes wrote into the view since the last run (a
        background job's files) into the proposal; notes for the person."""
        return await self._review_after()

    async def _close_review(self) -> None:
        view, self._view = self._view, None
        if view is not None:
            await asyncio.to_thread(view.remove)
