"""A think notebook without a server: the kernel fires its reminder itself (a run answered by
the model) and the notebook's next cell output shows it, once."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.fake_model import FakeModel
from think_kernel.store import Store, location

from .conftest import kernel_env, start_kernel, workspace_in

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def fired(workspace: Path) -> list[dict]:
    """Done reminder firings in the kernel's store (the same file the kernel writes)."""

    async def read() -> list[dict]:
        store = await Store.open(location.store_file(workspace, ""))
        try:
            return await store.list_firings(kind="reminder")
        finally:
            await store.close()

    return asyncio.run(read())


def test_a_reminder_fires_in_the_kernel_and_shows_in_the_next_output(
    tmp_path: Path, model: FakeModel
) -> None:
    model.reply(tool_calls=[("schedule_reminder", {"when": "in 1 second", "message": "oven"})])
    model.reply(text="Set.")
    model.reply(text="Oven checked.")  # the reminder's own run, in the background
    model.reply(text="You're welcome.")
    ws = workspace_in(tmp_path)
    kernel = start_kernel(ws, kernel_env(tmp_path, model))
    try:
        reply, outputs = kernel.execute("remind me about the oven in a second")
        assert reply["status"] == "ok"
        end = time.monotonic() + 60
        while not fired(ws):
            assert time.monotonic() < end, "the reminder never fired"
            time.sleep(0.1)
        [firing] = fired(ws)
        assert firing["late"] is False and firing["outcome"]["message_id"]
        assert len(model.requests) == 3
        assert "oven" in str(model.requests[2]["messages"][-1]["content"])

        reply, outputs = kernel.execute("thanks")
        notes = [
            m["content"]["data"]["text/markdown"]
            for m in outputs
            if m["msg_type"] == "display_data" and "Reminder" in str(m["content"]["data"])
        ]
        assert len(notes) == 1, outputs
        assert notes[0].startswith("⏰ **Reminder** (set for ") and ": oven" in notes[0]
        assert "> Oven checked." in notes[0]
        reply, outputs = kernel.execute("%think_status")
        assert not any("⏰" in str(m["content"]) for m in outputs)  # shown once
    finally:
        kernel.stop()
