"""Attack class: make a privileged writer (the kernel or the server, root here) write through
a link that sandboxed code planted in the workspace, to a file outside it (a ``.pth``
file of the venv ran as uid 0 at the next Python start).

Real sandboxed code plants the links, on every tier; the writes come through the loopback
(``think.write_file``), the agent's file tools, and in server mode through real room saves
(jupyter_server's ``.~NAME`` backup and ``.ipynb_checkpoints``). Each attack must fail with a
clear error, change nothing outside the workspace, and leave the legitimate write next to it
working.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import nbformat
import pytest
from security_server import *  # noqa: F403  (a real server: jp_*, think, peers, until)
from security_server import InProcessLink
from traitlets.config import Config

from jupyter_ext.collab.contents import ThinkContentsManager
from tests.collab.peers import wait_change
from tests.waiting import until
from think_kernel.collab.workspace import CollabWorkspace
from think_kernel.config import ThinkConfig
from think_kernel.runtime import Runtime
from think_kernel.sandbox import Sandbox, SandboxConfig, Tier

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow

PAYLOAD = "import os; os.system('touch /tmp/think-pwned')\n"


@pytest.fixture
def victim() -> Iterator[Path]:
    """Stands in for the venv's site-packages: outside the workspace, root's only."""
    d = Path(tempfile.mkdtemp(prefix="think-victim-"))
    (d / "evil.pth").write_text("original\n")
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
async def runtime(tier: Tier, workspace: Path) -> AsyncIterator[Runtime]:
    """A session on ``workspace`` whose sandbox runs on ``tier`` (no model needed)."""
    cfg = Config()
    cfg.SandboxConfig.force_tier = int(tier)
    cfg.SandboxConfig.timeout = 30
    rt = Runtime(ThinkConfig(config=cfg), workspace, extensions=[])
    await rt.start()
    try:
        yield rt
    finally:
        await rt.close()


async def tool(rt: Runtime, name: str, **args: object) -> object:
    """Call one of the agent's tools as the model would."""
    return (await rt.tools.call(name, args, rt.make_context("m", "c"))).output


def untouched(victim: Path) -> None:
    assert sorted(p.name for p in victim.iterdir()) == ["evil.pth"]
    assert (victim / "evil.pth").read_text() == "original\n"


async def test_planted_links_are_refused_through_the_loopback_and_the_tools(
    runtime: Runtime, workspace: Path, victim: Path
) -> None:
    sandbox = await runtime.ensure_sandbox()
    code = textwrap.dedent(f"""
        import json, os, think
        V = {str(victim)!r}
        os.symlink(V + "/new.pth", ".a.txt.think-tmp")   # the temp name the kernel used to use
        os.symlink(V + "/evil.pth", "target.pth")        # the final name
        os.mkdir("d")
        os.symlink(V, "d/sub")                           # a folder on the way
        os.symlink("../inner", "d/rel")                  # a link that stays inside
        os.mkdir("inner")
        out = {{}}
        for path in ("a.txt", "target.pth", "d/sub/new.pth", "d/rel/x.txt", "ok/b.txt"):
            try:
                think.write_file(path, {PAYLOAD!r})
                out[path] = "written"
            except think.ThinkError as e:
                out[path] = e.code + ": " + str(e)
        print(json.dumps(out))
    """)
    res = await sandbox.run_python(code, fresh=True)
    assert res.ok, res
    out = json.loads(res.stdout.strip().splitlines()[-1])
    # the legitimate writes next to the attacks work: the old fixed temp name is not used
    assert out["a.txt"] == "written" and out["ok/b.txt"] == "written", out
    assert (workspace / "a.txt").read_text() == PAYLOAD
    assert (workspace / ".a.txt.think-tmp").is_symlink()  # left alone, not written through
    # a link that stays inside is resolved, then the real path is written without links
    assert out["d/rel/x.txt"] == "written" and (workspace / "inner/x.txt").read_text() == PAYLOAD
    for path in ("target.pth", "d/sub/new.pth"):
        assert out[path] != "written", (path, out)
        assert "symlink" in out[path] or "symbolic link" in out[path], out[path]
    untouched(victim)

    # The agent's own tools, on the same planted links.
    for path in ("target.pth", "d/sub/new.pth"):
        out_tool = await tool(runtime, "write_file", path=path, content=PAYLOAD)
        assert not out_tool.ok and "link" in out_tool.error, (path, out_tool)  # type: ignore[attr-defined]
    (workspace / "e.txt").write_text("x = 1\n")
    assert (await tool(runtime, "read_file", path="e.txt")).ok  # type: ignore[attr-defined]
    edited = await tool(runtime, "edit_file", path="e.txt", old_string="1", new_string="2")
    assert edited.ok and (workspace / "e.txt").read_text() == "x = 2\n"  # type: ignore[attr-defined]
    untouched(victim)


