"""The agent asks (``ask_user``) through a running server: the run waits, an answer over REST
continues it with the answer, the first answer wins, bad answers are refused, the question
outlives a server stop (SIGTERM) and crash (SIGKILL), and a timeout answers "no answer".

Real server, real think kernels, real sockets; the model is scripted at HTTP.
"""

from __future__ import annotations

import os
import signal
import urllib.error

import pytest

from tests.waiting import until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

ASK = ("ask_user", {"question": "Which colour?", "options": ["red", "green", "blue"]})


@pytest.fixture
def short_questions(jp_config_dir):
    """Questions of the kernels the server starts time out quickly."""
    (jp_config_dir / "think_kernel_config.py").write_text("c.ThinkConfig.question_timeout = 1.5\n")


async def _session(api) -> str:
    code, s = await api("POST", "sessions", {"title": "questions"})
    assert code == 201
    return s["id"]


def _tool_text(request: dict) -> str:
    return [m for m in request["messages"] if m["role"] == "tool"][-1]["content"]


async def test_an_answer_over_rest_continues_the_run_and_the_first_answer_wins(
    api, ws, think, model_env
):
    model_env.reply(tool_calls=[ASK])
    model_env.reply(text="Green it is.")
    sid = await _session(api)
    tab, other = await ws(sid), await ws(sid)
    await api("POST", f"sessions/{sid}/messages", {"content": "paint it"})
    asked = (await until(lambda: tab.of("question_asked"), 60, "the question"))[0]
    assert asked["question"] == "Which colour?"
    assert asked["options"] == ["red", "green", "blue"] and asked["allow_text"] is False
    status = await until(lambda: [f for f in tab.frames if f.get("status") == "waiting"], 30, "")
    assert status[0]["detail"] == "question: Which colour?"
    qid = asked["id"]
    _, listed = await api("GET", f"sessions/{sid}/questions")
    assert [(q["id"], q["status"]) for q in listed["questions"]] == [(qid, "pending")]
    # A question is not an approval: the approval routes neither list nor decide it.
    _, approvals = await api("GET", f"sessions/{sid}/approvals")
    assert approvals["approvals"] == []
    code, _ = await api("POST", f"sessions/{sid}/approvals/{qid}", {"decision": "approve"})
    assert code == 404
    # Bad answers are refused with what the question takes; nothing is answered.
    code, err = await api("POST", f"sessions/{sid}/questions/{qid}", {"answer": "purple"})
    assert code == 400 and "red" in err["message"], err
    code, err = await api("POST", f"sessions/{sid}/questions/{qid}", {"answer": 3})
    assert code == 400
    code, err = await api("POST", f"sessions/{sid}/questions/{qid}", {"reply": "red"})
    assert code == 400
    code, _ = await api("POST", f"sessions/{sid}/questions/q_nope", {"answer": "red"})
    assert code == 404
    code, _ = await api("GET", f"sessions/{sid}/questions/q_nope")
    assert code == 404

    code, row = await api("POST", f"sessions/{sid}/questions/{qid}", {"answer": "green"})
    assert code == 200 and row["status"] == "answered" and row["answer"] == "green"
    assert row["source"] == "api" and row["user"].startswith("Anonymous ")
    heard = await until(lambda: other.of("question_answered"), 30, "the other tab hears it")
    assert heard[0]["id"] == qid and heard[0]["answer"] == "green"
    code, err = await api("POST", f"sessions/{sid}/questions/{qid}", {"answer": "red"})
    assert code == 409 and "already answered" in err["message"] and "green" in err["message"]

    await until(lambda: tab.of("task_complete"), 60, "the run ends")
    assert _tool_text(model_env.requests[1]) == "The user answered: green"
    _, one = await api("GET", f"sessions/{sid}/questions/{qid}")
    assert one["status"] == "answered" and one["answer"] == "green"
    _, page = await api("GET", f"sessions/{sid}/messages")
    assert page["messages"][-1]["content"] == "Green it is."


async def test_a_question_with_too_many_options_is_refused_as_a_tool_result(
    api, ws, think, model_env
):
    options = [f"option {i}" for i in range(500)]
    model_env.reply(tool_calls=[("ask_user", {"question": "Pick", "options": options})])
    model_env.reply(text="I will narrow it down.")
    sid = await _session(api)
    tab = await ws(sid)
    await api("POST", f"sessions/{sid}/messages", {"content": "choose"})
    await until(lambda: tab.of("task_complete"), 60, "the run ends")
    assert not tab.of("question_asked")
    text = _tool_text(model_env.requests[1])
    assert "at most 20 options (got 500)" in text, text
    _, listed = await api("GET", f"sessions/{sid}/questions")
    assert listed["questions"] == []


