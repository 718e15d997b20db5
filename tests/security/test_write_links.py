"""Attack class: make a privileged writer (the kernel, root here) write through a link that
sandboxed code planted in the workspace, to a file outside it (issue 9: a ``.pth`` file of
the venv ran as uid 0 at the next Python start).

Real sandboxed code plants the links, on every tier; the writes come through the loopback
(``think.write_file``) and the agent's file tools. Each attack must fail with a clear error,
change nothing outside the workspace, and leave the legitimate write next to it working.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from traitlets.config import Config

from think_kernel.config import ThinkConfig
from think_kernel.runtime import Runtime
from think_kernel.sandbox import Tier

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
    it can while the kernel writes into ``d/``: no write may land outside (a check-then-write
    would lose this race)."""
    sandbox = await runtime.ensure_sandbox()
    (workspace / "d").mkdir()
    code = textwrap.dedent(f"""
        import os, time
        os.symlink({str(victim)!r}, "d_lnk")
        end, swaps = time.time() + 4, 0
        while time.time() < end:
            try:
                os.rename("d", "d_dir"); os.rename("d_lnk", "d")
                os.rename("d", "d_lnk"); os.rename("d_dir", "d")
                swaps += 1
            except OSError:
                pass
        print("swaps", swaps)
    """)
    swapper = asyncio.ensure_future(sandbox.run_python(code, fresh=True))
    results = {"written": 0, "refused": 0}
    i = 0
    while not swapper.done():
        out = await tool(runtime, "write_file", path=f"d/x{i}.pth", content=PAYLOAD)
        results["written" if out.ok else "refused"] += 1  # type: ignore[attr-defined]
        i += 1
    res = await swapper
    assert res.ok and int(res.stdout.split()[-1]) > 10, res
    assert results["written"] > 0 and i > 50, results
    untouched(victim)
