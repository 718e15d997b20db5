"""Attack class: files the text tools choke on. A FIFO blocked ``read_file``
forever, a 500 MB file was read whole into the kernel, a Latin-1 file was silently rewritten
with U+FFFD by ``edit_file``, 2,000 nested folders raised RecursionError.

Standalone (local files) and server mode (the agent's tools through the server's rooms over
the doc.* RPCs): odd files are refused at once with a clear error, big files are paged in
bounded memory (measured), bytes that are not UTF-8 are never rewritten, and the ordinary
file next to each still works.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from security_server import *  # noqa: F403  (a real server: jp_*, think, peers, until)
from security_server import InProcessLink

from tests.waiting import until
from think_kernel.collab import local_access
from think_kernel.collab.workspace import CollabWorkspace
from think_kernel.tools.base import ToolContext, ToolOutput, ToolRegistry
from think_kernel.tools.files import FILE_TOOLS

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
LATIN1 = "café crème, über\n".encode("latin-1") * 3
Call = Callable[..., Any]


def registry_call(workspace: Any) -> Call:
    """``await call("read_file", path=...)`` -> ToolOutput, as the model's calls run."""
    registry = ToolRegistry(FILE_TOOLS, core=True)
    ctx = ToolContext(session_id="s", workspace=workspace)

    async def call(name: str, **args: Any) -> ToolOutput:
        return (await asyncio.wait_for(registry.call(name, args, ctx), 10)).output

    return call


@pytest.fixture
async def standalone(workspace: Path) -> AsyncIterator[Call]:
    """The standalone workspace (local files with versions)."""
    ws, notebooks = local_access(workspace)
    yield registry_call(ws)
    await notebooks.aclose()


@pytest.fixture
async def server_mode(jp_root_dir: Path, think: Any) -> AsyncIterator[Call]:
    """The agent's workspace when its kernel is linked to a server: rooms over doc.*."""
    yield registry_call(CollabWorkspace(jp_root_dir, InProcessLink(think, jp_root_dir)))


@pytest.fixture(params=["standalone", "server"])
def mode(request: pytest.FixtureRequest, workspace: Path) -> tuple[Call, Path]:
    """Each test runs on local files and through the server's rooms."""
    if request.param == "standalone":
        return request.getfixturevalue("standalone"), workspace
    return request.getfixturevalue("server_mode"), request.getfixturevalue("jp_root_dir")


async def test_special_files_are_refused_at_once(mode: tuple[Call, Path]) -> None:
    call, root = mode
    os.mkfifo(root / "pipe")
    os.mknod(root / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "sock"))
    (root / "plain.txt").write_text("hello\n")
    try:
        for name, what in (("pipe", "FIFO"), ("null", "device"), ("sock", "socket")):
            out = await call("read_file", path=name)  # within wait_for's 10 s, or it fails
            assert not out.ok and what in out.error, (name, out)
            edit = await call("edit_file", path=name, old_string="a", new_string="b")
            assert not edit.ok, (name, edit)
        assert stat.S_ISFIFO((root / "pipe").lstat().st_mode)
        assert (await call("read_file", path="plain.txt")).text == "1\thello"
    finally:
        sock.close()


async def test_a_file_that_is_not_utf8_is_never_rewritten(mode: tuple[Call, Path]) -> None:
    call, root = mode
    (root / "latin.txt").write_bytes(LATIN1)
    out = await call("read_file", path="latin.txt")
    assert out.ok and "\ufffd" in out.text and "not valid UTF-8" in out.text, out
    edit = await call("edit_file", path="latin.txt", old_string="caf", new_string="CAF")
    assert not edit.ok and "not UTF-8" in edit.error, edit
    write = await call("write_file", path="latin.txt", content="caf\ufffd\n")
    assert not write.ok and "not UTF-8" in write.error, write
    assert (root / "latin.txt").read_bytes() == LATIN1
    # the ordinary edit next to it works
    (root / "utf8.txt").write_text("café\n")
    await call("read_file", path="utf8.txt")
    assert (await call("edit_file", path="utf8.txt", old_string="é", new_string="e")).ok
    await asyncio.sleep(0)
    await until(lambda: (root / "utf8.txt").read_text() == "cafe\n", 10, "the save")
    # deleting and re-creating it is the explicit way to replace such a file
    assert (await call("delete_file", path="latin.txt")).ok
    assert (await call("write_file", path="latin.txt", content="new\n")).ok


def _unnest(root: Path, depth: int) -> None:
    """Remove what :func:`_nest` made, bottom up (shutil.rmtree recurses: too deep)."""
    fds = [os.open(root, os.O_RDONLY | os.O_DIRECTORY)]
    try:
        for _ in range(depth):
            fds.append(os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fds[-1]))
        for name in os.listdir(fds[-1]):
            os.unlink(name, dir_fd=fds[-1])
        for parent in reversed(fds[:-1]):
            os.close(fds.pop())
            os.rmdir("d", dir_fd=parent)
    finally:
        for fd in fds:
            os.close(fd)


