"""The bounds of a question and the validity of an answer (pure: no store, no process)."""

from __future__ import annotations

import pytest

from think_kernel.questions import BadAnswer, QuestionError, answer_record, question_spec
from think_kernel.questions.spec import answer_text, question_view


def test_options_are_trimmed_deduplicated_and_pick_only_by_default():
    spec = question_spec({"question": " Which? ", "options": ["a", " a", "b", ""]})
    assert spec == {"question": "Which?", "options": ["a", "b"], "allow_text": False}
    assert question_spec({"question": "Name?"})["allow_text"] is True  # no options: typed
    both = question_spec({"question": "Q", "options": ["a"], "allow_text": True})
    assert both["allow_text"] is True


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ({"question": "Q", "options": [str(i) for i in range(500)]}, "at most 20 options"),
        ({"question": ""}, "non-empty 'question'"),
        ({"question": "Q" * 5000}, "at most 4000"),
        ({"question": "Q", "options": "a,b"}, "list of strings"),
        ({"question": "Q", "options": [1, 2]}, "list of strings"),
        ({"question": "Q", "options": ["x" * 300]}, "at most 200"),
        ({"question": "Q", "allow_text": "yes"}, "true or false"),
    ],
)
def test_bad_questions_are_refused_with_the_reason(args, says):
    with pytest.raises(QuestionError, match=says):
        question_spec(args)


def _row(**spec):
    return {"id": "q_1", "session_id": "s", "input": question_spec(spec), "status": "pending"}


def test_answers_must_be_an_option_unless_typing_is_allowed():
    row = _row(question="Q", options=["red", "green"])
    assert answer_record(row, "green", source="sidebar", user="ada")["answer"] == "green"
    with pytest.raises(BadAnswer, match="one of its options"):
        answer_record(row, "purple")
    typed = _row(question="Q", options=["red"], allow_text=True)
    assert answer_record(typed, "purple")["answer"] == "purple"
    for bad in (None, 3, "", "   ", "x" * 5000):
        with pytest.raises(BadAnswer):
            answer_record(typed, bad)


def test_what_the_model_reads_and_what_the_api_shows():
    assert answer_text({"answer": "red"}) == "The user answered: red"
    assert answer_text({"answer": "", "source": "timeout"}, "10 min") == (
        "No answer: the user did not answer within 10 min."
    )
    assert "cancelled" in answer_text({"answer": "", "source": "cancel"})
    row = {
        **_row(question="Q"),
        "status": "answered",
        "decision": {"answer": "", "source": "timeout"},
    }
    assert question_view(row)["status"] == "closed"
