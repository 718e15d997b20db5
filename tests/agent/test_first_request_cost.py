"""What a new runtime's first request loads: only what it needs. A workspace without skills
never loads the YAML parser, and entry points are read by group, never by parsing every
installed package's (both are paid by ``%load_ext`` + the first ``%%think`` in a fresh
kernel); a package's skills are still found by their entry point."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from think_kernel.heap import old_objects_frozen
from think_kernel.skills.places import package_dirs

ROOT = Path(__file__).resolve().parents[2]
ENV = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "THINK_"))}

CODE = """
import asyncio, importlib.metadata, json, sys
calls = []
parse_all = importlib.metadata.entry_points
importlib.metadata.entry_points = lambda *a, **k: calls.append(k) or parse_all(*a, **k)
from tests.fake_model import FakeModel
from think_kernel.config import ThinkConfig
from think_kernel.runtime import Runtime

fm = FakeModel().start()
fm.reply(text="hi")

async def first_request():
    rt = Runtime(ThinkConfig(base_url=fm.url, api_key="k"), sys.argv[1])
    await rt.start()
    kinds = [type(e).__name__ async for e in rt.run("hello")]
    await rt.close()
    return kinds

kinds = asyncio.run(first_request())
fm.stop()
print(json.dumps({"chat": "Chat" in kinds, "yaml": "yaml" in sys.modules, "calls": calls}))
"""


@pytest.mark.slow
def test_a_first_request_without_skills_loads_no_yaml_and_parses_no_package(
    tmp_path: Path,
) -> None:
    out = subprocess.run(
        [sys.executable, "-c", CODE, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**ENV, "JUPYTER_DATA_DIR": str(tmp_path / "data")},
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["chat"], out.stderr[-2000:]
    assert result["yaml"] is False
    assert result["calls"] == []


def test_package_skills_are_found_by_their_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skills = tmp_path / "demo_skills"
    skills.mkdir()
    (tmp_path / "demo_skills_pkg.py").write_text(f"WHERE = {str(skills)!r}\n")
    for name, group in (("demo", "think_kernel.skills"), ("other", "console_scripts")):
        info = tmp_path / f"{name}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[{group}]\n{name} = demo_skills_pkg:WHERE\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert package_dirs("think_kernel.skills") == [("package:demo", skills)]


def test_old_objects_are_frozen_only_while_the_block_runs() -> None:
    assert gc.get_freeze_count() == 0
    with old_objects_frozen():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
    with pytest.raises(RuntimeError), old_objects_frozen():
        raise RuntimeError("an import failed")
    assert gc.get_freeze_count() == 0
