"""Server side of the agent's questions (``ask_user``): list them, answer one.

    GET  /api/think/sessions/{id}/questions            pending and answered, oldest first
    GET  /api/think/sessions/{id}/questions/{qid}      one
    POST /api/think/sessions/{id}/questions/{qid}      {"answer": "..."}

A question is a row of the approvals table (``kind = 'question'``), so an answer takes the
same path as an approval's decision: stored first (the first answer wins, a later one is
409), logged with who answered and from where, then every tab hears ``question_answered`` and
the session's kernel a nudge to read it. A kernel without a link finds the stored answer when
it polls or when its run resumes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from think_kernel.approvals import decide
from think_kernel.questions import BadAnswer, answer_record, question_view

from .approvals import person
from .base import ThinkHandler

if TYPE_CHECKING:
    from .services import Services

SID = r"(?P<session_id>[A-Za-z0-9_.\-]{1,128})"
QID = r"(?P<question_id>[A-Za-z0-9_.\-]{1,128})"


class QuestionNotFound(KeyError):
    """No such question in this session."""


class AlreadyAnswered(Exception):
    """Another surface answered first (or the question was closed)."""


async def answer_question(
    svc: Services, session_id: str, question_id: str, answer: Any, user: Any, source: str
) -> tuple[dict[str, Any], bool]:
    """Store and announce an answer; returns the question and whether the kernel was told.
    QuestionNotFound, AlreadyAnswered, or BadAnswer (the answer is not one it takes)."""
    row = await question_row(svc, session_id, question_id)
    if row["status"] != "pending":
        raise AlreadyAnswered(question_id)
    name, uid = person(user)
    record = answer_record(row, answer, source=source, user=name)
    record["user_id"] = uid[:200]
    if not await decide(svc.store, row, record):
        raise AlreadyAnswered(question_id)
    frame = {"type": "approval", "approval_id": question_id, "source": record["source"]}
    delivered = await svc.chats.deliver_approval(session_id, frame)
    await svc.pipeline.emit(
        session_id,
        {
            "type": "question_answered",
            "id": question_id,
            "answer": record["answer"],
            "source": record["source"],
            "user": record["user"],
        },
    )
    fresh = await svc.store.get_approval(question_id)
    return question_view(fresh or row), delivered


async def question_row(svc: Services, session_id: str, question_id: str) -> dict[str, Any]:
    """The stored question, or QuestionNotFound (an approval's id is not a question)."""
    row = await svc.store.get_approval(question_id)
    if row is None or row["session_id"] != session_id or row.get("kind") != "question":
        raise QuestionNotFound(question_id)
    return row


class QuestionsHandler(ThinkHandler):
    """``GET ?status=pending|answered|closed``: the session's questions."""

    @authorized
    async def get(self, session_id: str) -> None:
        """Questions, oldest first."""
        await self.session_or_404(session_id)
        status = self.get_query_argument("status", None) or None
        if status not in (None, "pending", "answered", "closed"):
            raise web.HTTPError(400, "'status' is pending, answered or closed")
        rows = await self.svc.store.list_approvals(session_id, None, kind="question")
        views = [question_view(r) for r in rows]
        self.send({"questions": [v for v in views if status in (None, v["status"])]})


class QuestionHandler(ThinkHandler):
    """``GET`` one question; ``POST {"answer": "..."}`` answers it (409 when it is already
    answered or closed, 400 when it does not take that answer)."""

    async def _row(self, session_id: str, question_id: str) -> dict[str, Any]:
        try:
            return await question_row(self.svc, session_id, question_id)
        except QuestionNotFound:
            raise web.HTTPError(
                404, f"no question {question_id!r} in session {session_id!r}"
            ) from None

    @authorized
    async def get(self, session_id: str, question_id: str) -> None:
        """The question, its status and its answer."""
        self.send(question_view(await self._row(session_id, question_id)))

    @authorized
    async def post(self, session_id: str, question_id: str) -> None:
        """Answer the question (the run waiting on it goes on with the answer)."""
        body = self.body()
        await self._row(session_id, question_id)
        if "answer" not in body:
            raise web.HTTPError(400, 'the body is {"answer": "..."}')
        # A client may say it is the sidebar or the cell; anything else counts as the API.
        claimed = body.get("source")
        source = claimed if claimed in ("sidebar", "notebook", "api") else "api"
        try:
            view, delivered = await answer_question(
                self.svc, session_id, question_id, body["answer"], self.current_user, source
            )
        except BadAnswer as e:
            raise web.HTTPError(400, str(e)) from None
        except QuestionNotFound:
            raise web.HTTPError(404, f"no question {question_id!r}") from None
        except AlreadyAnswered:
            row = await self._row(session_id, question_id)
            view = question_view(row)
            how = (
                f"answered ({view['answer']!r} by {view['user'] or 'someone'} via {view['source']})"
                if view["status"] == "answered"
                else f"closed ({view['source'] or 'no answer'})"
            )
            raise web.HTTPError(409, f"this question is already {how}") from None
        self.send(dict(view, delivered=delivered))


def question_routes(base: str = "/api/think") -> list[tuple[str, type[ThinkHandler]]]:
    """URL patterns of the question handlers."""
    s = f"{base}/sessions/{SID}"
    return [(f"{s}/questions", QuestionsHandler), (f"{s}/questions/{QID}", QuestionHandler)]
