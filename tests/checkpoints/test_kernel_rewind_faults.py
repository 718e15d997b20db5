"""A think kernel killed in the middle of ``%think_rewind``: the plan was stored first, so the
notebook's next kernel (the same session) finishes it at its next rewind: every file as the
plan says, one action-log row per rewind. Real kernels and sandbox; only the model is
scripted."""

from __future__ import annotations

import os
import signal
import sqlite3
from pathlib import Path

import pytest

from tests.fake_model import FakeModel
from tests.kernel.conftest import kernel_env, markdown_of, start_kernel, workspace_in
from tests.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
FILES = 400


def _rows(db: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return list(con.execute(sql))
    except sqlite3.OperationalError:  # not migrated yet, or busy
        return []
    finally:
        con.close()


def test_a_kernel_killed_mid_rewind_is_finished_by_the_next_rewind(
    tmp_path: Path, fake_model: FakeModel
) -> None:
    ws = workspace_in(tmp_path)
    db = tmp_path / "store" / "think.db"
    env = {**kernel_env(tmp_path, fake_model), "THINK_STORE_PATH": str(db)}
    (ws / "keep.txt").write_text("mine\n")
    script = f"mkdir made && for i in $(seq 1 {FILES}); do echo $i > made/f$i.txt; done"
    fake_model.reply(tool_calls=[("bash", {"command": script})])
    fake_model.reply(text="made them")
    kernel = start_kernel(ws, env)
    try:
        reply, outputs = kernel.execute("make files", timeout=180)
        assert reply["status"] == "ok" and "made them" in markdown_of(outputs)
        assert len(list((ws / "made").glob("*.txt"))) == FILES
        [(sid,)] = _rows(db, "SELECT id FROM sessions")
        kernel.kc.execute("%think_rewind --files")  # not waited for: the kernel dies in it

        def midway() -> bool:
            if _rows(db, "SELECT status FROM rewinds") != [("applying",)]:
                return False
            return len(list((ws / "made").glob("*.txt"))) < FILES

        wait_until(midway, 60, "the rewind's plan, partly applied", every=0.002)
        os.kill(kernel.km.provisioner.process.pid, signal.SIGKILL)  # type: ignore[union-attr]
    finally:
        kernel.kc.stop_channels()
        kernel.km.shutdown_kernel(now=True)
    # Killed mid-way: the plan is stored, not finished; some files are gone, some are not.
    assert _rows(db, "SELECT status FROM rewinds") == [("applying",)]
    left = len(list((ws / "made").glob("*.txt")))
    assert 0 < left < FILES, left

    again = start_kernel(ws, env)  # the notebook's next kernel resumes its session
    try:
        reply, outputs = again.execute("%think_rewind --files", timeout=120)
        assert reply["status"] == "ok", reply
        assert _rows(db, "SELECT status, session_id FROM rewinds") == [
            ("done", sid),
            ("done", sid),
        ]
        assert list((ws / "made").glob("*.txt")) == []
        assert (ws / "keep.txt").read_text() == "mine\n"
        logged = _rows(
            db,
            f"SELECT output_summary FROM action_log WHERE tool = 'rewind' AND session_id = '{sid}'",
        )
        assert len(logged) == 2, logged
        assert any(s.startswith("finished after a restart") for (s,) in logged), logged
    finally:
        again.kc.stop_channels()
        again.km.shutdown_kernel(now=True)