def _nest(root: Path, depth: int) -> str:
    """Folders ``d/d/.../d`` created without recursion; returns the relative path."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            nfd = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        os.close(os.open("f.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    return "/".join(["d"] * depth)


async def test_deep_paths_get_a_clear_error(mode: tuple[Call, Path]) -> None:
    call, root = mode
    deep = _nest(root, 2000)
    try:
        await _deep(call, root, deep)
    finally:
        _unnest(root, 2000)


async def _deep(call: Call, root: Path, deep: str) -> None:
    for name, args in (
        ("read_file", {"path": f"{deep}/f.txt"}),
        ("write_file", {"path": f"{deep}/new.txt", "content": "x"}),
        ("write_file", {"path": "e/" * 2000 + "new.txt", "content": "x"}),
        ("list_files", {"path": deep}),
        ("delete_file", {"path": f"{deep}/f.txt"}),
    ):
        out = await call(name, **args)
        assert not out.ok and "too deep" in out.error, (name, out.error[:200])
    assert not (root / "e").exists()
    ok = "/".join(["s"] * 100) + "/f.txt"  # deep, but within the limit
    assert (await call("write_file", path=ok, content="fine\n")).ok
    assert (await call("read_file", path=ok)).text == "1\tfine"


# -- memory ----------------------------------------------------------------------------------

PROBE = textwrap.dedent("""
    import asyncio, json, sys
    from think_kernel.collab import local_access
    from think_kernel.tools.base import ToolContext, ToolRegistry
    from think_kernel.tools.files import FILE_TOOLS

    def peak_mb():
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024

    async def main(root):
        ws, notebooks = local_access(root)
        ctx = ToolContext(session_id="s", workspace=ws)
        reg = ToolRegistry(FILE_TOOLS, core=True)
        call = lambda name, **a: reg.call(name, a, ctx)
        await call("read_file", path="small.txt")
        base = peak_mb()
        out = {}
        for key, name, args in (
            ("first", "read_file", {"path": "big.log"}),
            ("far", "read_file", {"path": "big.log", "offset": 9_000_000, "limit": 5}),
            ("line", "read_file", {"path": "one_line.txt"}),
            ("edit", "edit_file", {"path": "big.log", "old_string": "a", "new_string": "b"}),
        ):
            res = (await call(name, **args)).output
            out[key] = {"ok": res.ok, "text": (res.text or res.error)[-300:]}
        out["growth_mb"] = peak_mb() - base
        notebooks.documents.store.close()
        print(json.dumps(out))

    asyncio.run(main(sys.argv[1]))
""")


@pytest.fixture(scope="module")
def big_workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """500 MB of log lines, and 100 MB without a single newline."""
    root = tmp_path_factory.mktemp("big")
    block = b"".join(b"2026-11-23 12:00:00 INFO line %07d of the log\n" % i for i in range(20_000))
    with open(root / "big.log", "wb") as f:
        while f.tell() < 500 * 1024 * 1024:
            f.write(block)
    with open(root / "one_line.txt", "wb") as f:
        for _ in range(100):
            f.write(b"x" * (1 << 20))
    (root / "small.txt").write_text("warm up\n")
    yield root
    for name in ("big.log", "one_line.txt"):
        (root / name).unlink()


def test_a_500_mb_file_costs_the_kernel_under_50_mb(big_workspace: Path) -> None:
    """Measured in a fresh process (its peak RSS), as the kernel would run the tools."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run(
        [sys.executable, "-c", PROBE, str(big_workspace)],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["growth_mb"] < 50, out
    assert out["first"]["ok"] and "call read_file with offset=" in out["first"]["text"], out
    assert out["far"]["ok"] and "\n9000004\t2026-11-23" in out["far"]["text"], out
    assert out["line"]["ok"] and "[line cut]" in out["line"]["text"], out
    assert not out["edit"]["ok"] and "larger than" in out["edit"]["text"], out


async def test_server_mode_pages_a_big_file_from_disk_without_a_room(
    jp_root_dir: Path, think: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server never loads a file over the limit into a room; the agent still reads it."""
    service = think.serverapp.web_app.settings["think_documents"]
    monkeypatch.setattr(service, "max_bytes", 1 << 20)  # 1 MiB here, to keep the test small
    root = jp_root_dir
    (root / "big.log").write_bytes(b"".join(b"line %06d\n" % i for i in range(200_000)))
    link = InProcessLink(think, root)
    asked: list[str] = []

    class Watching(InProcessLink):
        async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
            asked.append(f"{method} {params.get('path')}")
            return await super().request(method, params)

    ws = CollabWorkspace(root, Watching(think, root))
    ws.max_edit_bytes = 1 << 20
    call = registry_call(ws)
    out = await call("read_file", path="big.log", offset=150_001, limit=2)
    assert out.ok and out.text.startswith("150001\tline 150000"), out
    assert not [a for a in asked if "big.log" in a], asked  # no room was asked for it
    edit = await call("edit_file", path="big.log", old_string="line", new_string="LINE")
    assert not edit.ok and "larger than" in edit.error, edit
    # and the server refuses to load it when asked directly
    refused = await link.request("doc.read", {"path": "big.log"})
    assert refused.get("code") == "TOO_LARGE", refused
