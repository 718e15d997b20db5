"""The approval card in a cell's output: ipywidgets buttons that work while the cell runs.

    card = ApprovalCard(event.to_dict(), decide=lambda frame: ...)
    display(card.widget)
    card.resolved(resolved_event.to_dict())   # whichever surface decided first

``decide(frame)`` receives ``{"local": True, "decision": "approve"|"reject", "input"?,
"reason"?, "always"?, "source": "notebook"}`` (what :meth:`Runtime.resolve_approval` takes).
The buttons only send; the card changes when the run reports ``approval_resolved``, so a
decision made in the sidebar first shows here too.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from typing import Any

Decide = Callable[[dict[str, Any]], Any]


class ApprovalCard:
    """Approve / Reject / Edit / Always for one pending approval."""

    def __init__(self, event: dict[str, Any], decide: Decide) -> None:
        import ipywidgets as w

        self.event = event
        self._decide = decide
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
        self._disable(f"{verb} {who}{why}".replace("  ", " "))


def _code(tool: str, args: Any) -> str:
    if isinstance(args, dict):
        for key in ("code", "command", "content", "source"):
            if isinstance(args.get(key), str):
                return str(args[key])
    return json.dumps(args, indent=1, default=str)
