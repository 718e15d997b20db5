"""A question's bounds and an answer's validity (pure: no store, no I/O).

spec = question_spec({"question": "Which file?", "options": ["a", "b"]})
record = answer_record(row, "a", source="api", user="ada")   # BadAnswer if invalid
answer_text(row_decision)       # what the model reads as the tool's result
"""

from __future__ import annotations

from typing import Any

#: The tool's name; the gate asks (and waits) for every call of it.
ASK_USER = "ask_user"
MAX_OPTIONS = 20
MAX_OPTION_CHARS = 200
MAX_QUESTION_CHARS = 4000
MAX_ANSWER_CHARS = 4000
SOURCES = ("sidebar", "notebook", "api", "timeout", "cancel")


class QuestionError(ValueError):
    """The model's question is malformed or too large (the tool result says why)."""


class BadAnswer(ValueError):
    """An answer the question does not take (the message says what it takes)."""


def question_spec(args: dict[str, Any]) -> dict[str, Any]:
    """The stored question (``question``, ``options``, ``allow_text``) from the model's
    arguments; QuestionError when they cannot be asked as they are."""
    question = args.get("question")
    if not isinstance(question, str) or not question.strip():
        raise QuestionError("ask_user needs a non-empty 'question' string")
    if len(question) > MAX_QUESTION_CHARS:
        raise QuestionError(
            f"the question is {len(question)} characters; ask in at most "
            f"{MAX_QUESTION_CHARS} (a person reads it on a card)"
        )
    options = args.get("options")
    if options is None:
        options = []
    if not isinstance(options, list) or any(not isinstance(o, str) for o in options):
        raise QuestionError("'options' is a list of strings")
    # A person picks from a short list: a long one is refused, not cut (a cut list would
    # silently drop the right choice).
    if len(options) > MAX_OPTIONS:
        raise QuestionError(
            f"ask_user takes at most {MAX_OPTIONS} options (got {len(options)}); "
            "ask a narrower question or let the person type the answer (allow_text)"
        )
    seen: list[str] = []
    for option in options:
        option = option.strip()
        if not option:
            continue
        if len(option) > MAX_OPTION_CHARS:
            raise QuestionError(f"an option is at most {MAX_OPTION_CHARS} characters")
        if option not in seen:
            seen.append(option)
    allow_text = args.get("allow_text")
    if allow_text is not None and not isinstance(allow_text, bool):
        raise QuestionError("'allow_text' is true or false")
    # Without options the only way to answer is to type; with them, picking is the default.
    allow = True if not seen else bool(allow_text)
    return {"question": question.strip(), "options": seen, "allow_text": allow}


def question_view(row: dict[str, Any]) -> dict[str, Any]:
    """A stored question as the REST API shows it."""
    spec = _object(row.get("input"))
    decision = _object(row.get("decision"))
    status = row.get("status")
    return {
        "id": row["id"],
        "session_id": row["session_id"],
        "question": spec.get("question", ""),
        "options": spec.get("options", []),
        "allow_text": bool(spec.get("allow_text")),
        "status": _status(status, decision),
        "answer": decision.get("answer") or None,
        "source": decision.get("source"),
        "user": decision.get("user"),
        "task_id": row.get("task_id"),
        "call_id": row.get("call_id"),
        "created_at": row.get("created_at"),
        "answered_at": row.get("resolved_at"),
        "expires_at": row.get("expires_at"),
    }


def _status(status: Any, decision: dict[str, Any]) -> str:
    if status == "pending":
        return "pending"
    # Closed: a timeout or a cancelled run ended the wait without an answer.
    return "answered" if status == "answered" and decision.get("answer") else "closed"


def answer_record(
    row: dict[str, Any], answer: Any, *, source: str = "api", user: str = ""
) -> dict[str, Any]:
    """The decision record of an answer to ``row``'s question; BadAnswer if it takes no
    such answer."""
    if not isinstance(answer, str):
        raise BadAnswer("'answer' must be a string")
    answer = answer.strip()
    if not answer:
        raise BadAnswer("'answer' must not be empty")
    if len(answer) > MAX_ANSWER_CHARS:
        raise BadAnswer(f"'answer' is at most {MAX_ANSWER_CHARS} characters")
    spec = _object(row.get("input"))
    options = list(spec.get("options") or [])
    if options and not spec.get("allow_text") and answer not in options:
        raise BadAnswer(f"this question takes one of its options: {options}")
    return closing_record(answer, source=source, user=user)


def closing_record(answer: str, *, source: str, user: str = "") -> dict[str, Any]:
    """The decision record that answers a question (``answer`` "" closes it unanswered:
    a timeout or a cancelled run)."""
    return {
        "decision": "answer",
        "answer": answer,
        "source": source if source in SOURCES else "api",
        "user": user[:200],
    }


def answer_text(record: dict[str, Any], waited: str = "") -> str:
    """What the model reads as the result of ``ask_user``."""
    answer = str(record.get("answer") or "")
    source = record.get("source")
    if answer:
        return f"The user answered: {answer}"
    if source == "cancel":
        return "No answer: the question was closed because the run was cancelled."
    return f"No answer: the user did not answer within {waited or 'the time allowed'}."


def _object(value: Any) -> dict[str, Any]:
    """A stored JSON object (anything else reads as empty)."""
    return value if isinstance(value, dict) else {}
