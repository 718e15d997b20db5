"""The contents manager the extension installs: Jupyter's file operations still work through
the REST API, and none of them follows a link planted in the root."""

from __future__ import annotations

import base64
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager

from jupyter_ext.collab.contents import ThinkCheckpoints, ThinkContentsManager


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside the root that must never change."""
    d = Path(tempfile.mkdtemp(prefix="think-outside-"))
    (d / "keep.txt").write_text("keep\n")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def contents(jp_fetch, think, jp_serverapp):  # noqa: ANN001
    """``code, body = await contents("PUT", "a.txt", {...})`` on /api/contents."""
    jp_serverapp.contents_manager.delete_to_trash = False  # not the test runner's own trash

    async def call(method: str, path: str, body: Any = None, **params: Any) -> tuple[int, Any]:
        kw: dict[str, Any] = {"method": method, "raise_error": False}
        if body is not None or method in ("POST", "PUT", "PATCH"):
            kw["body"] = json.dumps(body or {})
        if params:
            kw["params"] = params
        resp = await jp_fetch("api", "contents", *path.split("/"), **kw)
        text = resp.body.decode() if resp.body else ""
        return resp.code, json.loads(text) if text else None

    return call


def unchanged(outside: Path) -> None:
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
    assert (outside / "keep.txt").read_text() == "keep\n"


async def test_the_extension_installs_it(jp_serverapp, think) -> None:  # noqa: ANN001
    cm = jp_serverapp.contents_manager
    assert isinstance(cm, ThinkContentsManager) and isinstance(cm.checkpoints, ThinkCheckpoints)
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    think.log.addHandler(handler)
    try:
        think._check_contents_manager()
        assert not [r for r in records if r.levelno >= logging.WARNING]
        jp_serverapp.contents_manager = AsyncLargeFileManager(root_dir=cm.root_dir)
        think._check_contents_manager()
        warned = [r.getMessage() for r in records if r.levelno == logging.WARNING]
        assert len(warned) == 2 and "follows symbolic links" in warned[0], warned
    finally:
        jp_serverapp.contents_manager = cm
        think.log.removeHandler(handler)


async def test_file_operations_still_work(contents, jp_root_dir: Path) -> None:  # noqa: ANN001
    root = jp_root_dir
    code, _ = await contents("PUT", "d", {"type": "directory"})
    assert code == 201 and (root / "d").is_dir()
    code, _ = await contents("PUT", "d/a.txt", {"type": "file", "format": "text", "content": "1"})
    assert code == 201 and (root / "d/a.txt").read_text() == "1"
    os.chmod(root / "d/a.txt", 0o640)
    code, _ = await contents("PUT", "d/a.txt", {"type": "file", "format": "text", "content": "2"})
    assert code == 200 and (root / "d/a.txt").read_text() == "2"
    assert (root / "d/a.txt").stat().st_mode & 0o777 == 0o640  # the mode survives a save
    code, body = await contents("GET", "d/a.txt")
    assert code == 200 and body["content"] == "2"
    # a notebook: saved, checkpointed, restored
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    code, _ = await contents("PUT", "n.ipynb", {"type": "notebook", "content": nb})
    assert code == 201 and (root / ".ipynb_checkpoints/n-checkpoint.ipynb").exists()
    nb.cells[0].source = "x = 2"
    await contents("PUT", "n.ipynb", {"type": "notebook", "content": nb})
    code, cps = await contents("GET", "n.ipynb/checkpoints")
    assert code == 200 and [c["id"] for c in cps] == ["checkpoint"]
    code, _ = await contents("POST", "n.ipynb/checkpoints/checkpoint")
    assert code == 204 and "x = 1" in (root / "n.ipynb").read_text()
    # rename, copy (a file and a folder), upload in chunks, delete
    code, _ = await contents("PATCH", "n.ipynb", {"path": "m.ipynb"})
    assert code == 200 and (root / ".ipynb_checkpoints/m-checkpoint.ipynb").exists()
    code, body = await contents("POST", "", {"copy_from": "d/a.txt"})
    assert code == 201 and (root / body["path"]).read_text() == "2"
    code, body = await contents("POST", "", {"copy_from": "d"})
    assert code == 201 and (root / body["path"] / "a.txt").read_text() == "2", body
    for chunk, data in ((1, b"abc"), (2, b"def"), (-1, b"ghi")):
        code, _ = await contents("PUT", "up.bin", {
            "type": "file", "format": "base64", "chunk": chunk,
            "content": base64.b64encode(data).decode()})  # fmt: skip
        assert code in (200, 201)
    assert (root / "up.bin").read_bytes() == b"abcdefghi"
    code, _ = await contents("DELETE", "up.bin")
    assert code == 204 and not (root / "up.bin").exists()
    code, _ = await contents("DELETE", "d")
    assert code == 400  # not empty: as upstream


async def test_no_operation_follows_a_planted_link(
    contents, jp_root_dir: Path, outside: Path
) -> None:  # noqa: ANN001
    root = jp_root_dir
    os.symlink(outside, root / "out")  # a folder that leads out
    os.symlink(outside / "keep.txt", root / "keep.txt")  # a file that leads out
    os.symlink(outside / "new.txt", root / ".~a.txt")  # jupyter's old backup name
    (root / "a.txt").write_text("mine\n")
    (root / "inside.txt").write_text("inside\n")
    os.symlink("inside.txt", root / "in.txt")  # a link that stays inside
    text = {"type": "file", "format": "text", "content": "pwned"}
    for method, path, body in (
        ("PUT", "out/new.txt", text),
        ("PUT", "keep.txt", text),
        ("PUT", "out/sub", {"type": "directory"}),
        ("PATCH", "a.txt", {"path": "out/a.txt"}),
        ("GET", "keep.txt", None),
        ("GET", "out/keep.txt", None),
    ):
        code, body = await contents(method, path, body)
        assert 400 <= code < 500, (method, path, code, body)
        assert "link" in body["message"] or "outside" in body["message"], body
    code, _ = await contents("PUT", "a.txt", text)  # the legitimate save next to them
    assert code == 200 and (root / "a.txt").read_text() == "pwned"
    assert (root / ".~a.txt").is_symlink()
    code, body = await contents("GET", "in.txt")
    assert code == 200 and body["content"] == "inside\n"
    # a folder copy keeps links as links, never the files they point to
    (root / "d").mkdir()
    os.symlink(outside / "keep.txt", root / "d" / "secret")
    code, body = await contents("POST", "", {"copy_from": "d"})
    assert code == 201 and (root / body["path"] / "secret").is_symlink()
    # a chunked upload whose file was swapped for a hard link to another file
    await contents("PUT", "up.bin", {"type": "file", "format": "text", "content": "a", "chunk": 1})
    victim = root.parent / f"{root.name}-victim"
    victim.write_text("victim\n")
    try:
        (root / "up.bin").unlink()
        os.link(victim, root / "up.bin")
        code, body = await contents(
            "PUT", "up.bin", {"type": "file", "format": "text", "content": "b", "chunk": -1}
        )
        assert code == 400 and victim.read_text() == "victim\n", body
    finally:
        victim.unlink()
    os.mkfifo(root / "pipe")
    code, body = await contents("GET", "pipe", type="file")
    assert code == 400 and "FIFO" in body["message"]
    unchanged(outside)
