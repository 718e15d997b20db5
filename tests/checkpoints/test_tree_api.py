"""Sessions as trees over REST, with a real server and think kernels: three branches (a
conversation rewind, an edit), switching, reading one branch, a fork into a new session, and
clear 4xx answers for bad ids. A second tab open on the session is sent the conversation
each change leaves (a ``history`` frame)."""

from __future__ import annotations

from typing import Any

from tests.server.conftest import WSClient
from tests.waiting import until

from .conftest import turn


async def _contents(api: Any, sid: str, **params: Any) -> list[str]:
    code, got = await api("GET", f"sessions/{sid}/messages", **params)
    assert code == 200, got
    return [m["content"] for m in got["messages"]]


async def test_three_branches_and_a_fork(api, model_env) -> None:
    fm = model_env
    _, session = await api("POST", "sessions", {"title": "tree"})
    sid = session["id"]
    ids = {}
    for q, a in (("q1", "a1"), ("q2", "a2"), ("q3", "a3")):
        fm.reply(text=a)
        ids[q] = await turn(api, sid, q, a)
    _, first = await api("GET", f"sessions/{sid}/branches")
    [root] = first["branches"]

    # A conversation rewind to before q2: its text comes back; the next message branches.
    code, out = await api(
        "POST", f"sessions/{sid}/rewind", {"message_id": ids["q2"], "restore": "conversation"}
    )
    assert code == 200 and out["content"] == "q2" and out["left_branch_id"] == root["id"]
    assert await _contents(api, sid) == ["q1", "a1"]
    fm.reply(text="a2b")
    await turn(api, sid, "q2b", "a2b")
    second = out["branch_id"]
    # An edit of the first message: a third branch, from the start.
    code, _ = await api("POST", f"sessions/{sid}/truncate", {"message_id": ids["q1"]})
    assert code == 200
    fm.reply(text="a1c")
    await turn(api, sid, "q1c", "a1c")

    _, got = await api("GET", f"sessions/{sid}/branches")
    branches = {b["id"]: b for b in got["branches"]}
    assert len(branches) == 3 and root["id"] in branches and second in branches
    third = next(b for b in branches.values() if b["current"])
    a1 = (await api("GET", f"sessions/{sid}/messages", branch=root["id"]))[1]["messages"][1]
    assert branches[second]["fork_id"] == a1["id"] and third["fork_id"] is None
    assert await _contents(api, sid, branch=root["id"]) == ["q1", "a1", "q2", "a2", "q3", "a3"]
    assert await _contents(api, sid, branch=second) == ["q1", "a1", "q2b", "a2b"]
    assert await _contents(api, sid) == ["q1c", "a1c"]

    # Back to the second branch: the model sees that line only.
    code, _ = await api("POST", f"sessions/{sid}/branches", {"branch_id": second})
    assert code == 200
    fm.reply(text="a4")
    await turn(api, sid, "q4", "a4")
    seen = [m.get("content") for m in fm.requests[-1]["messages"][1:]]
    assert seen == ["q1", "a1", "q2b", "a2b", "q4"]
    _, got = await api("GET", f"sessions/{sid}/branches")
    assert len(got["branches"]) == 3  # nothing was deleted
    a3 = (await api("GET", f"sessions/{sid}/messages", branch=root["id"]))[1]["messages"][-1]
    assert {b["id"]: b["last_id"] for b in got["branches"]}[root["id"]] == a3["id"]

    # A fork up to a2b: a new session of its own, with its own kernel.
    a2b = (await api("GET", f"sessions/{sid}/messages"))[1]["messages"][3]
    code, fork = await api("POST", f"sessions/{sid}/fork", {"message_id": a2b["id"]})
    assert code == 201 and fork["id"] != sid
    assert await _contents(api, fork["id"]) == ["q1", "a1", "q2b", "a2b"]
    fm.reply(text="forked reply")
    await turn(api, fork["id"], "in the fork", "forked reply")
    assert await _contents(api, sid) == ["q1", "a1", "q2b", "a2b", "q4", "a4"]


