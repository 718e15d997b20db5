"""A server stopping while the pool starts a spare kernel: the start is never cut in half.

jupyter_client counts a kernel that is starting as "pending", and jupyter_server's
``shutdown_all`` then fails on it ("Kernel does not exist"), which left a SIGTERMed server
running forever. The pool's close() now lets a start under way finish and shuts that kernel
down, so the server's own shutdown finds nothing left behind."""

from __future__ import annotations

import asyncio
import os

import pytest

from jupyter_ext.runs.chatkernels import ChatKernels
from tests.waiting import until

pytestmark = pytest.mark.timeout(120)


async def test_closing_the_pool_mid_start_leaves_no_pending_kernel(jp_serverapp, think) -> None:
    km = jp_serverapp.kernel_manager
    before = set(km.list_kernel_ids())
    pool = ChatKernels(km, "think", kernel_env=lambda: {"PATH": os.environ["PATH"]}, pool_size=1)
    pool.start()
    # The spare's start is under way: jupyter_client holds it as a pending kernel.
    await until(lambda: bool(km._pending_kernels), 30, "a spare kernel starting")
    await pool.close()
    assert not km._pending_kernels, "a start was cut in half"
    assert set(km.list_kernel_ids()) == before, "the spare was left running"
    await km.shutdown_all(now=True)  # what the server does next; it raised before
    await asyncio.sleep(0)
