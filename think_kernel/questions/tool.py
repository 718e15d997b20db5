"""The ``ask_user`` tool: its signature and description are what the model sees.

The asking and the waiting happen in the approval gate before the call runs (the question is
a durable row, answered from the sidebar, the cell or the REST API); the gate hands the answer
to the model as the call's result. The function body runs only when there is nothing to ask
through: a malformed question (it says why) or a caller with no gate (nobody to answer).
"""

from __future__ import annotations

from ..tools.base import ToolContext, ToolError, ToolFunc
from .spec import QuestionError, question_spec


async def ask_user(
    ctx: ToolContext, question: str, options: tuple[str, ...] = (), allow_text: bool = False
) -> str:
    """Ask the user a question and wait for the answer (the run pauses until they answer or
    the question times out). Use it when you cannot go on without their choice.

    Args:
        question: one clear question
        options: up to 20 short choices shown as buttons
        allow_text: also accept a typed answer (always true without options)
    """
    try:
        question_spec({"question": question, "options": list(options), "allow_text": allow_text})
    except QuestionError as e:
        raise ToolError(str(e), "INVALID_QUESTION") from None
    raise ToolError(
        "there is nobody to ask here (this caller runs without a person to answer); "
        "decide yourself and say what you assumed",
        "NO_PERSON",
    )


QUESTION_TOOLS: list[ToolFunc] = [ask_user]
