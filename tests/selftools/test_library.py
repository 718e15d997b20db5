"""The tool folder kept in a registry: approval by content, reload on change, problems."""

from __future__ import annotations

import os
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from think_kernel.agent.events import ApprovalRequested
from think_kernel.selftools import SelfTools, SelfToolsConfig
from think_kernel.selftools.approval import APPROVAL_TOOL
from think_kernel.store import Store
from think_kernel.tools.base import ToolRegistry
from think_kernel.tools.files import FILE_TOOLS

V1 = textwrap.dedent('''
    READ_ONLY = ["count_rows"]

    def count_rows(path: str) -> int:
        """Count the rows of a file."""
        return 1
''')
V2 = V1.replace("return 1", "return 2")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    st = await Store.open(tmp_path / "store" / "think.db")
    await st.ensure_session("s_a")
    await st.ensure_session("s_b")
    try:
        yield st
    finally:
        await st.close()


def write(root: Path, name: str, text: str) -> Path:
    path = root / ".think" / "tools" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    os.utime(path, ns=(before + 10**9, before + 10**9))  # a new stamp even within one tick
    return path


def selftools(root: Path, trusted: bool = False) -> SelfTools:
    registry = ToolRegistry(FILE_TOOLS, core=True)
    return SelfTools(root, SelfToolsConfig(), registry, trusted=lambda: trusted)


async def approve(store: Store, event: ApprovalRequested, status: str = "approved") -> None:
    record = {"decision": status[:-1] if status == "approved" else "reject", "reason": "no"}
    assert await store.resolve_approval(event.id, status, record)


async def test_a_file_loads_once_a_person_approves_its_content(
    tmp_path: Path, store: Store
) -> None:
    tools = selftools(tmp_path)
    assert await tools.refresh(store, "s_a", "m1") == []  # no folder: nothing, no error
    write(tmp_path, "rows.py", V1)
    (asked,) = await tools.refresh(store, "s_a", "m1")
    assert isinstance(asked, ApprovalRequested) and asked.tool == APPROVAL_TOOL
    assert asked.input["tools"] == ["count_rows"]
    assert asked.summary == "load self-written tools from .think/tools/rows.py: count_rows"
    assert "+++ b/.think/tools/rows.py" in asked.diff and "+    return 1" in asked.diff
    assert "count_rows" not in tools.registry
    assert await tools.refresh(store, "s_a", "m2") == []  # asked once per session
    assert tools.status_lines() == [
        ".think/tools/rows.py: waits for a person's approval (no tools)"
    ]
    # Another session of the workspace (another kernel) asks too, and sees the decision.
    other = selftools(tmp_path)
    (asked_b,) = await other.refresh(store, "s_b", "")
    await approve(store, asked)
    version = tools.registry.version
    assert await tools.refresh(store, "s_a", "m3") == []
    tool = tools.registry.tools["count_rows"]
    assert tool.read_only and tools.registry.version > version
    assert tool.parameters["required"] == ["path"]
    assert "self-written tool, .think/tools/rows.py" in tool.description
    await other.refresh(store, "s_b", "")
    assert "count_rows" in other.registry

    # A change unloads the tools and asks again, showing what changed.
    write(tmp_path, "rows.py", V2)
    (again,) = await tools.refresh(store, "s_a", "m4")
    assert "count_rows" not in tools.registry
    assert "-    return 1" in again.diff and "+    return 2" in again.diff
    await approve(store, again, "rejected")
    await tools.refresh(store, "s_a", "m5")
    assert "count_rows" not in tools.registry
    assert "a person rejected this content of the file (no)" in "\n".join(tools.status_lines())
    # Back to the approved content: it loads without asking (the key is the content).
    write(tmp_path, "rows.py", V1)
    assert await tools.refresh(store, "s_a", "m6") == []
    assert "count_rows" in tools.registry
    # Deleted: gone.
    (tmp_path / ".think" / "tools" / "rows.py").unlink()
    await tools.refresh(store, "s_a", "m7")
    assert "count_rows" not in tools.registry and tools.status_lines() == []
    assert asked_b.id != asked.id


async def test_broken_files_are_reported_and_never_asked_about(
    tmp_path: Path, store: Store
) -> None:
    tools = selftools(tmp_path)
    write(tmp_path, "broken.py", "def f(:\n")
    write(tmp_path, "clash.py", 'def read_file(path: str) -> str:\n    """Mine."""\n')
    write(tmp_path, "half.py", V1 + 'def bad(x: set) -> int:\n    """Bad."""\n')
    events = await tools.refresh(store, "s_a", "m")
    # Only the files with a loadable tool ask; the broken one says where it broke.
    assert sorted(e.input["path"] for e in events) == [
        ".think/tools/clash.py",
        ".think/tools/half.py",
    ]
    for event in events:
        await approve(store, event)
    await tools.refresh(store, "s_a", "m")
    lines = "\n".join(tools.status_lines())
    assert ".think/tools/broken.py:1: syntax error: invalid syntax" in lines
    assert ".think/tools/clash.py:1: read_file: a tool of that name exists already" in lines
    assert ".think/tools/half.py:7: unsupported annotation 'set'" in lines
    assert "count_rows" in tools.registry
    assert tools.registry.tools["read_file"].name == "read_file"  # the core tool is kept
    assert "syntax error" in tools.prompt()


async def test_trusted_workspaces_load_without_asking(tmp_path: Path, store: Store) -> None:
    tools = selftools(tmp_path, trusted=True)
    write(tmp_path, "rows.py", V1)
    assert await tools.refresh(store, "s_a", "m") == []
    assert "count_rows" in tools.registry
    assert await store.list_approvals("s_a") == []


async def test_links_out_of_the_workspace_are_not_read(tmp_path: Path, store: Store) -> None:
    root = tmp_path / "ws"
    secret = tmp_path / "secret.py"
    secret.write_text(V1)
    (root / ".think" / "tools").mkdir(parents=True)
    (root / ".think" / "tools" / "link.py").symlink_to(secret)
    tools = selftools(root)
    assert await tools.refresh(store, "s_a", "m") == []
    (line, problem) = tools.status_lines()
    assert line.startswith(".think/tools/link.py: invalid") and "not read" in problem