async def test_another_tab_is_sent_each_change_of_the_conversation(
    api, model_env, jp_ws_fetch
) -> None:
    fm = model_env
    _, session = await api("POST", "sessions", {"title": "two tabs"})
    sid = session["id"]
    ids = {}
    for q, a in (("q1", "a1"), ("q2", "a2")):
        fm.reply(text=a)
        ids[q] = await turn(api, sid, q, a)
    tab = WSClient(await jp_ws_fetch("api", "think", "sessions", sid, "ws"))

    async def shown(contents: list[str]) -> None:
        def last() -> bool:
            frames = tab.of("history")
            return bool(frames) and [m["content"] for m in frames[-1]["messages"]] == contents

        await until(last, 10, f"the tab's history {contents}")

    try:
        await shown(["q1", "a1", "q2", "a2"])  # on connect
        _, got = await api("GET", f"sessions/{sid}/branches")
        [root] = got["branches"]
        code, _ = await api(
            "POST", f"sessions/{sid}/rewind", {"message_id": ids["q2"], "restore": "conversation"}
        )
        assert code == 200
        await shown(["q1", "a1"])
        code, _ = await api("POST", f"sessions/{sid}/branches", {"branch_id": root["id"]})
        assert code == 200
        await shown(["q1", "a1", "q2", "a2"])
        code, _ = await api("POST", f"sessions/{sid}/truncate", {"message_id": ids["q1"]})
        assert code == 200
        await shown([])
    finally:
        await tab.close()


async def test_bad_ids_are_clear_4xx(api, model_env) -> None:
    fm = model_env
    _, one = await api("POST", "sessions", {"title": "one"})
    _, two = await api("POST", "sessions", {"title": "two"})
    fm.reply(text="hello")
    q = await turn(api, one["id"], "hi", "hello")
    answer = (await api("GET", f"sessions/{one['id']}/messages"))[1]["messages"][1]["id"]
    sid = one["id"]
    cases = [
        ("POST", f"sessions/{sid}/rewind", {}, 400),
        ("POST", f"sessions/{sid}/rewind", {"message_id": q, "restore": "all"}, 400),
        ("POST", f"sessions/{sid}/rewind", {"message_id": "m_nope"}, 404),
        ("POST", f"sessions/{two['id']}/rewind", {"message_id": q}, 404),  # another session's
        ("POST", f"sessions/{sid}/rewind", {"message_id": answer}, 404),  # not a user message
        ("POST", "sessions/s_nope/rewind", {"message_id": q}, 404),
        ("GET", "sessions/s_nope/checkpoints", None, 404),
        ("GET", "sessions/s_nope/branches", None, 404),
        ("POST", f"sessions/{sid}/branches", {"branch_id": "b_nope"}, 404),
        ("POST", f"sessions/{sid}/branches", {}, 400),
        ("POST", f"sessions/{sid}/fork", {"message_id": "m_nope"}, 404),
        ("POST", f"sessions/{two['id']}/fork", {"message_id": q}, 404),
        ("POST", f"sessions/{sid}/fork", {}, 400),
    ]
    for method, path, body, want in cases:
        code, err = await api(method, path, body)
        assert code == want, (method, path, body, code, err)
        assert err.get("message"), err
    code, err = await api("GET", f"sessions/{sid}/messages", branch="b_nope")
    assert code == 404 and "b_nope" in err["message"]
    code, doc = await api("GET", "openapi.json")
    for route in ("checkpoints", "rewind", "branches", "fork"):
        assert f"/sessions/{{session_id}}/{route}" in doc["paths"]


async def test_a_rewind_during_a_run_stops_it_first(api, model_env) -> None:
    fm = model_env
    _, session = await api("POST", "sessions", {"title": "busy"})
    sid = session["id"]
    fm.reply(text="first")
    first = await turn(api, sid, "q1", "first")
    fm.reply(hang=True)  # the model never answers: the run stays busy
    code, sent = await api("POST", f"sessions/{sid}/messages", {"content": "q2"})
    assert code == 201

    async def running() -> bool:
        _, got = await api("GET", f"sessions/{sid}")
        return bool(got.get("run")) and got["run"]["status"] == "running" and len(fm.requests) == 2

    await until(running, 60, "the second run waiting on the model")
    code, out = await api(
        "POST", f"sessions/{sid}/rewind", {"message_id": first, "restore": "conversation"}
    )
    assert code == 200, out
    _, got = await api("GET", f"sessions/{sid}")
    assert not got.get("run") and got["id"] == sid  # the run was stopped, not left behind
    assert await _contents(api, sid) == [] and out["content"] == "q1"
