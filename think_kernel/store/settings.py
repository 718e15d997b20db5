"""Settings kept in the store (one JSON value per key), such as the saved model endpoint.

    await store.set_setting("model_endpoint", {"base_url": ..., "api_key": ..., "model": ...})
    saved = await store.get_setting("model_endpoint")      # None when unset
    await store.set_setting("model_endpoint", None)        # forget it

The store lives outside the workspace in a 0700 folder that sandboxed code cannot list or
read, which is why a key saved from the setup card may be kept here.
"""

from __future__ import annotations

import json
import time
from typing import Any

from .part import StorePart


class SettingsMixin(StorePart):
    """``get_setting`` / ``set_setting`` on the ``settings`` table (migration m008)."""

    async def get_setting(self, key: str) -> Any:
        """The JSON value of ``key``, or None."""
        cur = await self.db.execute("SELECT value FROM settings WHERE key = ?", (key,))
        row = cur.fetchone()
        if row is None:
            return None
        raw = row["value"] if isinstance(row, dict) else row[0]
        try:
            return json.loads(raw)
        except ValueError:
            return None  # a hand-edited row must not stop a run

    async def set_setting(self, key: str, value: Any) -> None:
        """Save ``value`` (JSON) under ``key``; None deletes it."""
        if value is None:
            await self.db.execute("DELETE FROM settings WHERE key = ?", (key,))
            return
        await self.db.execute(
            "INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)"
            " ON CONFLICT(key) DO UPDATE SET value = excluded.value,"
            " updated_at = excluded.updated_at",
            (key, json.dumps(value), time.time()),
        )
