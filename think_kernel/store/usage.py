"""Usage records: one row per model call (tokens in / out, cached, reasoning, cost), and totals.

    await store.add_usage(session_id, role="primary", model="gpt-4o-mini", tokens_in=812,
                          tokens_out=64, cost=0.00016, message_id="m_...")
    totals = await store.usage_totals(session_id)
    totals["total"]["tokens_in"], totals["by_role"]["summarizer"]["calls"]

Every model call is recorded, not only the main loop's: compaction (``summarizer``), summaries
of large tool outputs and titles (``fast``), images (``vision``). ``estimated`` marks a row
whose token counts are our estimate because the endpoint reported none.
"""

from __future__ import annotations

import time
from typing import Any

from .part import StorePart

USAGE_FIELDS = ("tokens_in", "tokens_out", "tokens_cached", "tokens_reasoning")
_SUMS = (
    "COUNT(*) AS calls, COALESCE(SUM(tokens_in), 0) AS tokens_in,"
    " COALESCE(SUM(tokens_out), 0) AS tokens_out,"
    " COALESCE(SUM(tokens_cached), 0) AS tokens_cached,"
    " COALESCE(SUM(tokens_reasoning), 0) AS tokens_reasoning,"
    " SUM(cost) AS cost, COUNT(cost) AS priced, COALESCE(SUM(estimated), 0) AS estimated"
)


def _shape(row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: int(row[k] or 0) for k in ("calls", *USAGE_FIELDS, "estimated")}
    # The cost is known only when every call had a price; a partial sum would mislead.
    priced = int(row.get("priced") or 0)
    out["cost"] = float(row["cost"]) if row.get("cost") is not None else None
    out["cost_complete"] = priced == out["calls"]
    return out


class UsageMixin(StorePart):
    """``usage`` rows and their totals per session, role, model and purpose."""

    async def add_usage(
        self,
        session_id: str,
        *,
        role: str,
        model: str,
        purpose: str = "step",
        message_id: str | None = None,
        tokens_in: int = 0,
        tokens_out: int = 0,
        tokens_cached: int = 0,
        tokens_reasoning: int = 0,
        cost: float | None = None,
        estimated: bool = False,
    ) -> int:
        """Record one model call; returns the row id."""
        return await self._write(
            "INSERT INTO usage (session_id, message_id, ts, role, model, purpose, tokens_in,"
            " tokens_out, tokens_cached, tokens_reasoning, cost, estimated)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session_id,
                message_id,
                time.time(),
                role,
                model,
                purpose,
                int(tokens_in),
                int(tokens_out),
                int(tokens_cached),
                int(tokens_reasoning),
                cost,
                int(bool(estimated)),
            ),
            rowid=True,
        )

    async def list_usage(self, session_id: str, limit: int = 1000) -> list[dict[str, Any]]:
        """The newest ``limit`` usage rows of a session, oldest first."""
        rows = await self._all(
            "SELECT * FROM usage WHERE session_id = ? ORDER BY id DESC LIMIT ?",
            (session_id, limit),
        )
        rows.reverse()
        return rows

    async def usage_totals(self, session_id: str) -> dict[str, Any]:
        """Totals of a session: overall and grouped by role, model and purpose."""
        out: dict[str, Any] = {"session_id": session_id}
        total = await self._all(f"SELECT {_SUMS} FROM usage WHERE session_id = ?", (session_id,))
        out["total"] = _shape(total[0])
        for key in ("role", "model", "purpose"):
            rows = await self._all(
                f"SELECT {key} AS k, {_SUMS} FROM usage WHERE session_id = ?"
                f" GROUP BY {key} ORDER BY {key}",
                (session_id,),
            )
            out[f"by_{key}"] = {str(r["k"]): _shape(r) for r in rows}
        models = await self._all(
            "SELECT role, model FROM usage WHERE session_id = ? GROUP BY role, model"
            " ORDER BY MAX(id)",
            (session_id,),
        )
        # role -> the models it used, most recent last (a session can switch models).
        roles: dict[str, list[str]] = {}
        for r in models:
            roles.setdefault(str(r["role"]), []).append(str(r["model"]))
        out["role_models"] = roles
        return out
