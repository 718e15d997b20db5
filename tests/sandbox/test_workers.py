"""Warm workers per key: a subagent's Python state is its own, and
stopping one worker's processes leaves the others running."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from sandbox_helpers import leftovers

from tests.waiting import until
from think_kernel.sandbox import Sandbox

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_each_worker_keeps_its_own_state(sandbox: Sandbox) -> None:
    try:
        for key in ("", "t_a", "t_b"):
            assert (await sandbox.run_python(f"who = {key or 'session'!r}", worker=key)).ok
        results = await asyncio.gather(
            *(sandbox.run_python("print(who)", worker=k) for k in ("", "t_a", "t_b"))
        )
        assert [r.stdout for r in results] == ["session\n", "t_a\n", "t_b\n"]
        assert {"", "t_a", "t_b"} <= set(sandbox.workers())
    finally:
        for key in ("t_a", "t_b"):
            await sandbox.close_worker(key)
    assert set(sandbox.workers()) <= {""}
    assert (await sandbox.run_python("print(who)")).stdout == "session\n"


async def test_stopping_one_worker_leaves_the_others_running(sandbox: Sandbox) -> None:
    spinning: dict[str, asyncio.Event] = {"t_a": asyncio.Event(), "t_b": asyncio.Event()}

    def seen(key: str) -> Callable[[str, str], None]:
        def on_output(stream: str, text: str) -> None:
            if "spin" in text:
                spinning[key].set()

        return on_output

    a = asyncio.ensure_future(
        sandbox.run_python(
            "print('spin', flush=True)\nwhile True: pass", worker="t_a", on_output=seen("t_a")
        )
    )
    b = asyncio.ensure_future(
        sandbox.run_bash("echo spin; while :; do :; done", worker="t_b", on_output=seen("t_b"))
    )
    try:
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in spinning.values())), 20)
        await sandbox.interrupt(worker="t_a")
        res = await asyncio.wait_for(a, 5)
        assert res.error_category == "killed"
        assert not b.done()  # the other worker's process still runs
        await sandbox.close_worker("t_b")
        res = await asyncio.wait_for(b, 5)
        assert not res.ok and res.error_category == "killed"
    finally:
        for task in (a, b):
            task.cancel()
        await asyncio.gather(a, b, return_exceptions=True)
        await sandbox.close_worker("t_a")
        await sandbox.close_worker("t_b")
    # Nothing of either is left behind; the session's own worker is untouched.
    await until(lambda: not leftovers(sandbox), 5, every=0.02)
    assert (await sandbox.run_python("print(1 + 1)")).stdout == "2\n"
