"""Review mode in the sandbox, on every way this machine can build the view: a real session
(runtime, store, proposal, sandbox) whose ``bash`` and ``execute_code`` runs see the workspace
with the proposal applied, write to the proposal, and never touch the live files.

Ways: tier 1 with an overlay-capable bwrap (``overlay``), tier 1 with a bwrap without
``--overlay`` (``copy``: the system bwrap 0.8 here), tiers 2 and 3 (``copy``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from tests.layers import starts_processes
from tests.waiting import until
from think_kernel.config import ThinkConfig
from think_kernel.proposals import KEEP, Proposal
from think_kernel.runtime import Runtime
from think_kernel.sandbox import Tier, available_tiers
from think_kernel.sandbox.reviewruns import review_folder
from think_kernel.sandbox.tiers import overlay_bwrap

HELPER = "def answer():\n    return 1\n"
PROPOSED_HELPER = "def answer():\n    return 2\n"
TEST = "from helper import answer\n\n\ndef test_answer():\n    assert answer() == 2\n"
PYTEST = "python -m pytest -q -p no:cacheprovider test_helper.py"


def _ways() -> list[Any]:
    tiers = available_tiers()
    ways = []
    if Tier.BUBBLEWRAP in tiers:
        if overlay_bwrap("", review_folder("").parent):
            ways.append(pytest.param((Tier.BUBBLEWRAP, "", "overlay"), id="tier1-overlay"))
        plain = shutil.which("bwrap")
        if plain and not overlay_bwrap(plain, review_folder("").parent):
            ways.append(pytest.param((Tier.BUBBLEWRAP, plain, "copy"), id="tier1-copy"))
    for tier in (Tier.LANDLOCK, Tier.RLIMITS):
        if tier in tiers:
            ways.append(pytest.param((tier, "", "copy"), id=f"tier{int(tier)}-copy"))
    return ways


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture(params=_ways())
@starts_processes
async def session(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Runtime, Path, str]]:
    """A session in review mode on a fresh workspace, its sandbox started on the way."""
    tier, bwrap, mode = request.param
    # Not under pytest's basetemp (its 0700 parents would keep the session's uid out).
    ws = Path(tempfile.mkdtemp(prefix="think-review-ws-"))
    store = Path(tempfile.mkdtemp(prefix="think-review-store-"))
    (ws / "helper.py").write_text(HELPER)
    (ws / "test_helper.py").write_text(TEST)
    (ws / "old.txt").write_text("old\n")
    (ws / "data").mkdir()
    (ws / "data" / "a.txt").write_text("a\n")
    cfg = Config()
    cfg.SandboxConfig.force_tier = int(tier)
    cfg.SandboxConfig.bwrap_path = bwrap
    cfg.SandboxConfig.timeout = 60
    cfg.SandboxConfig.preload_modules = []
    cfg.ThinkConfig.review_mode = True
    cfg.ThinkConfig.store_path = str(store / "think.db")
    rt = Runtime(ThinkConfig(config=cfg), ws, extensions=[], session_id="s_review")
    await rt.start()
    try:
        await rt.ensure_sandbox()
        yield rt, ws, mode
    finally:
        await rt.close()
        shutil.rmtree(ws, ignore_errors=True)
        shutil.rmtree(store, ignore_errors=True)


async def tool(rt: Runtime, name: str, **args: object) -> Any:
    """Call one of the agent's tools as the model would."""
    return (await rt.tools.call(name, args, rt.make_context("m", f"c_{name}"))).output


async def test_the_proposals_tests_pass_in_review_and_fail_live(session: Any) -> None:
    rt, ws, mode = session
    live = _snapshot(ws)
    # The agent changes the helper with its file tool: the change goes to the proposal.
    await tool(rt, "read_file", path="helper.py")
    await tool(rt, "write_file", path="helper.py", content=PROPOSED_HELPER)
    proposal = Proposal.of(rt)
    assert await proposal.read("helper.py") == PROPOSED_HELPER.encode()
    out = await tool(rt, "bash", command=PYTEST)
    assert out.ok and "1 passed" in out.text, out.text
    assert rt.sandbox is not None and rt.sandbox.review_mode == mode
    # What the run writes, changes and deletes goes to the proposal.
    out = await tool(
        rt,
        "bash",
        command="mkdir -p made && echo new > made/new.txt && echo more >> test_helper.py"
        " && rm old.txt && rm -r data && mkdir data && echo c > data/c.txt",
    )
    assert out.ok, out.text
    assert await proposal.read("made/new.txt") == b"new\n"
    assert await proposal.read("test_helper.py") == (TEST + "more\n").encode()
    assert await proposal.read("old.txt") is None
    # A folder removed and made again (an opaque folder in an overlay): its old files go.
    assert await proposal.read("data/a.txt") is None
    assert await proposal.read("data/c.txt") == b"c\n"
    change = await proposal.get("old.txt")
    assert change is not None and change.base == b"old\n"
    assert (
        "[proposal: created data/c.txt, made/new.txt; modified test_helper.py;"
        " deleted data/a.txt, old.txt]" in out.text
    ), out.text
    # The live files are byte-identical, and their own test fails there.
    assert _snapshot(ws) == live
    await rt.store.change_session_options(rt.session_id, {"review": False})
    out = await tool(rt, "bash", command=PYTEST)
    assert not out.ok and "1 failed" in out.text, out.text
    assert "review mode is off" in out.text
    assert rt.sandbox.review_mode == ""