async def test_a_folder_swapped_for_a_link_mid_write_is_never_followed(
    runtime: Runtime, workspace: Path, victim: Path
) -> None:
    """Sandboxed code swaps ``d`` between a real folder and a link to the victim as fast as
    it can (``renameat2(RENAME_EXCHANGE)``: ``d`` is never missing) while the kernel writes
    into ``d/``: no write may land outside (a check-then-write would lose this race)."""
    sandbox = await runtime.ensure_sandbox()
    (workspace / "d").mkdir()
    code = textwrap.dedent(f"""
        import ctypes, os, platform, time
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = {{"x86_64": 316, "aarch64": 276}}[platform.machine()]
        os.symlink({str(victim)!r}, "d_lnk")
        # Swap until the kernel has made its writes (a loaded machine makes them slow).
        end, swaps = time.time() + 20, 0
        while time.time() < end and not os.path.exists("stop"):
            if libc.syscall(renameat2, -100, b"d", -100, b"d_lnk", 2) == 0:  # EXCHANGE
                swaps += 1
                if swaps == 2000:
                    open("swapped", "w").close()
        print("swaps", swaps)
    """)
    swapper = asyncio.ensure_future(sandbox.run_python(code, fresh=True))
    link = workspace / "d_lnk"
    await until(lambda: swapper.done() or link.is_symlink() or link.is_dir(), 30, "the swapper")
    results = {"written": 0, "refused": 0}
    i = 0
    # 100 writes at least, and on until the swapper has swapped 2,000 times (a fast write
    # path makes its 100 writes before the race gets going).
    swapped = workspace / "swapped"
    while not swapper.done() and i < 5000 and (i < 100 or not swapped.exists()):
        out = await tool(runtime, "write_file", path=f"d/x{i}.pth", content=PAYLOAD)
        results["written" if out.ok else "refused"] += 1  # type: ignore[attr-defined]
        i += 1
    (workspace / "stop").write_text("")
    res = await swapper
    assert res.ok and int(res.stdout.split()[-1]) > 1000, res
    # Every call was answered (written when `d` was a folder throughout, else refused), and
    # enough of them raced the swapper to mean something.
    assert i >= 10 and results["written"] + results["refused"] == i, results
    untouched(victim)
    # The legitimate use next to it: once the race is over, writing into the folder works.
    if (workspace / "d").is_symlink():
        os.rename(workspace / "d_lnk", workspace / "d_real")
        (workspace / "d").unlink()
        os.rename(workspace / "d_real", workspace / "d")
    out = await tool(runtime, "write_file", path="d/after.txt", content="ok\n")
    assert out.ok and (workspace / "d" / "after.txt").read_text() == "ok\n"  # type: ignore[attr-defined]


async def test_room_saves_do_not_follow_planted_backup_or_checkpoint_links(
    tier: Tier, jp_serverapp, jp_root_dir: Path, think, peers, victim: Path
) -> None:
    """A person's tab and the agent edit files through their rooms; jupyter_server would copy
    to ``.~NAME`` and into ``.ipynb_checkpoints/`` through the planted links."""
    assert isinstance(jp_serverapp.contents_manager, ThinkContentsManager)
    root = jp_root_dir
    (root / "a.txt").write_text("v1\n")
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell("x = 1"))
    nbformat.write(nb, root / "nb.ipynb")
    sandbox = await Sandbox.create(root, f"sec-{int(tier)}", SandboxConfig(force_tier=int(tier)))
    try:
        code = textwrap.dedent(f"""
            import os
            V = {str(victim)!r}
            os.symlink(V + "/evil.pth", ".~a.txt")          # jupyter_server's backup name
            os.symlink(V + "/evil.pth", ".~nb.ipynb")
            os.symlink(V, ".ipynb_checkpoints")             # where checkpoints are copied
            print("planted")
        """)
        res = await sandbox.run_python(code, fresh=True)
        assert res.ok and "planted" in res.stdout, res
    finally:
        await sandbox.close()

    tab = await peers("a.txt")
    tab.type_at(tab.text(), 0, "# typed by a person\n")
    await until(lambda: (root / "a.txt").read_text() == "# typed by a person\nv1\n",
                10, "the room's save")  # fmt: skip
    book = await peers("nb.ipynb")
    book.type_at(book.cell_text(book.doc.ycells[0]["id"]), 0, "y = 2\n")
    await until(lambda: "y = 2" in (root / "nb.ipynb").read_text(), 10, "the notebook save")
    untouched(victim)

    # The agent, through the same rooms (doc.* RPCs, as a linked kernel calls them).
    ws = CollabWorkspace(root, InProcessLink(think, root))
    text = await ws.read_text("a.txt")
    await ws.write_text("a.txt", text + "# the agent\n")
    await wait_change(tab, lambda: "# the agent" in str(tab.text()))
    await until(lambda: "# the agent" in (root / "a.txt").read_text(), 10, "the agent's save")
    untouched(victim)
    assert (root / ".~a.txt").is_symlink() and (root / ".ipynb_checkpoints").is_symlink()
