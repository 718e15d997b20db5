"""The question card in a cell's output: option buttons and, if allowed, a text box.

    card = QuestionCard(event.to_dict(), decide=lambda frame: ..., session_id=sid)
    display(card.bundle(), raw=True)
    card.resolved(answered_event.to_dict())   # whichever surface answered first

``decide(frame)`` receives ``{"local": True, "answer": "...", "source": "notebook"}`` and, in
a tab of a Jupyter server, ``user`` and ``user_id`` of the person who clicked (what
``Runtime.resolve_approval`` takes). The buttons only send; the card changes when the run
reports ``question_answered``, so an answer given in the sidebar first shows here too.

A run with no page (nbclient, papermill) records only ``text/plain``: the question and how to
answer it over HTTP (:func:`question_text`); once answered, the answer.

:func:`card_for`, :func:`pending_text` and :func:`settled_text` pick between this card and the
approval card by the event's type, so a cell shows both kinds of wait the same way.
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Callable
from typing import Any

from ..approvals.widget import ApprovalCard, clicker, decided_text, waiting_text

Decide = Callable[[dict[str, Any]], Any]


class QuestionCard:
    """One button per option, and a text box with Send when typed answers are allowed."""

    def __init__(self, event: dict[str, Any], decide: Decide, session_id: str = "") -> None:
        import ipywidgets as w

        self.event = event
        self._decide = decide
        self.text = question_text(event, session_id)
        task = (
            f" <i>(subagent, task {html.escape(event['task_id'])})</i>"
            if event.get("task_id")
            else ""
        )
        self.header = w.HTML(
            f"<b>Think asks:</b>{task} <span>{html.escape(str(event.get('question')))}</span>"
        )
        self.options = []
        for option in event.get("options") or []:
            button = w.Button(description=option, tooltip=f"answer: {option}")
            button.on_click(lambda _, o=option: self._send(o))
            self.options.append(button)
        self.entry = w.Text(placeholder="type an answer")
        self.send = w.Button(description="Send", button_style="primary")
        self.send.on_click(lambda _: self._send(self.entry.value))
        self.entry.on_submit(lambda _: self._send(self.entry.value))
        typed = [w.HBox([self.entry, self.send])] if event.get("allow_text") else []
        self.status = w.HTML("")
        self.widget = w.VBox([self.header, w.HBox(self.options), *typed, self.status])

    def bundle(self) -> dict[str, Any]:
        """The card as output data: the widget, and the text a run without a page records."""
        data = dict(self.widget._repr_mimebundle_())
        data["text/plain"] = self.text
        return data

    @property
    def buttons(self) -> list[Any]:
        """The option buttons, then Send (tests click them through comm messages)."""
        return [*self.options, self.send]

    def _send(self, answer: str) -> None:
        if not answer.strip():
            self.status.value = "<span style='color:#c00'>type an answer first</span>"
            return
        self._disable("sending…")
        # The person the server authenticated for this click, as approvals' cards name theirs.
        self._decide({"local": True, "answer": answer, "source": "notebook", **clicker()})

    def _disable(self, note: str) -> None:
        for b in self.buttons:
            b.disabled = True
        self.entry.disabled = True
        self.status.value = html.escape(note)

    def resolved(self, event: dict[str, Any]) -> None:
        """Show the answer (from any surface) and retire the buttons."""
        self._disable(_outcome(event))
        self.text = answered_text(self.event, event)


def question_text(event: dict[str, Any], session_id: str = "", buttons: bool = True) -> str:
    """A pending question and how to answer it, in plain text: all that nbclient or papermill
    keep of the card. ``buttons``: the cell shows the card's buttons."""
    path = f"/api/think/sessions/{session_id or '<session id>'}/questions/{event.get('id')}"
    options = list(event.get("options") or [])
    example = options[0] if options else "..."
    text = [f"Think asks: {event.get('question')}"]
    if event.get("task_id"):
        text[0] += f"  (a subagent, for task {event['task_id']})"
    if options:
        text.append("Options: " + " | ".join(options))
        if event.get("allow_text"):
            text.append("(or any typed answer)")
    text += [
        "The run is paused until someone answers. Answer with "
        + ("this cell's buttons or " if buttons else "")
        + "the Think sidebar in JupyterLab, or over HTTP on a Jupyter server of this "
        "workspace (with its token):",
        f"    POST {path}  {json.dumps({'answer': example})}",
    ]
    expires = event.get("expires_at")
    if isinstance(expires, (int, float)):
        when = time.strftime("%H:%M:%S UTC", time.gmtime(expires))
        text.append(
            f"With no answer by {when} the agent is told there was none "
            "(c.ThinkConfig.question_timeout)."
        )
    return "\n".join(text)


def answered_text(request: dict[str, Any], answered: dict[str, Any]) -> str:
    """An answered (or closed) question in plain text."""
    return f"Think asked: {request.get('question')}\n{_outcome(answered)}"


def _outcome(event: dict[str, Any]) -> str:
    who = " ".join(
        p
        for p in (
            f"by {event['user']}" if event.get("user") else "",
            f"via {event['source']}" if event.get("source") else "",
        )
        if p
    )
    if event.get("answer"):
        return f"Answered {who}: {event['answer']}".replace("  ", " ")
    if event.get("source") == "cancel":
        return "Closed: the run was cancelled"
    return "No answer in time (the agent was told)"


def card_for(event: dict[str, Any], decide: Decide, session_id: str) -> Any:
    """The card of a pending approval or question (by the event's type)."""
    if event.get("type") == "question_asked":
        return QuestionCard(event, decide, session_id)
    return ApprovalCard(event, decide, session_id)


def pending_text(event: dict[str, Any], session_id: str, buttons: bool = True) -> str:
    """What waits and how to settle it, in plain text (a question or an approval)."""
    if event.get("type") == "question_asked":
        return question_text(event, session_id, buttons)
    return waiting_text(event, session_id, buttons)


def settled_text(request: dict[str, Any], settled: dict[str, Any]) -> str:
    """How a question was answered or an approval decided, in plain text."""
    if request.get("type") == "question_asked":
        return answered_text(request, settled)
    return decided_text(request, settled)