async def test_an_unanswered_question_times_out_as_no_answer(
    api, ws, think, model_env, short_questions
):
    model_env.reply(tool_calls=[("ask_user", {"question": "Anyone there?"})])
    model_env.reply(text="Going on without you.")
    sid = await _session(api)
    tab = await ws(sid)
    await api("POST", f"sessions/{sid}/messages", {"content": "ask me"})
    asked = (await until(lambda: tab.of("question_asked"), 60, "the question"))[0]
    assert asked["allow_text"] is True  # no options: typed answers only
    closed = await until(lambda: tab.of("question_answered"), 60, "the timeout")
    assert closed[0]["source"] == "timeout" and closed[0]["answer"] == ""
    await until(lambda: tab.of("task_complete"), 60, "the run ends")
    assert _tool_text(model_env.requests[1]).startswith("No answer: the user did not answer")
    code, err = await api("POST", f"sessions/{sid}/questions/{asked['id']}", {"answer": "hi"})
    assert code == 409 and "closed (timeout)" in err["message"], err


async def test_a_killed_kernel_asks_the_same_question_again(api, ws, think, model_env):
    model_env.reply(tool_calls=[ASK])
    model_env.reply(text="Blue, after the restart.")
    sid = await _session(api)
    tab = await ws(sid)
    await api("POST", f"sessions/{sid}/messages", {"content": "paint it"})
    asked = (await until(lambda: tab.of("question_asked"), 60, "the question"))[0]
    chats = think.services.chats
    kid = chats.kernels[sid]
    pid = think.serverapp.kernel_manager.get_kernel(kid).provisioner.process.pid
    os.kill(pid, signal.SIGKILL)
    await until(lambda: chats.kernels.get(sid) not in (None, kid), 90, "a new kernel")
    again = await until(
        lambda: [f for f in tab.of("question_asked") if f is not asked], 90, "asked again"
    )
    assert again[0]["id"] == asked["id"]
    assert len(model_env.requests) == 1
    code, _ = await api("POST", f"sessions/{sid}/questions/{asked['id']}", {"answer": "blue"})
    assert code == 200
    await until(lambda: tab.of("task_complete"), 90, "the run ends")
    assert _tool_text(model_env.requests[1]) == "The user answered: blue"


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_a_pending_question_outlives_the_server_and_its_answer_continues_the_run(
    tmp_path, fake_model, how
):
    """The server stops (or dies) while a run waits on a question; the next server lists it
    pending, and answering it continues the run without asking the model again."""
    from tests.waiting import wait_until

    from .test_restart import Server, _setup

    env = _setup(tmp_path, fake_model)
    fake_model.reply(tool_calls=[ASK])
    fake_model.reply(text="Red after the restart.")
    first = Server(tmp_path, env)
    try:
        first.wait_up()
        sid = first.call("POST", "sessions", {"title": "durable question"})["id"]
        first.call("POST", f"sessions/{sid}/messages", {"content": "paint it"})
        pending = wait_until(
            lambda: first.call("GET", f"sessions/{sid}/questions?status=pending")["questions"],
            90,
            "the question",
        )
        if how == "SIGTERM":
            os.kill(first.proc.pid, signal.SIGTERM)
            first.proc.wait(60)
    finally:
        first.kill() if first.proc.poll() is None else None
    second = Server(tmp_path, env)
    try:
        second.wait_up()
        listed = second.call("GET", f"sessions/{sid}/questions?status=pending")["questions"]
        assert [q["id"] for q in listed] == [pending[0]["id"]]

        def asked_again() -> bool:
            events = second.call("GET", f"sessions/{sid}/events")["events"]
            return any(e["type"] == "task_retrying" for e in events) and any(
                e["type"] == "question_asked" and e["data"]["id"] == pending[0]["id"]
                for e in events[len(events) // 2 :]
            )

        wait_until(asked_again, 120, "the resumed run waits on the same question")
        assert len(fake_model.requests) == 1
        qid = pending[0]["id"]
        answered = second.call("POST", f"sessions/{sid}/questions/{qid}", {"answer": "red"})
        assert answered["status"] == "answered"
        with pytest.raises(urllib.error.HTTPError) as late:
            second.call("POST", f"sessions/{sid}/questions/{qid}", {"answer": "blue"})
        assert late.value.code == 409

        def finished():
            run = second.call("GET", f"sessions/{sid}")["run"]
            return run is None and second.call("GET", f"sessions/{sid}/messages")

        page = wait_until(finished, 120, "the run to finish on the second server")
        assert page["messages"][-1]["content"] == "Red after the restart."
        assert len(fake_model.requests) == 2
        assert _tool_text(fake_model.requests[1]) == "The user answered: red"
    finally:
        second.kill()


async def test_a_cancelled_run_closes_its_question(api, ws, think, model_env):
    model_env.reply(tool_calls=[ASK])
    sid = await _session(api)
    tab = await ws(sid)
    await api("POST", f"sessions/{sid}/messages", {"content": "paint it"})
    asked = (await until(lambda: tab.of("question_asked"), 60, "the question"))[0]
    await api("POST", f"sessions/{sid}/cancel")
    closed = await until(lambda: tab.of("question_answered"), 30, "closed by the cancel")
    assert closed[0]["source"] == "cancel" and not closed[0].get("answer")
    _, row = await api("GET", f"sessions/{sid}/questions/{asked['id']}")
    assert row["status"] == "closed"
    code, err = await api("POST", f"sessions/{sid}/questions/{asked['id']}", {"answer": "red"})
    assert code == 409 and "closed (cancel)" in err["message"], err
