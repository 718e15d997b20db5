"""The agent asks a person: ``ask_user(question, options?, allow_text?)``.

A question waits exactly as an approval does: it is a row of the approvals table
(``kind = 'question'``), asked and awaited by :class:`~think_kernel.approvals.ApprovalGate`, so
it survives reloads and kernel and server restarts, times out, and the first answer wins.
Pure core: :mod:`.spec` (the question's bounds, an answer's validity); the tool: :mod:`.tool`.
"""

from .spec import (
    ASK_USER,
    MAX_OPTIONS,
    BadAnswer,
    QuestionError,
    answer_record,
    answer_text,
    question_spec,
    question_view,
)

__all__ = [
    "ASK_USER",
    "MAX_OPTIONS",
    "BadAnswer",
    "QuestionError",
    "answer_record",
    "answer_text",
    "question_spec",
    "question_view",
]
