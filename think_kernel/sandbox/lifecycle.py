"""A session's sandbox over its life: started ahead or on first use, waited for, closed.

box = SessionSandbox(root, config, loopback=handler, before_ready=files.start)
box.prewarm("s_1")                      # the kernel starts it in the background
sandbox = await box.ensure("s_1")       # first use: ToolError says why it cannot run
await box.close()
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from ..tools.base import ToolError
from .asuser import Identity, sandbox_identity
from .config import SandboxConfig
from .loopback import LoopbackHandler
from .sandbox import Sandbox, SandboxError


class SessionSandbox:
    """Owns the session's :class:`Sandbox` and the task that starts it."""

    def __init__(
        self,
        root: Path,
        config: SandboxConfig,
        *,
        loopback: LoopbackHandler,
        before_ready: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.root = root
        self.config = config
        self.loopback = loopback
        # Set up while the zygote starts (the workspace watch takes a moment on a big tree).
        self.before_ready = before_ready
        self.sandbox: Sandbox | None = None
        self.requested = False
        self._task: asyncio.Task[Sandbox] | None = None

    def prewarm(self, session_id: str) -> None:
        """Start the sandbox in the background (the kernel does this at start)."""
        self.requested = True
        if self._task is None:
            self._task = asyncio.ensure_future(self._create(session_id))

    async def _create(self, session_id: str) -> Sandbox:
        sandbox = await Sandbox.create(self.root, session_id, self.config)
        await sandbox.serve_loopback(self.loopback)
        if self.before_ready is not None:
            await self.before_ready()
        self.sandbox = sandbox
        return sandbox

    async def wait(self) -> None:
        """Wait until the prewarmed sandbox has started (or failed: first use says why)."""
        if self._task is not None:
            await asyncio.gather(asyncio.shield(self._task), return_exceptions=True)

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
            raise ToolError(f"code cannot run here: {e}", "SANDBOX_UNAVAILABLE") from None

    async def identity(self, session_id: str) -> Identity | None:
        """Whom the session's file access acts as: its sandbox's uid and gid. A session
        that never asked for a sandbox (the kernel always does, at start) ran no code and
        has no uid: it keeps the kernel's rights."""
        if not self.requested:
            return None
        return sandbox_identity((await self.ensure(session_id)).identity)

    async def close(self) -> None:
        """Stop a start under way and close the sandbox."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self.sandbox is not None:
            await self.sandbox.close()
            self.sandbox = None
