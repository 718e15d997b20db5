"""A notebook run headless (nbclient, as papermill does) whose agent asks: the question and
how to answer it over HTTP are in the output's plain text, and an answer over the API of a
server of the same workspace lets the run finish with it.

Real kernel (started by nbclient, no server link), real ``jupyter server`` subprocess on the
same store; the model is scripted at HTTP.
"""

from __future__ import annotations

import nbformat
import pytest

from tests.waiting import wait_until

from .test_headless_approvals import _texts, first_pending, headless_beside_server
from .test_restart import _setup

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

ASK = ("ask_user", {"question": "Which colour?", "options": ["red", "green"]})


def _answer_headless(tmp_path, fake_model, nb, kernel: str, cell: int) -> list[str]:
    env = _setup(tmp_path, fake_model)
    with headless_beside_server(tmp_path, env, nb, kernel) as (server, finished):
        sid, question = wait_until(
            lambda: first_pending(server, "questions"), 120, "the notebook's run to ask"
        )
        outputs = nb.cells[cell].outputs
        text = wait_until(
            lambda: "\n".join(t for t in _texts(outputs) if "Think asks" in t),
            30,
            "the question's text in the cell's outputs",
        )
        assert "Think asks: Which colour?" in text and "Options: red | green" in text, text
        path = f"POST /api/think/sessions/{sid}/questions/{question['id']}"
        assert f'{path}  {{"answer": "red"}}' in text, text
        assert "c.ThinkConfig.question_timeout" in text, text
        server.call("POST", f"sessions/{sid}/questions/{question['id']}", {"answer": "green"})
        finished("answer")
    tool = [m for m in fake_model.requests[1]["messages"] if m["role"] == "tool"][-1]
    assert tool["content"] == "The user answered: green"
    texts = _texts(nb.cells[cell].outputs)
    assert any("Answered by" in t and "via api: green" in t for t in texts), texts
    return texts


def test_a_headless_think_notebook_prints_the_question_and_an_api_answer_finishes_it(
    tmp_path, fake_model
):
    fake_model.reply(tool_calls=[ASK])
    fake_model.reply(text="Green it is.")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("paint it")]
    nb.metadata["kernelspec"] = {"name": "think", "display_name": "Think", "language": "markdown"}
    _answer_headless(tmp_path, fake_model, nb, "think", 0)


def test_a_headless_think_magic_prints_the_question_and_an_api_answer_finishes_it(
    tmp_path, fake_model
):
    fake_model.reply(tool_calls=[ASK])
    fake_model.reply(text="Green it is.")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext think_kernel"),
        nbformat.v4.new_code_cell("%%think\npaint it"),
    ]
    _answer_headless(tmp_path, fake_model, nb, "python3", 1)