async def test_tool_edits_reach_the_warm_worker_without_a_restart(session: Any) -> None:
    rt, ws, mode = session
    out = await tool(rt, "execute_code", code="kept = 41\nprint(open('helper.py').read())")
    assert out.ok and "return 1" in out.text, out.text
    await tool(rt, "read_file", path="helper.py")
    await tool(rt, "write_file", path="helper.py", content=PROPOSED_HELPER)
    await tool(rt, "write_file", path="pkg/added.py", content="X = 3\n")
    code = "ns = {}\nexec(open('helper.py').read(), ns)\nprint(kept + 1, ns['answer']())"
    out = await tool(rt, "execute_code", code=code)
    assert out.ok and "42 2" in out.text, out.text
    out = await tool(rt, "bash", command="cat pkg/added.py")
    assert "X = 3" in out.text
    # A person's change to a live file (saved by a rename, as the rooms save) is seen too.
    tmp = ws / ".old.txt.tmp"
    tmp.write_text("edited by a person\n")
    os.replace(tmp, ws / "old.txt")
    out = await tool(rt, "bash", command="cat old.txt")
    assert "edited by a person" in out.text, out.text
    assert (ws / "helper.py").read_text() == HELPER and not (ws / "pkg").exists()
    status = {row.name: row for row in rt.sandbox.limits()}
    assert status["review"].value == mode


async def test_a_background_jobs_files_reach_the_proposal(session: Any) -> None:
    rt, ws, mode = session
    await tool(rt, "bash", command="true")  # the view is built
    job = await rt.jobs.start(rt.session_id, "echo from a job > job.txt && rm old.txt")
    await job.ended.wait()
    proposal = Proposal.of(rt)

    async def both() -> bool:
        return await proposal.paths() == ["job.txt", "old.txt"]

    await until(both, what="the job's files in the proposal")
    assert await proposal.read("job.txt") == b"from a job\n"
    assert await proposal.read("old.txt") is None
    assert not (ws / "job.txt").exists() and (ws / "old.txt").read_text() == "old\n"


async def test_no_write_leaves_the_workspace_or_follows_a_link(session: Any) -> None:
    rt, ws, mode = session
    outside = Path(tempfile.mkdtemp(prefix="think-review-outside-"))
    try:
        os.chmod(outside, 0o755)  # the session's uid may read, never write, it
        (outside / "kept.txt").write_text("outside\n")
        (ws / "linked").symlink_to(outside)
        (ws / "inner").mkdir()
        (ws / "via").symlink_to("inner")  # a link that stays inside: still never followed
        proposal = Proposal.of(rt)
        # A proposed file under a folder that is a link in the workspace, and paths that
        # climb out, put in the store's rows directly (the tools refuse them earlier).
        await proposal.set("linked/evil.txt", None, b"evil\n")
        await proposal.set("../escape.txt", None, b"escape\n")
        await proposal.set("linked/kept.txt", b"outside\n", b"overwritten\n")
        await proposal.set("via/x.txt", None, b"through a link\n")
        # Sandboxed code plants links in the view: to a file and a folder outside.
        out = await tool(
            rt,
            "bash",
            command=f"ln -s /etc/passwd leak.txt; ln -s {outside} out; echo hi > inside.txt;"
            " test -e inner/x.txt && echo LEAKED || echo CLEAN",
        )
        assert "linked/evil.txt could not be put in the run's view" in out.text, out.text
        assert "via/x.txt could not be put in the run's view" in out.text, out.text
        assert "CLEAN" in out.text, out.text
        assert "links are not proposed: leak.txt, out" in out.text, out.text
        assert sorted(os.listdir(outside)) == ["kept.txt"]
        assert (outside / "kept.txt").read_text() == "outside\n"
        assert not (ws.parent / "escape.txt").exists()
        assert await proposal.read("leak.txt") is KEEP and await proposal.read("out") is KEEP
        assert await proposal.read("inside.txt") == b"hi\n"
        # The live workspace got none of it.
        assert await proposal.read("inner/x.txt") is KEEP
        assert sorted(os.listdir(ws)) == [
            "data", "helper.py", "inner", "linked", "old.txt", "test_helper.py", "via"]  # fmt: skip
        assert os.listdir(ws / "inner") == []
    finally:
        shutil.rmtree(outside, ignore_errors=True)
