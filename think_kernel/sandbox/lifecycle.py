"""A session's sandbox over its life: prepared ahead, started at first need, closed.

box = SessionSandbox(root, config, loopback=handler, before_ready=files.start)
box.prepare("s_1")                      # a spare kernel: uid, cgroup, ACLs; no process
box.prewarm("s_1")                      # start it in the background (a cell, a kernel's start)
box.preload_soon()                      # a turn that used it ended: the heavy imports, now
sandbox = await box.ensure("s_1")       # first use: ToolError says why it cannot run
await box.close()

Preparing costs the session's share of the machine (a uid lease, a cgroup, the workspace ACL
walk) and no memory: a spare kernel, or a chat that never runs code, holds no sandbox process.
With ``SandboxConfig.start_with_kernel`` a prepared sandbox starts, and preloads, at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from ..tools.base import ToolError
from .asuser import Identity, sandbox_identity
from .config import SandboxConfig
from .loopback import LoopbackHandler
from .review import ReviewSource
from .sandbox import Sandbox, SandboxError


class SessionSandbox:
    """Owns the session's :class:`Sandbox` and the tasks that prepare and start it."""

    def __init__(
        self,
        root: Path,
        config: SandboxConfig,
        *,
        loopback: LoopbackHandler,
        before_ready: Callable[[], Awaitable[None]] | None = None,
        review: ReviewSource | None = None,
    ) -> None:
        self.root = root
        #: The session's proposal: in review mode runs see it and write to it.
        self.review = review
        self.config = config
        self.loopback = loopback
        # Set up while the zygote starts (the workspace watch takes a moment on a big tree).
        self.before_ready = before_ready
        self.sandbox: Sandbox | None = None
        self.requested = False
        self._prepared: asyncio.Task[Sandbox] | None = None
        self._task: asyncio.Task[Sandbox] | None = None
        self._preload: asyncio.Task[None] | None = None

    def prepare(self, session_id: str) -> None:
        """Take the session's uid, cgroup and workspace access in the background, and start
        no process (unless ``start_with_kernel``: then start and preload it too)."""
        self._prepare(session_id)
        if self.config.start_with_kernel:
            self.prewarm(session_id)
            self.preload_soon()

    def _prepare(self, session_id: str) -> asyncio.Task[Sandbox]:
        self.requested = True
        if self._prepared is None:
            self._prepared = asyncio.ensure_future(
                Sandbox.prepare(self.root, session_id, self.config)
            )
        return self._prepared

    def prewarm(self, session_id: str) -> None:
        """Start the sandbox in the background (a code cell, a kernel's start)."""
        self._prepare(session_id)
        if self._task is None:
            self._task = asyncio.ensure_future(self._create())
            # A start nobody waits for (no tool needed it) must not log its failure as never
            # retrieved: the first use reports it (``ensure``).
            self._task.add_done_callback(_seen)

    async def _create(self) -> Sandbox:
        assert self._prepared is not None
        sandbox = await asyncio.shield(self._prepared)
        sandbox.review_source = self.review
        try:
            await sandbox.start()
            await sandbox.serve_loopback(self.loopback)
            if self.before_ready is not None:
                await self.before_ready()
        except BaseException:
            self._prepared = None  # given back: a next try prepares anew
            await sandbox.close()
            raise
        self.sandbox = sandbox
        return sandbox

    def preload_soon(self) -> None:
        """Have the started (or starting) sandbox import its heavy modules now, while
        nothing waits on it: a first Python run would otherwise wait for them."""
        if self._preload is None and self._task is not None:
            self._preload = asyncio.ensure_future(self._preload_after(self._task))

    @staticmethod
    async def _preload_after(task: asyncio.Task[Sandbox]) -> None:
        results = await asyncio.gather(asyncio.shield(task), return_exceptions=True)
        if isinstance(results[0], Sandbox):
            await results[0].preload()

    async def wait(self) -> None:
        """Wait until the sandbox is prepared, and started if a start was asked for (or
        failed: first use says why)."""
        for task in (self._prepared, self._task):
            if task is not None:
                await asyncio.gather(asyncio.shield(task), return_exceptions=True)

    async def ensure(self, session_id: str) -> Sandbox:
        """The sandbox, started on first use; ToolError says why when it cannot run."""
        if self.sandbox is not None:
            return self.sandbox
        self.prewarm(session_id)
        assert self._task is not None
        try:
            return await asyncio.shield(self._task)
        except SandboxError as e:
            self._task = None  # a changed setting may let the next try succeed
            self._prepared = None
            raise ToolError(f"code cannot run here: {e}", "SANDBOX_UNAVAILABLE") from None

    async def identity(self, session_id: str) -> Identity | None:
        """Whom the session's file access acts as: its sandbox's uid and gid, known once it
        is prepared (no process needed). A session that never asked for a sandbox (every
        kernel prepares one at start) ran no code and has no uid: it keeps the kernel's
        rights."""
        if not self.requested:
            return None
        if self.sandbox is not None:
            return sandbox_identity(self.sandbox.identity)
        try:
            sandbox = await asyncio.shield(self._prepare(session_id))
        except SandboxError as e:
            self._prepared = None
            raise ToolError(f"code cannot run here: {e}", "SANDBOX_UNAVAILABLE") from None
        return sandbox_identity(sandbox.identity)

    async def close(self) -> None:
        """Stop a preparation or start under way and give the sandbox back."""
        for task in (self._preload, self._task):
            if task is not None and not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        prepared, self._prepared = self._prepared, None
        if prepared is not None:
            # Not cancelled: its thread takes the uid and cgroup anyway; given back here.
            (got,) = await asyncio.gather(prepared, return_exceptions=True)
            if isinstance(got, Sandbox) and got is not self.sandbox:
                await got.close()
        if self.sandbox is not None:
            await self.sandbox.close()
            self.sandbox = None


def _seen(task: asyncio.Task) -> None:
    if not task.cancelled():
        task.exception()
