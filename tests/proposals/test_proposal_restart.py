"""A proposal survives a real server restart (SIGTERM, then a new server on the same store):
the next server serves it unchanged, and a person can still accept it."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.server.test_restart import Server, _setup
from tests.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def _stop(server: Server) -> None:
    """A graceful stop, as systemd or JupyterHub would ask."""
    os.killpg(server.proc.pid, signal.SIGTERM)
    server.proc.wait(45)


def test_a_proposal_survives_a_server_restart(tmp_path: Path, fake_model) -> None:
    env = _setup(tmp_path, fake_model)
    root = tmp_path / "root"
    (root / "notes.txt").write_text("kept\n")
    fake_model.reply(tool_calls=[("write_file", {"path": "plan.txt", "content": "step 1\n"})])
    fake_model.reply(tool_calls=[("read_file", {"path": "notes.txt"})])
    fake_model.reply(tool_calls=[("write_file", {"path": "notes.txt", "content": "new\n"})])
    fake_model.reply(text="Proposed.")
    first = Server(tmp_path, env)
    try:
        first.wait_up()
        sid = first.call("POST", "sessions", {"title": "review"})["id"]
        first.call("PATCH", f"sessions/{sid}", {"review": True})
        first.call("POST", f"sessions/{sid}/messages", {"content": "plan it"})

        def proposed() -> dict | None:
            got = first.call("GET", f"sessions/{sid}/proposal")
            return got if len(got["files"]) == 2 else None

        before = wait_until(proposed, 90, "the proposal of two files")
    finally:
        _stop(first)
    assert not (root / "plan.txt").exists() and (root / "notes.txt").read_text() == "kept\n"

    second = Server(tmp_path, env)
    try:
        second.wait_up()
        after = second.call("GET", f"sessions/{sid}/proposal")
        assert after["review"] is True
        assert after["files"] == before["files"]
        status = {f["path"]: f["status"] for f in after["files"]}
        assert status == {"plan.txt": "created", "notes.txt": "modified"}
        out = second.call("POST", f"sessions/{sid}/proposal", {"accept": ["plan.txt"]})
        assert out["accepted"] == ["plan.txt"] and not out["conflicts"], out
        plan = root / "plan.txt"  # written through its room: saved a moment later
        wait_until(lambda: plan.exists() and plan.read_text() == "step 1\n", 30, "plan.txt")
        assert (root / "notes.txt").read_text() == "kept\n"  # still only proposed
        left = second.call("GET", f"sessions/{sid}/proposal")
        assert [f["path"] for f in left["files"]] == ["notes.txt"]
    finally:
        _stop(second)
