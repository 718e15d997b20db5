"""Deciding an approval in the store: the first decision wins, and it goes in the action log.

Every surface (the REST handler, the WebSocket, the cell's buttons, a timeout, a cancel)
decides through :func:`decide`, so "who decided, from where" is written exactly once, by the
process whose ``UPDATE ... WHERE status = 'pending'`` won.
"""

from __future__ import annotations

import getpass
import os
from typing import TYPE_CHECKING, Any

from ..tools.summarize import summarize_input

if TYPE_CHECKING:
    from ..store import Store

SOURCES = ("sidebar", "notebook", "api", "timeout", "cancel")
#: A row's status after each decision (``answer``: a question's, see think_kernel.questions).
STATUSES = {"approve": "approved", "reject": "rejected", "answer": "answered"}


def local_user() -> str:
    """The person at this kernel (JupyterHub's user name when there is one)."""
    name = os.environ.get("JUPYTERHUB_USER")
    if name:
        return name
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry (some containers)
        return "unknown"


def decision_record(
    decision: str,
    *,
    input: dict[str, Any] | None = None,
    reason: str = "",
    always: bool = False,
    source: str = "api",
    user: str = "",
) -> dict[str, Any]:
    """The JSON stored in ``approvals.decision`` and sent in ``approval_resolved``."""
    if decision not in ("approve", "reject"):
        raise ValueError("decision is 'approve' or 'reject'")
    return {
        "decision": decision,
        "input": input if decision == "approve" else None,
        "reason": reason[:2000],
        "always": bool(always) and decision == "approve",
        "source": source if source in SOURCES else "api",
        "user": user[:200],
    }


async def decide(store: Store, row: dict[str, Any], record: dict[str, Any]) -> bool:
    """Resolve a pending approval (or answer a question) and log who decided; False if it
    was already decided."""
    status = STATUSES[record["decision"]]
    if not await store.resolve_approval(row["id"], status, record):
        return False
    edited = " with edited input" if record.get("input") else ""
    always = " (always, for this session)" if record.get("always") else ""
    why = f": {record['reason']}" if record.get("reason") else ""
    who = record.get("user") or "unknown"
    args = record.get("input") or row.get("input")
    await store.log_action(
        session_id=row["session_id"],
        tool=row["tool"],
        action=f"{status}{edited}{always} by {who} via {record.get('source')}{why}"[:500],
        input_summary=summarize_input(row["tool"], args if isinstance(args, dict) else None, args),
        output_summary=f"approval {row['id']}",
        duration_ms=0,
        success=status != "rejected",
        message_id=row.get("message_id") or None,
    )
    return True
