"""In review mode the agent's deletion is proposed without an approval card (nothing live
changes until a person accepts it); outside review mode, and under a person's rule, it asks."""

from __future__ import annotations

import asyncio
from pathlib import Path

from think_kernel.config import ThinkConfig
from think_kernel.proposals.proposal import Proposal
from think_kernel.runtime import Runtime

from ..fake_model import FakeModel
from ..tasks.conftest import FAST, collect


async def _delete_run(tmp_path: Path, fake_model: FakeModel, **config: object) -> tuple:
    ws = tmp_path / "ws"
    await asyncio.to_thread(ws.mkdir)
    await asyncio.to_thread((ws / "a.txt").write_text, "keep me\n")
    cfg = ThinkConfig(
        base_url=fake_model.url,
        api_key="k",
        fast_model=FAST,
        retry_delays=[0.01],
        approval_timeout=1.0,
        **config,
    )
    rt = Runtime(cfg, ws, extensions=[])
    await rt.start()
    try:
        fake_model.reply(tool_calls=[("delete_file", {"path": "a.txt"})])
        fake_model.reply(text="Done.")
        events = await collect(rt, "delete a.txt")
        proposed = await Proposal.of(rt).paths()
    finally:
        await rt.close()
    asked = [e for e in events if e.get("type") == "approval_requested"]
    return asked, proposed, (ws / "a.txt").exists()


async def test_a_deletion_is_proposed_without_asking(tmp_path: Path, fake_model: FakeModel):
    asked, proposed, live = await _delete_run(tmp_path, fake_model, review_mode=True)
    assert asked == []
    assert proposed == ["a.txt"] and live  # proposed; the live file is still there


async def test_a_live_deletion_asks(tmp_path: Path, fake_model: FakeModel):
    asked, proposed, live = await _delete_run(tmp_path, fake_model)
    assert [e["tool"] for e in asked] == ["delete_file"]
    assert proposed == [] and live  # not approved in time: nothing deleted


async def test_a_persons_rule_still_asks_in_review_mode(tmp_path: Path, fake_model: FakeModel):
    rule = [{"tool": "delete_file"}]
    asked, proposed, live = await _delete_run(
        tmp_path, fake_model, review_mode=True, approval_rules=rule
    )
    assert [e["tool"] for e in asked] == ["delete_file"]
    assert proposed == [] and live
