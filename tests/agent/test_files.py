"""File tools on local disk: numbering, paging, exact edits, read-before-edit, path escapes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from think_kernel.tools.base import ToolContext, ToolRegistry
from think_kernel.tools.files import FILE_TOOLS
from think_kernel.tools.workspace import LocalWorkspace


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def call(ws: Path):
    registry = ToolRegistry(FILE_TOOLS, core=True)
    ctx = ToolContext(session_id="s", workspace=LocalWorkspace(ws))

    async def _call(name: str, **args):
        out = (await registry.call(name, args, ctx)).output
        return out

    return _call


async def test_read_numbers_lines_and_pages(ws: Path, call) -> None:
    (ws / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = await call("read_file", path="a.txt", offset=3, limit=2)
    assert out.ok and out.text.splitlines()[:2] == ["3\tline 3", "4\tline 4"]
    assert "6 more lines; call read_file with offset=5" in out.text
    assert out.summary == "read a.txt: 2 lines of 10"
    assert (await call("read_file", path="missing.txt")).error == "'missing.txt' does not exist"


async def test_write_needs_a_read_before_overwrite(ws: Path, call) -> None:
    assert (await call("write_file", path="sub/new.py", content="a\nb\n")).ok
    assert (ws / "sub/new.py").read_text() == "a\nb\n"
    (ws / "old.py").write_text("keep me\n")
    out = await call("write_file", path="old.py", content="clobbered")
    assert not out.ok and "read 'old.py' with read_file" in out.error
    assert (ws / "old.py").read_text() == "keep me\n"
    await call("read_file", path="old.py")
    assert (await call("write_file", path="old.py", content="new\n")).summary == (
        "wrote old.py: 1 line"
    )


async def test_edit_exact_match_semantics(ws: Path, call) -> None:
    (ws / "m.py").write_text("x = 1\ny = 1\nx = 1\n")
    out = await call("edit_file", path="m.py", old_string="x = 1", new_string="x = 2")
    assert not out.ok and "read 'm.py'" in out.error
    await call("read_file", path="m.py")
    out = await call("edit_file", path="m.py", old_string="x = 1", new_string="x = 2")
    assert not out.ok and "matches 2 places" in out.error and "replace_all" in out.error
    out = await call("edit_file", path="m.py", old_string="z = 1", new_string="z = 2")
    assert not out.ok and "not found" in out.error
    out = await call("edit_file", path="m.py", old_string="y = 1", new_string="y = 3")
    assert out.ok and (ws / "m.py").read_text() == "x = 1\ny = 3\nx = 1\n"
    out = await call(
        "edit_file", path="m.py", old_string="x = 1", new_string="x = 9", replace_all=True
    )
    assert out.ok and out.summary == "edited m.py: 2 replacements"
    assert (ws / "m.py").read_text() == "x = 9\ny = 3\nx = 9\n"


async def test_delete_and_list(ws: Path, call) -> None:
    (ws / "d").mkdir()
    (ws / "d" / "f.txt").write_text("abc")
    (ws / ".ipynb_checkpoints").mkdir()
    (ws / "__pycache__").mkdir()
    out = await call("list_files")
    assert out.text == "d/"
    assert (await call("list_files", path="d")).text == "d/f.txt\t3 bytes"
    assert not (await call("delete_file", path="d")).ok
    assert (await call("delete_file", path="d/f.txt")).ok
    assert not (ws / "d" / "f.txt").exists()
    assert (await call("list_files", path="d")).text == "d is empty."


@pytest.mark.parametrize(
    "path",
    ["../outside.txt", "/etc/passwd", "a/../../outside.txt", "~/.bashrc", "", "link_out/x"],
)
async def test_paths_cannot_escape(ws: Path, call, path: str) -> None:
    outside = ws.parent / "outside.txt"
    outside.write_text("secret")
    os.symlink(ws.parent, ws / "link_out")
    for tool, args in (
        ("read_file", {"path": path}),
        ("write_file", {"path": path, "content": "pwned"}),
        ("delete_file", {"path": path}),
        ("list_files", {"path": path or "x/../.."}),
    ):
        out = await call(tool, **args)
        assert not out.ok, (tool, path, out.text)
        assert "secret" not in out.text
    assert outside.read_text() == "secret"


async def test_symlink_to_a_file_outside_is_refused(ws: Path, call) -> None:
    (ws.parent / "key.txt").write_text("secret")
    os.symlink(ws.parent / "key.txt", ws / "key.txt")
    out = await call("read_file", path="key.txt")
    assert not out.ok and "through a symlink" in out.error
    os.symlink(ws / "real.txt", ws / "inside.txt")
    (ws / "real.txt").write_text("fine\n")
    assert (await call("read_file", path="inside.txt")).ok
