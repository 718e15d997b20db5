"""The approval card in a cell's output: ipywidgets buttons that work while the cell runs.

    card = ApprovalCard(event.to_dict(), decide=lambda frame: ...)
    display(card.widget)
    card.resolved(resolved_event.to_dict())   # whichever surface decided first

``decide(frame)`` receives ``{"local": True, "decision": "approve"|"reject", "input"?,
"reason"?, "always"?, "source": "notebook"}`` (what :meth:`Runtime.resolve_approval` takes).
The buttons only send; the card changes when the run reports ``approval_resolved``, so a
decision made in the sidebar first shows here too.

A run with no page to show widgets (nbclient, papermill) records only the output's
``text/plain``: ``card.bundle()`` puts there what waits and how to decide it
(:func:`waiting_text`), and after the decision, what was decided.
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Callable
from typing import Any

Decide = Callable[[dict[str, Any]], Any]
DETAIL_LINES = 12  # lines of the command or diff shown in the text


class ApprovalCard:
    """Approve / Reject / Edit / Always for one pending approval."""

    def __init__(self, event: dict[str, Any], decide: Decide, session_id: str = "") -> None:
        import ipywidgets as w

        self.event = event
        self._decide = decide
        self.text = waiting_text(event, session_id)
        detail = event.get("diff") or _code(event.get("tool", ""), event.get("input"))
        reason = f" <i>({html.escape(event['reason'])})</i>" if event.get("reason") else ""
        self.header = w.HTML(
            f"<b>Approve {html.escape(str(event.get('tool')))}?</b> "
            f"{html.escape(str(event.get('summary') or ''))}{reason}"
            f"<pre style='max-height:16em;overflow:auto'>{html.escape(detail)}</pre>"
        )
        self.approve = w.Button(description="Approve", button_style="success")
        self.reject = w.Button(description="Reject", button_style="danger")
        self.edit = w.Button(description="Edit")
        self.always = w.Button(description="Always", tooltip="allow this tool for the session")
        self.reason = w.Text(placeholder="reason (the model sees it when you reject)")
        self.editor = w.Textarea(
            value=json.dumps(event.get("input"), indent=1, default=str),
            layout=w.Layout(width="100%", height="10em", display="none"),
        )
        self.status = w.HTML("")
        self.approve.on_click(lambda _: self._send("approve"))
        self.reject.on_click(lambda _: self._send("reject"))
        self.always.on_click(lambda _: self._send("approve", always=True))
        self.edit.on_click(lambda _: self._toggle_editor())
        buttons = w.HBox([self.approve, self.reject, self.edit, self.always, self.reason])
        self.widget = w.VBox([self.header, buttons, self.editor, self.status])

    def bundle(self) -> dict[str, Any]:
        """The card as output data: the widget, and the plain text a run records where no
        page shows widgets."""
        data = dict(self.widget._repr_mimebundle_())
        data["text/plain"] = self.text
        return data

    @property
    def buttons(self) -> list[Any]:
        """The four buttons (tests click them through comm messages)."""
        return [self.approve, self.reject, self.edit, self.always]

    def _toggle_editor(self) -> None:
        shown = self.editor.layout.display != "none"
        self.editor.layout.display = "none" if shown else ""
        self.approve.description = "Approve" if shown else "Approve edited"

    def _send(self, decision: str, always: bool = False) -> None:
        frame: dict[str, Any] = {
            "local": True,
            "decision": decision,
            "source": "notebook",
            "always": always,
            "reason": self.reason.value,
        }
        frame.update(clicker())
        if decision == "approve" and self.editor.layout.display != "none":
            try:
                edited = json.loads(self.editor.value)
            except ValueError as e:
                self.status.value = f"<span style='color:#c00'>not valid JSON: {e}</span>"
                return
            if not isinstance(edited, dict):
                self.status.value = "<span style='color:#c00'>the input must be an object</span>"
                return
            frame["input"] = edited
        self._disable("sending…")
        self._decide(frame)

    def _disable(self, note: str) -> None:
        for b in self.buttons:
            b.disabled = True
        self.reason.disabled = self.editor.disabled = True
        self.status.value = html.escape(note)

    def resolved(self, event: dict[str, Any]) -> None:
        """Show the decision (from any surface) and retire the buttons."""
        self._disable(_decision(event))
        self.text = decided_text(self.event, event)


def clicker() -> dict[str, str]:
    """Who sent the click being handled: ``{"user", "user_id"}`` when a Jupyter server
    stamped the message with the person it authenticated (``header.display_name``, see
    jupyter_ext/kernelidentity.py), else nothing (the kernel then names its local user)."""
    try:
        from IPython import get_ipython

        header = get_ipython().kernel.get_parent("shell").get("header") or {}
    except Exception:  # no IPython kernel here (a test driving the card directly)
        return {}
    name = header.get("display_name")
    if not isinstance(name, str) or not name:
        return {}
    return {"user": name[:200], "user_id": str(header.get("username") or "")[:200]}


def decided_text(request: dict[str, Any], decision: dict[str, Any]) -> str:
    """A decided approval in plain text: the decision, by whom and how, and the call."""
    return f"{_decision(decision)}: {_what(request)}"


def _decision(event: dict[str, Any]) -> str:
    verb = "Approved" if event.get("decision") == "approve" else "Rejected"
    who = " ".join(
        p
        for p in (
            f"by {event['user']}" if event.get("user") else "",
            f"via {event['source']}" if event.get("source") else "",
        )
        if p
    )
    why = f": {event['reason']}" if event.get("reason") else ""
    return f"{verb} {who}{why}".replace("  ", " ").strip()


def waiting_text(event: dict[str, Any], session_id: str = "", buttons: bool = True) -> str:
    """What a pending approval waits for and how to decide it, in plain text: all that
    nbclient or papermill keep of the card (they record outputs but show no widgets).
    ``buttons``: the cell shows the card's buttons."""
    detail = str(event.get("diff") or _code(str(event.get("tool", "")), event.get("input")))
    lines = detail.splitlines() or [""]
    shown = [f"    {line}" for line in lines[:DETAIL_LINES]]
    if len(lines) > DETAIL_LINES:
        shown.append(f"    ... ({len(lines) - DETAIL_LINES} more lines)")
    path = f"/api/think/sessions/{session_id or '<session id>'}/approvals/{event.get('id')}"
    text = [
        _title(event),
        *shown,
        "The run is paused until someone decides. Decide with "
        + ("this cell's buttons or " if buttons else "")
        + "the Think sidebar in JupyterLab, or over HTTP on a Jupyter server of this "
        "workspace (with its token):",
        f'    POST {path}  {{"decision": "approve"}}',
        '    (or {"decision": "reject", "reason": "..."})',
    ]
    expires = event.get("expires_at")
    if isinstance(expires, (int, float)):
        when = time.strftime("%H:%M:%S UTC", time.gmtime(expires))
        left = max(0.0, expires - time.time())
        text.append(
            f"With no decision by {when} (in {_duration(left)}) it counts as rejected "
            "(c.ThinkConfig.approval_timeout)."
        )
    text.append(
        "Unattended runs: `%think_approve auto` (or a rule such as `%think_approve allow "
        f"{event.get('tool')}`) in a cell before the request changes this session's policy "
        "for later calls, so they do not wait; it does not decide this one. Or set "
        "c.ThinkConfig.approval_policy."
    )
    return "\n".join(text)


def _title(event: dict[str, Any]) -> str:
    return f"Waiting for approval: {_what(event)}"


def _what(event: dict[str, Any]) -> str:
    tool = str(event.get("tool") or "")
    summary = str(event.get("summary") or "").strip()
    if not summary.startswith(tool):  # summaries mostly name their tool already
        summary = f"{tool}: {summary}" if summary else tool
    reason = f" ({event['reason']})" if event.get("reason") else ""
    return f"{summary}{reason}"


def _duration(seconds: float) -> str:
    if seconds >= 90:
        return f"{round(seconds / 60)} min"
    return f"{round(seconds)} s"


def _code(tool: str, args: Any) -> str:
    if isinstance(args, dict):
        for key in ("code", "command", "content", "source"):
            if isinstance(args.get(key), str):
                return str(args[key])
    return json.dumps(args, indent=1, default=str)
