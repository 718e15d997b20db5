"""A server killed in the middle of a rewind: the plan was stored first, so the next server
finishes it (files, conversation, one action-log row). Real processes; only the model is
scripted."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from tests.server.test_restart import Server, _setup
from tests.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
FILES = 120


def _rewinds(db: Path) -> list[str]:
    con = sqlite3.connect(db)
    try:
        return [r[0] for r in con.execute("SELECT status FROM rewinds ORDER BY created_at")]
    except sqlite3.OperationalError:  # not migrated yet
        return []
    finally:
        con.close()


def test_a_server_killed_mid_rewind_finishes_it_at_restart(tmp_path, fake_model) -> None:
    env = _setup(tmp_path, fake_model)
    made = tmp_path / "root" / "made"
    script = f"mkdir made && for i in $(seq 1 {FILES}); do echo $i > made/f$i.txt; done"
    fake_model.reply(tool_calls=[("bash", {"command": script})])
    fake_model.reply(text="made them")
    first = Server(tmp_path, env)
    try:
        first.wait_up()
        sid = first.call("POST", "sessions", {"title": "faults"})["id"]
        sent = first.call("POST", f"sessions/{sid}/messages", {"content": "make files"})

        def answered() -> bool:
            msgs = first.call("GET", f"sessions/{sid}/messages")["messages"]
            done = any(m["content"] == "made them" for m in msgs)
            return done and not first.call("GET", f"sessions/{sid}")["run"]

        wait_until(answered, 180, "the turn that makes the files")
        assert len(list(made.glob("*.txt"))) == FILES
        [db] = list((tmp_path / "data" / "think").rglob("think.db"))
        body = {"message_id": sent["message"]["id"], "restore": "both"}

        def ask() -> None:
            try:
                first.call("POST", f"sessions/{sid}/rewind", body)
            except Exception:
                pass  # the server dies under it

        asker = threading.Thread(target=ask, daemon=True)
        asker.start()
        wait_until(lambda: _rewinds(db) == ["applying"], 30, "the rewind's plan", every=0.002)
    finally:
        first.kill()
    # Killed mid-way: the plan is stored, not finished, and files are still there.
    assert _rewinds(db) == ["applying"]
    left = len(list(made.glob("*.txt")))
    assert left > 0
    second = Server(tmp_path, env)
    try:
        second.wait_up()
        wait_until(lambda: _rewinds(db) == ["done"], 60, "the rewind finished at restart")
        assert list(made.glob("*.txt")) == []
        assert second.call("GET", f"sessions/{sid}/messages")["messages"] == []
        actions = second.call("GET", f"sessions/{sid}/actions?tool=rewind")["actions"]
        assert len(actions) == 1
    finally:
        second.kill()


def test_a_server_killed_mid_switch_with_files_finishes_it_at_restart(tmp_path, fake_model) -> None:
    env = _setup(tmp_path, fake_model)
    made = tmp_path / "root" / "made"
    script = f"mkdir made && for i in $(seq 1 {FILES}); do echo $i > made/f$i.txt; done"
    fake_model.reply(tool_calls=[("bash", {"command": script})])
    fake_model.reply(text="made them")
    first = Server(tmp_path, env)
    try:
        first.wait_up()
        sid = first.call("POST", "sessions", {"title": "faults"})["id"]
        sent = first.call("POST", f"sessions/{sid}/messages", {"content": "make files"})

        def answered() -> bool:
            msgs = first.call("GET", f"sessions/{sid}/messages")["messages"]
            done = any(m["content"] == "made them" for m in msgs)
            return done and not first.call("GET", f"sessions/{sid}")["run"]

        wait_until(answered, 180, "the turn that makes the files")
        body = {"message_id": sent["message"]["id"], "restore": "both"}
        back = first.call("POST", f"sessions/{sid}/rewind", body)
        wait_until(lambda: not list(made.glob("*.txt")), 30, "the files rewound")
        [db] = list((tmp_path / "data" / "think").rglob("think.db"))
        switch = {"branch_id": back["left_branch_id"], "files": True}

        def ask() -> None:
            try:
                first.call("POST", f"sessions/{sid}/branches", switch)
            except Exception:
                pass  # the server dies under it

        asker = threading.Thread(target=ask, daemon=True)
        asker.start()

        def midway() -> bool:
            if _rewinds(db) != ["done", "applying"]:
                return False
            return len(list(made.glob("*.txt"))) > 0

        wait_until(midway, 30, "the switch's plan, partly applied", every=0.002)
    finally:
        first.kill()
    assert _rewinds(db) == ["done", "applying"]
    assert 0 < len(list(made.glob("*.txt"))) < FILES
    second = Server(tmp_path, env)
    try:
        second.wait_up()
        wait_until(lambda: _rewinds(db) == ["done", "done"], 60, "the switch finished")
        assert len(list(made.glob("*.txt"))) == FILES
        # The conversation switched too: the branch with the turn is current again.
        msgs = second.call("GET", f"sessions/{sid}/messages")["messages"]
        assert [m["content"] for m in msgs if m["role"] == "user"] == ["make files"]
        assert second.call("GET", f"sessions/{sid}")["branch_id"] == back["left_branch_id"]
        actions = second.call("GET", f"sessions/{sid}/actions?tool=rewind")["actions"]
        assert len(actions) == 2
    finally:
        second.kill()
