"""Waiting on a condition in tests, never a fixed sleep: poll it until it holds, fail with
what was awaited when it does not in time.

    row = await until(lambda: store_row(sid), 10, "the row")      # in async tests
    wait_until(lambda: not pid_alive(pid), 30, "the server gone")   # in blocking tests
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any


async def until(
    cond: Callable[[], Any], timeout: float = 10.0, what: str = "", every: float = 0.005
) -> Any:
    """Poll ``cond`` (a function, or one returning an awaitable) every ``every`` seconds (a
    condition that scans /proc wants 20 ms) until its value is true; return that value."""
    end = time.monotonic() + timeout
    while True:
        value = cond()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what or cond}")
        await asyncio.sleep(every)


def wait_until(
    cond: Callable[[], Any], timeout: float = 10.0, what: str = "", every: float = 0.05
) -> Any:
    """:func:`until` for blocking code (a blocking kernel client, a server subprocess asked
    over HTTP): polled every ``every`` seconds."""
    end = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what or cond}")
        time.sleep(every)
