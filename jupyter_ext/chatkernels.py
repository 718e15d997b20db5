"""The think kernels of chat sessions: one per session, started on demand, restarted if dead.

pool = ChatKernels(kernel_manager, "think", kernel_env=lambda sid: {...})
kernel_id = await pool.ensure(session_id)
await pool.forget(session_id)          # the session is deleted
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class ChatKernels:
    """Session id -> think kernel, through jupyter_server's kernel manager."""

    def __init__(
        self,
        kernel_manager: Any,
        kernel_name: str = "think",
        kernel_env: Callable[[str], dict[str, str]] = lambda session_id: {},
    ) -> None:
        self.kernel_manager = kernel_manager
        self.kernel_name = kernel_name
        self.kernel_env = kernel_env
        self.kernels: dict[str, str] = {}  # session id -> kernel id
        self._locks: dict[str, asyncio.Lock] = {}

    def session_of(self, kernel_id: str) -> str | None:
        """The chat session a kernel serves, if any."""
        for sid, kid in self.kernels.items():
            if kid == kernel_id:
                return sid
        return None

    async def ensure(self, session_id: str) -> str:
        """The session's live think kernel, started (or restarted) if needed."""
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            kid = self.kernels.get(session_id)
            if kid is not None and await self.alive(kid):
                return kid
            if kid is not None:
                await self._shutdown(session_id)
            # Chat kernels start at the server root: workspace paths and the default store
            # location then agree with the server's.
            env = {**os.environ, **self.kernel_env(session_id)}
            kid = await self.kernel_manager.start_kernel(
                kernel_name=self.kernel_name, path="", env=env
            )
            self.kernels[session_id] = kid
            return str(kid)

    async def alive(self, kernel_id: str) -> bool:
        """Whether the kernel process is still running."""
        try:
            kernel = self.kernel_manager.get_kernel(kernel_id)
        except Exception:  # KeyError, or jupyter_server's HTTPError(404)
            return False
        try:
            return bool(await kernel.is_alive())
        except Exception:
            return False

    async def forget(self, session_id: str) -> None:
        """Shut the session's kernel down (the session is being deleted)."""
        await self._shutdown(session_id)

    async def _shutdown(self, session_id: str) -> None:
        kid = self.kernels.pop(session_id, None)
        if kid is None:
            return
        try:
            await self.kernel_manager.shutdown_kernel(kid, now=True)
        except Exception:  # already gone
            log.debug("kernel %s did not shut down cleanly", kid, exc_info=True)
