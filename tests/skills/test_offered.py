"""The skill tools are in a session's requests only while the workspace has a skill a person
approved."""

from __future__ import annotations

from pathlib import Path

import pytest

from think_kernel.config import ThinkConfig
from think_kernel.runtime import Runtime

from .test_library import write_skill
from .test_trust import approve

SKILL_TOOLS = {"load_skill", "read_skill_file"}


async def test_skill_tools_are_offered_only_with_a_skill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))  # no user-level skills
    ws = tmp_path / "ws"
    ws.mkdir()
    rt = Runtime(ThinkConfig(base_url="http://127.0.0.1:9", api_key="k"), ws, extensions=[])
    await rt.start()
    try:
        props = await rt.props()

        def offered() -> set[str]:
            rt.system_prompt(props)  # what each request builds first
            return {s["function"]["name"] for s in rt.tools.specs()} & SKILL_TOOLS

        assert offered() == set()
        folder = write_skill(ws / ".think" / "skills", "csv-tips")
        assert offered() == set()  # no person approved it yet: nothing to load
        assert rt.store is not None
        await approve(rt.store, rt.session_id, folder / "SKILL.md", ws)
        await rt.skills.check_trust(rt.store)  # what each request does before the prompt
        assert offered() == SKILL_TOOLS
        assert "load_skill" in rt.tools  # callable all along (a stale catalog still works)
    finally:
        await rt.close()
