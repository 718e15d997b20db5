"""A chat run's Stop ends the apps that run started, in a real sandbox (the best tier this
machine runs): the apps of another run (an earlier, finished turn) run on, an app whose start
is cancelled while it is awaited leaves no process, and a restarted app still belongs to its
run."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from tests.apps.app_source import app_source, apps_in
from tests.layers import starts_processes
from tests.procs import marked_loop, processes_with
from tests.waiting import until
from think_kernel.apps import Apps, AppsConfig
from think_kernel.apps.registry import RUN, STOPPED_WITH_RUN
from think_kernel.sandbox import Sandbox

pytestmark = [pytest.mark.timeout(120), pytest.mark.asyncio(loop_scope="module")]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
@starts_processes
async def sandbox() -> AsyncIterator[Sandbox]:
    """One sandbox for the module (not under pytest's basetemp: its ACLs)."""
    ws = Path(tempfile.mkdtemp(prefix="think-app-stop-"))
    (ws / "app.py").write_text(app_source("hello"))
    sb = await Sandbox.create(ws, f"test-app-stop-{uuid.uuid4().hex[:6]}")
    yield sb
    await sb.close()
    shutil.rmtree(ws, ignore_errors=True)


async def in_run(run_id: str, apps: Apps, command: str, name: str) -> None:
    """Start an app as a tool of chat run ``run_id`` does (in a task of that run)."""

    async def tool() -> None:
        RUN.set(run_id)
        await apps.start("s1", command, name)

    await asyncio.create_task(tool())


async def test_a_runs_stop_ends_its_own_apps_and_no_others(sandbox: Sandbox) -> None:
    apps = apps_in(sandbox, AppsConfig(max_apps=4))
    try:
        await in_run("r_earlier", apps, "python app.py", "earlier")
        await in_run("r_now", apps, "python app.py", "now")
        await in_run("r_now", apps, "python -m think_app .", "files")
        await apps.start("s1", "python -m think_app .", "by-hand")  # no run: %think_serve
        now = apps.get("s1", "now")
        assert now is not None and now.run_id == "r_now"
        await apps.restart("s1", "now")  # a restart keeps it its run's
        stopped = await apps.stop_run("r_now")
        assert sorted(a.name for a in stopped) == ["files", "now"]
        states = {a.name: (a.state, a.error) for a in apps.of("s1")}
        assert states["now"] == ("stopped", STOPPED_WITH_RUN), states
        assert states["files"][0] == "stopped"
        assert states["earlier"][0] == "running" and states["by-hand"][0] == "running"
        # Its socket is gone: nothing answers there any more.
        restarted = apps.get("s1", "now")
        assert restarted is not None
        assert not await asyncio.to_thread(os.path.exists, restarted.path)
        assert await apps.stop_run("") == []  # outside a run: nothing is a run's
    finally:
        await apps.close()


async def test_a_start_cancelled_while_it_waits_leaves_no_process(sandbox: Sandbox) -> None:
    apps = apps_in(sandbox, AppsConfig(start_timeout=60.0))
    marker = f"never-answers-{uuid.uuid4().hex[:8]}"
    try:
        # It accepts no connection, so serve_app would wait for its answer a minute.
        start = asyncio.create_task(in_run("r_1", apps, marked_loop(marker), "silent"))
        await until(lambda: processes_with(marker), 30, "the app's process", every=0.02)
        app = apps.get("s1", "silent")
        assert app is not None and app.state == "starting"
        start.cancel()  # the chat's Stop, while serve_app waits
        with pytest.raises(asyncio.CancelledError):
            await start
        # Stopped before the cancellation went on: its process and its socket are gone.
        assert app.state == "stopped" and app.error == STOPPED_WITH_RUN
        await until(lambda: not processes_with(marker), 10, "no process left", every=0.02)
        assert not await asyncio.to_thread(os.path.exists, app.path)
    finally:
        await apps.close()
