"""Waiting with a deadline, without losing a Stop.

Python 3.11's ``asyncio.wait_for`` returns the awaited result, and forgets the cancellation,
when the task is cancelled just as what it awaits completes (fixed in 3.12, which implements
it like this). A loop that waits for output under ``wait_for`` (a chatty sandboxed command,
say) then never stops: cancelling such a run was lost nearly every time. Use this instead
(ruff bans ``asyncio.wait_for`` in the packages)::

    item = await wait_for(queue.get(), 5)   # TimeoutError after 5 s; None waits forever
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def wait_for(aw: Awaitable[T], timeout: float | None) -> T:
    """Await ``aw`` for at most ``timeout`` seconds (TimeoutError after, and ``aw`` cancelled);
    a cancellation of the caller always propagates."""
    async with asyncio.timeout(timeout):
        return await aw
