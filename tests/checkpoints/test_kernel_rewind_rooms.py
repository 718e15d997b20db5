"""A notebook's kernel killed in the middle of ``%think_rewind`` under a real server: the
restarted kernel (the same session) finishes the stored plan at its next rewind, through the
rooms: a person's open tab shows the end state, and the disk agrees. Real server, rooms,
kernels and sandbox; a pycrdt peer for the tab; only the model is scripted."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.waiting import until

from ..collab.conftest import disk_text
from ..collab.peers import wait_change

pytestmark = pytest.mark.timeout(300)
FILES = 120


async def _run(kc: Any, code: str, timeout: float = 120) -> list[dict[str, Any]]:
    """Execute ``code`` in the kernel; the iopub messages it produced, up to idle."""
    outputs: list[dict[str, Any]] = []
    reply = await kc.execute_interactive(
        code, timeout=timeout, output_hook=outputs.append, allow_stdin=False
    )
    assert reply["content"]["status"] == "ok", reply["content"]
    return outputs


def _status(data_dir: Path) -> list[str]:
    found = list((data_dir / "think").rglob("think.db"))
    if not found:
        return []
    con = sqlite3.connect(found[0])
    try:
        return [r[0] for r in con.execute("SELECT status FROM rewinds ORDER BY created_at")]
    except sqlite3.OperationalError:  # not migrated yet, or busy
        return []
    finally:
        con.close()


async def test_a_killed_kernels_rewind_is_finished_through_the_rooms(
    jp_serverapp, jp_root_dir, jp_data_dir, jp_fetch, peers, model_env
) -> None:
    ext = jp_serverapp.extension_manager.extension_points["jupyter_ext"].app
    await ext.ensure_started()
    nbformat.write(nbformat.v4.new_notebook(), jp_root_dir / "work.ipynb")
    (jp_root_dir / "notes.txt").write_text("alpha\nbeta\n")
    tab = await peers("notes.txt")
    made = jp_root_dir / "made"
    body = {"path": "work.ipynb", "name": "work.ipynb", "type": "notebook"}
    resp = await jp_fetch(
        "api", "sessions", method="POST", body=json.dumps({**body, "kernel": {"name": "python3"}})
    )
    kid = json.loads(resp.body)["kernel"]["id"]
    km = jp_serverapp.kernel_manager
    kc = km.get_kernel(kid).client()
    kc.start_channels()
    try:
        await kc.wait_for_ready(timeout=60)
        await _run(kc, "%load_ext think_kernel")
        fm = model_env
        script = f"mkdir made && for i in $(seq 1 {FILES}); do echo $i > made/f$i.txt; done"
        edit = {"path": "notes.txt", "old_string": "beta", "new_string": "BETA"}
        fm.reply(tool_calls=[("read_file", {"path": "notes.txt"})])
        fm.reply(tool_calls=[("bash", {"command": script})])
        fm.reply(tool_calls=[("edit_file", edit)])
        fm.reply(text="done")
        await _run(kc, "%%think\nmake files and shout beta")
        await wait_change(tab, lambda: str(tab.text()) == "alpha\nBETA\n", timeout=30)
        assert len(list(made.glob("*.txt"))) == FILES

        kc.execute("%think_rewind --files")  # not waited for: the kernel dies in it

        async def midway() -> bool:
            if _status(jp_data_dir) != ["applying"]:
                return False
            return len(list(made.glob("*.txt"))) < FILES

        await until(midway, 60, "the rewind's plan, partly applied", every=0.002)
        os.kill(km.get_kernel(kid).provisioner.process.pid, signal.SIGKILL)
    finally:
        kc.stop_channels()
    assert _status(jp_data_dir) == ["applying"]
    assert len(list(made.glob("*.txt"))) > 0

    # The notebook's kernel again (as the server's restarter or a person would start it).
    await km.restart_kernel(kid, now=True)
    kc = km.get_kernel(kid).client()
    kc.start_channels()
    try:
        await kc.wait_for_ready(timeout=60)
        await _run(kc, "%load_ext think_kernel")
        await _run(kc, "%think_rewind --files")
        assert _status(jp_data_dir) == ["done", "done"]
        # The person's tab shows the restored file, live; the disk agrees; no file is left.
        await wait_change(tab, lambda: str(tab.text()) == "alpha\nbeta\n", timeout=30)
        await until(lambda: disk_text(jp_root_dir, "notes.txt") == "alpha\nbeta\n", 15, "saved")
        assert list(made.glob("*.txt")) == []
        resp = await jp_fetch("api", "think", "sessions", params={"kind": "magic"})
        [session] = json.loads(resp.body)["sessions"]
        resp = await jp_fetch(
            "api", "think", "sessions", session["id"], "actions", params={"tool": "rewind"}
        )
        assert len(json.loads(resp.body)["actions"]) == 2
    finally:
        kc.stop_channels()
        await asyncio.wait_for(km.shutdown_kernel(kid, now=True), 30)
