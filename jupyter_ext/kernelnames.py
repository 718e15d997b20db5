"""The variable names of a notebook's kernel for completion prompts, when they are cheap.

    names = KernelNames(inspector, min_interval=10.0)
    await names.of("analysis.ipynb")   # what the last look found ([] at first)
    await names.aclose()

A completion never waits on a kernel: ``of`` answers from what the last look found, and starts
a new look in the background when the kernel has done something since (its ``last_activity``
moved) and is idle, at most once per ``min_interval`` seconds. A look is the inspector's silent
probe (:mod:`.variables`), which leaves the namespace, history and outputs as they were; a busy
kernel, a think kernel or another language is not looked at.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from .variables import VariableInspector

#: Names kept per kernel (the completion route bounds them again).
MAX_NAMES = 100
#: Seconds between two looks at one kernel for the completion route, at least.
COMPLETION_NAMES_INTERVAL = 10.0


@dataclass
class _Seen:
    names: list[str] = field(default_factory=list)
    activity: Any = None  # the kernel's last_activity when the last look ended
    looked_at: float = float("-inf")  # time.monotonic() of the last look's start


class KernelNames:
    """Cached variable names per kernel, refreshed off the request's path."""

    def __init__(self, inspector: VariableInspector, *, min_interval: float) -> None:
        self.inspector = inspector
        self.min_interval = min_interval
        self._seen: dict[str, _Seen] = {}
        self._looks: dict[str, asyncio.Task[None]] = {}

    async def of(self, path: str) -> list[str]:
        """The names the last look found in the kernel of notebook ``path`` (maybe [])."""
        if not path.endswith(".ipynb"):
            return []
        kernel_id = await self.inspector.kernel_of(path)
        if kernel_id is None:
            return []
        try:
            kernel = self.inspector.serverapp.kernel_manager.get_kernel(kernel_id)
        except KeyError:
            return []
        seen = self._seen.setdefault(kernel_id, _Seen())
        stale = getattr(kernel, "last_activity", None) != seen.activity
        due = time.monotonic() - seen.looked_at >= self.min_interval
        idle = getattr(kernel, "execution_state", "") == "idle"
        if stale and due and idle and kernel_id not in self._looks:
            seen.looked_at = time.monotonic()
            task = asyncio.ensure_future(self._look(path, kernel, seen))
            self._looks[kernel_id] = task
            task.add_done_callback(lambda _t: self._looks.pop(kernel_id, None))
        return list(seen.names)

    async def _look(self, path: str, kernel: Any, seen: _Seen) -> None:
        try:
            answer = await self.inspector.inspect(path)
        except Exception:  # a kernel that went away mid-look: the next completion looks again
            return
        if answer.get("status") == "ok":
            variables = answer.get("variables") or []
            names = [str(v.get("name")) for v in variables if isinstance(v, dict)]
            seen.names = names[:MAX_NAMES]
        # After the look: its own messages moved last_activity, which is not news.
        seen.activity = getattr(kernel, "last_activity", None)

    async def aclose(self) -> None:
        """Cancel the looks in flight."""
        tasks = list(self._looks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
