"""The documented example package, ``examples/think-guard``, loaded as an installed package
is: through its ``think_kernel.extensions`` entry point, found by the runtime on its own."""

from __future__ import annotations

import tomllib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from think_kernel.config import ThinkConfig
from think_kernel.layers import load_extensions
from think_kernel.runtime import Runtime

from ..fake_model import FakeModel
from ..tasks.conftest import collect

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "think-guard"


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The example on ``sys.path`` with the metadata pip would write for it."""
    site = tmp_path / "site"
    info = site / "think_guard-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: think-guard\nVersion: 0.1.0\n")
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    group = project["entry-points"]["think_kernel.extensions"]
    lines = "".join(f"{name} = {value}\n" for name, value in group.items())
    (info / "entry_points.txt").write_text(f"[think_kernel.extensions]\n{lines}")
    monkeypatch.syspath_prepend(str(EXAMPLE))
    monkeypatch.syspath_prepend(str(site))


@pytest.fixture
async def runtime(tmp_path: Path, fake_model: FakeModel, installed: None) -> AsyncIterator[Runtime]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "DATA_DICTIONARY.md").write_text("- `rev_eur`: revenue in euros, net of VAT\n")
    rt = Runtime(ThinkConfig(base_url=fake_model.url, api_key="k"), root)  # extensions found
    await rt.start()
    try:
        yield rt
    finally:
        await rt.close()


def test_the_entry_point_is_found(installed: None) -> None:
    names = [getattr(ext, "name", "") for ext in load_extensions()]
    assert "think-guard" in names


async def test_blocks_git_push_and_adds_the_dictionary_to_every_call(
    runtime: Runtime, fake_model: FakeModel
) -> None:
    assert [h.name for h in runtime.hooks.hooks][-2:] == ["block-commands", "data-dictionary"]
    fake_model.reply(tool_calls=[("bash", {"command": "git push origin main"})])
    fake_model.reply(tool_calls=[("read_file", {"path": "DATA_DICTIONARY.md"})])
    fake_model.reply(text="Pushed nothing; rev_eur is net of VAT.")
    events = await collect(runtime, "push and tell me about rev_eur")
    push, read = [e for e in events if e["type"] == "tool_result"]
    assert not push["ok"] and "blocked by the 'block-commands' hook" in push["output"]
    assert r"matching `\bgit\s+push\b`" in push["output"]
    assert read["ok"]  # other tools pass
    assert len(fake_model.requests) == 3
    for request in fake_model.requests:
        system = request["messages"][0]["content"]
        assert "# Data dictionary (DATA_DICTIONARY.md)" in system and "rev_eur" in system
    second = fake_model.requests[1]["messages"]
    assert "blocked by the 'block-commands' hook" in str(second[-1]["content"])
