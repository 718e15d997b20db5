"""Attack class: one session reaches another's private files through the tools.

The kernel is root and each session's sandbox runs under a uid of its own, so session A can
close a file (``chmod 600``) or a folder (``chmod 700``) to session B's code. The agent's file
and notebook tools and the loopback (``import think``) run in the kernel, as root: they must
act with the calling session's rights, or B's agent, or B's code through ``think``, reads,
lists, overwrites, edits and deletes what B's code itself cannot. Two runtimes on one
workspace, as two notebooks of one server, on every tier.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
import textwrap
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import nbformat
import pytest
from security_server import *  # noqa: F403  (a real server: jp_*, think, peers)
from security_server import InProcessLink
from traitlets.config import Config

from tests.collab.peers import wait_change
from tests.waiting import until
from think_kernel.collab.access import LinkNotebookAccess
from think_kernel.collab.workspace import CollabWorkspace
from think_kernel.config import ThinkConfig
from think_kernel.runtime import Runtime
from think_kernel.sandbox import Tier
from think_kernel.sandbox.asuser import Identity, SessionFiles, _current
from think_kernel.sandbox.probes.sessions import tools_as_session
from think_kernel.tools.base import ToolOutput

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow

SECRET = "a's secret\n"

# A's sandboxed code makes a private file, a private folder (with a file in it) and a private
# notebook, and a file it shares.
MAKE_PRIVATE = textwrap.dedent("""
    import json, os
    with open("secret.txt", "w") as f:
        f.write("a's secret\\n")
    os.chmod("secret.txt", 0o600)
    os.mkdir("private")
    with open("private/inner.txt", "w") as f:
        f.write("a's secret\\n")
    os.symlink("../shared.txt", "private/to-shared")
    os.chmod("private", 0o700)
    nb = {"cells": [{"cell_type": "code", "id": "c1", "metadata": {}, "outputs": [],
                     "execution_count": None, "source": "secret = 1"}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    with open("secret.ipynb", "w") as f:
        json.dump(nb, f)
    os.chmod("secret.ipynb", 0o600)
    with open("shared.txt", "w") as f:
        f.write("shared\\n")
    print("made")
""")

RuntimeFactory = Callable[[str], AbstractAsyncContextManager[Runtime]]


def runtimes(tier: Tier, workspace: Path, link: Any = None) -> RuntimeFactory:
    """``async with factory(name) as rt``: a session on the shared workspace whose sandbox
    (started) runs on ``tier``; with ``link``, its files and notebooks go through the
    server's rooms, as a linked kernel's do."""

    @asynccontextmanager
    async def factory(name: str) -> AsyncIterator[Runtime]:
        cfg = Config()
        cfg.SandboxConfig.force_tier = int(tier)
        cfg.SandboxConfig.timeout = 30
        cfg.SandboxConfig.preload_modules = []
        ws = None if link is None else CollabWorkspace(workspace, link)
        rt = Runtime(ThinkConfig(config=cfg), workspace, extensions=[], session_id=f"s_{name}",
                     workspace=ws)  # fmt: skip
        if link is not None:
            rt.services.notebooks = LinkNotebookAccess(link)
        await rt.start()
        try:
            await rt.ensure_sandbox()
            yield rt
        finally:
            await rt.close()

    return factory


@pytest.fixture
def open_runtime(tier: Tier, workspace: Path) -> RuntimeFactory:
    """Standalone sessions (local files, the kernel's own document history)."""
    return runtimes(tier, workspace)


async def tool(rt: Runtime, name: str, **args: object) -> ToolOutput:
    """Call one of the agent's tools as the model would."""
    return (await rt.tools.call(name, args, rt.make_context("m", "c"))).output


def refused(out: ToolOutput, verb: str, path: str) -> bool:
    """A refusal that tells the model why."""
    return not out.ok and f"permission denied: this session cannot {verb} {path!r}" in out.error


def untouched(workspace: Path) -> None:
    assert (workspace / "secret.txt").read_text() == SECRET
    assert sorted(p.name for p in (workspace / "private").iterdir()) == ["inner.txt", "to-shared"]
    assert (workspace / "private" / "inner.txt").read_text() == SECRET
    assert nbformat.read(workspace / "secret.ipynb", 4).cells[0].source == "secret = 1"


async def test_another_sessions_agent_tools_are_refused(
    open_runtime: RuntimeFactory, workspace: Path
) -> None:
    async with open_runtime("a") as a, open_runtime("b") as b:
        assert a.sandbox and b.sandbox and a.sandbox.identity != b.sandbox.identity
        made = await a.sandbox.run_python(MAKE_PRIVATE, fresh=True)
        assert made.stdout == "made\n", made
        # B's own code cannot reach them (what the tools must match).
        own = await b.sandbox.run_bash("cat secret.txt private/inner.txt; ls private; echo end")
        assert "secret" not in own.stdout and own.stdout.endswith("end\n"), own

        out = await tool(b, "read_file", path="secret.txt")
        assert refused(out, "read", "secret.txt"), out
        out = await tool(b, "read_file", path="private/inner.txt")
        assert refused(out, "read", "private/inner.txt"), out
        out = await tool(b, "list_files", path="private")
        assert refused(out, "list", "private"), out
        assert "inner.txt" not in out.text
        # Read before A closed them (or by a path that skipped the check): still refused.
        b.read_paths.update({"secret.txt", "private/inner.txt", "secret.ipynb"})
        out = await tool(b, "write_file", path="secret.txt", content="b was here\n")
        assert refused(out, "write", "secret.txt"), out
        out = await tool(b, "write_file", path="private/new.txt", content="b was here\n")
        assert refused(out, "write", "private/new.txt"), out
        # A link in A's folder leads to a file B may write: B cannot reach the link itself.
        b.read_paths.add("private/to-shared")
        out = await tool(b, "write_file", path="private/to-shared", content="b was here\n")
        assert refused(out, "write", "private/to-shared"), out
        assert (workspace / "shared.txt").read_text() == "shared\n"
        out = await tool(b, "edit_file", path="secret.txt", old_string="a's", new_string="b's")
        assert refused(out, "read", "secret.txt"), out
        out = await tool(b, "delete_file", path="secret.txt")
        assert refused(out, "delete", "secret.txt"), out
        out = await tool(b, "delete_file", path="private/inner.txt")
        assert refused(out, "delete", "private/inner.txt"), out
        # The notebook tools (the document history and the notebook's kernel are root's).
        out = await tool(b, "read_notebook", path="secret.ipynb")
        assert refused(out, "read", "secret.ipynb"), out
        out = await tool(b, "insert_cell", path="secret.ipynb", index=0, source="print('b')")
        assert refused(out, "write", "secret.ipynb"), out
        out = await tool(b, "edit_cell", path="secret.ipynb", cell_id="c1", source="b = 1")
        assert refused(out, "write", "secret.ipynb"), out
        out = await tool(b, "delete_cell", path="secret.ipynb", cell_id="c1")
        assert refused(out, "write", "secret.ipynb"), out
        out = await tool(b, "execute_cell", path="secret.ipynb", cell_id="c1", timeout=10)
        assert refused(out, "write", "secret.ipynb"), out
        # The history holds what the file was: its versions are A's too.
        out = await tool(b, "list_versions", path="secret.txt")
        assert refused(out, "read", "secret.txt"), out
        out = await tool(b, "revert", path="secret.txt", version=1)
        assert refused(out, "write", "secret.txt"), out
        untouched(workspace)

        # The legitimate use: B works on what it may; A on its own private files.
        assert (await tool(b, "read_file", path="shared.txt")).ok
        out = await tool(b, "edit_file", path="shared.txt", old_string="shared", new_string="b")
        assert out.ok and (workspace / "shared.txt").read_text() == "b\n", out
        assert (await tool(b, "write_file", path="b-made.txt", content="b\n")).ok
        out = await tool(a, "read_file", path="secret.txt")
        assert out.ok and "a's secret" in out.text, out
        out = await tool(a, "list_files", path="private")
        assert out.ok and "private/inner.txt" in out.text, out
        out = await tool(a, "edit_file", path="secret.txt", old_string="a's", new_string="A's")
        assert out.ok and (workspace / "secret.txt").read_text() == "A's secret\n", out
        assert (await tool(a, "read_file", path="private/inner.txt")).ok
        assert (await tool(a, "delete_file", path="private/inner.txt")).ok
        assert not (workspace / "private" / "inner.txt").exists()
        out = await tool(a, "read_notebook", path="secret.ipynb")
        assert out.ok and "secret = 1" in out.text, out
        out = await tool(a, "edit_cell", path="secret.ipynb", cell_id="c1", source="secret = 2")
        assert out.ok, out
        assert nbformat.read(workspace / "secret.ipynb", 4).cells[0].source == "secret = 2"
        # What A's session reads back after its tools wrote stays A's alone.
        after = await b.sandbox.run_bash("cat secret.txt secret.ipynb 2>/dev/null; echo end")
        assert after.stdout == "end\n", after


LOOPBACK = textwrap.dedent("""
    import json, think
    out = {}
    for what, call in (
        ("read", lambda: think.read_file("secret.txt")),
        ("read inner", lambda: think.read_file("private/inner.txt")),
        ("list", lambda: think.list_files("private")),
        ("overwrite", lambda: think.write_file("secret.txt", "b was here\\n")),
        ("create inside", lambda: think.write_file("private/new.txt", "b was here\\n")),
        ("shared", lambda: think.read_file("shared.txt")),
    ):
        try:
            out[what] = "DID " + call()
        except think.ThinkError as e:
            out[what] = str(e)
    print(json.dumps(out))
""")


async def test_another_sessions_loopback_is_refused(
    open_runtime: RuntimeFactory, workspace: Path
) -> None:
    async with open_runtime("a") as a, open_runtime("b") as b:
        assert a.sandbox and b.sandbox
        made = await a.sandbox.run_python(MAKE_PRIVATE, fresh=True)
        assert made.stdout == "made\n", made
        res = await b.sandbox.run_python(LOOPBACK, fresh=True)
        assert res.ok, res
        out = json.loads(res.stdout.strip().splitlines()[-1])
        expected = {
            "read": ("read", "secret.txt"),
            "read inner": ("read", "private/inner.txt"),
            "list": ("list", "private"),
            "overwrite": ("write", "secret.txt"),
            "create inside": ("write", "private/new.txt"),
        }
        for what, (verb, path) in expected.items():
            assert f"permission denied: this session cannot {verb} {path!r}" in out[what], out
        assert out["shared"] == "DID 1\tshared", out  # the legitimate use next to it
        untouched(workspace)
        # A's own code reaches its files through think.
        mine = await a.sandbox.run_python(
            "import think\nprint(think.read_file('private/inner.txt'))\n"
            "print(think.list_files('private'))\nthink.read_file('secret.txt')\n"
            "print(think.write_file('secret.txt', 'rewritten by a\\n'))",
            fresh=True,
        )
        assert mine.ok and "a's secret" in mine.stdout and "private/inner.txt" in mine.stdout, mine
        assert (workspace / "secret.txt").read_text() == "rewritten by a\n"


async def test_the_doctor_probe_finds_the_tools_acting_as_the_session(
    open_runtime: RuntimeFactory, workspace: Path
) -> None:
    async with open_runtime("a") as a, open_runtime("b") as b:
        assert a.sandbox and b.sandbox
        probe = await tools_as_session(a.sandbox, b.sandbox, workspace)
        assert probe.contained, probe
        assert probe.attack.startswith("another session")


async def test_room_edits_of_another_session_are_refused_before_they_are_sent(
    tier: Tier, jp_root_dir: Path, think: Any, peers: Any
) -> None:
    """With a server, reads and edits go through its rooms (the server is root too): the
    check comes first, so nothing reaches a room a person has open."""
    factory = runtimes(tier, jp_root_dir, InProcessLink(think, jp_root_dir))
    async with factory("a") as a, factory("b") as b:
        assert a.sandbox and b.sandbox
        made = await a.sandbox.run_python(MAKE_PRIVATE, fresh=True)
        assert made.stdout == "made\n", made
        tab = await peers("secret.txt")  # a person has A's file open: its room is loaded
        await until(lambda: str(tab.text()) == SECRET, 10, "the room's text")
        b.read_paths.update({"secret.txt", "secret.ipynb"})
        out = await tool(b, "read_file", path="secret.txt")
        assert refused(out, "read", "secret.txt"), out
        out = await tool(b, "edit_file", path="secret.txt", old_string="a's", new_string="b's")
        assert refused(out, "read", "secret.txt"), out
        out = await tool(b, "write_file", path="secret.txt", content="b was here\n")
        assert refused(out, "write", "secret.txt"), out
        out = await tool(b, "delete_file", path="secret.txt")
        assert refused(out, "delete", "secret.txt"), out
        out = await tool(b, "read_notebook", path="secret.ipynb")
        assert refused(out, "read", "secret.ipynb"), out
        out = await tool(b, "edit_cell", path="secret.ipynb", cell_id="c1", source="b = 1")
        assert refused(out, "write", "secret.ipynb"), out
        res = await b.sandbox.run_python(LOOPBACK, fresh=True)
        out_lb = json.loads(res.stdout.strip().splitlines()[-1])
        assert "permission denied: this session cannot read 'secret.txt'" in out_lb["read"]
        assert "permission denied: this session cannot write 'secret.txt'" in out_lb["overwrite"]
        assert str(tab.text()) == SECRET
        untouched(jp_root_dir)
        # A edits its own file through the room the person has open.
        assert (await tool(a, "read_file", path="secret.txt")).ok
        out = await tool(a, "edit_file", path="secret.txt", old_string="a's", new_string="A's")
        assert out.ok, out
        await wait_change(tab, lambda: str(tab.text()) == "A's secret\n")
        out = await tool(a, "read_notebook", path="secret.ipynb")
        assert out.ok and "secret = 1" in out.text, out


async def test_the_files_thread_changes_only_its_own_credentials(workspace: Path) -> None:
    """The session's rights live in one thread: the kernel's other threads keep root's."""
    secret = workspace / "root-only.txt"
    secret.write_text("root\n")
    secret.chmod(0o600)
    files = SessionFiles(Identity(1_600_999_001, 1_600_999_002, (1_600_999_003,)))
    try:
        ids = await files.run(lambda: (_current(), os.getuid(), os.geteuid()))
        assert ids == ((1_600_999_001, 1_600_999_002, (1_600_999_003,)), 0, 0)
        with pytest.raises(PermissionError):
            await files.run(secret.read_text)
        assert await asyncio.to_thread(secret.read_text) == "root\n"  # another thread: root
        assert _current() == (0, 0, tuple(sorted(os.getgroups()))) and secret.read_text()
    finally:
        files.close()


async def test_folders_above_the_workspace_need_not_let_the_session_through(tier: Tier) -> None:
    """The tools reach the workspace root with the kernel's rights (the kernel chose it) and
    need the session's from there on: a folder above made private (``chmod 700``, which also
    resets the ACL that let the session's uid through) does not stop them."""
    parent = Path(tempfile.mkdtemp(prefix="think-sec-above-"))
    try:
        ws = parent / "ws"
        ws.mkdir()
        (ws / "shared.txt").write_text("shared\n")
        async with runtimes(tier, ws)("a") as a:
            assert a.sandbox
            os.chmod(parent, 0o700)
            out = await tool(a, "read_file", path="shared.txt")
            assert out.ok and "shared" in out.text, out
            out = await tool(a, "write_file", path="new.txt", content="new\n")
            assert out.ok and (ws / "new.txt").read_text() == "new\n", out
            out = await tool(a, "list_files", path=".")
            assert out.ok and "new.txt" in out.text, out
    finally:
        shutil.rmtree(parent, ignore_errors=True)


SWAPPER = textwrap.dedent("""
    import ctypes, os, platform, time
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = {"x86_64": 316, "aarch64": 276}[platform.machine()]
    # Exchange A's private folder and B's own one (same parent: no right on A's folder is
    # needed) every half millisecond, until the kernel has made its writes. (Nonstop, the
    # renames would stall the kernel's own path lookups and leave few writes to race.)
    end, swaps = time.time() + 30, 0
    while time.time() < end and not os.path.exists("stop"):
        if libc.syscall(renameat2, -100, b"mine", -100, b"private", 2) == 0:  # EXCHANGE
            swaps += 1
            if swaps == 200:
                open("swapped", "w").close()
        time.sleep(0.0005)
    print("swaps", swaps)
""")


async def test_a_folder_swapped_between_check_and_write_is_never_written(
    open_runtime: RuntimeFactory, workspace: Path
) -> None:
    """B's code swaps its own folder with A's private one while B's agent writes into its
    own: a check as B followed by a write as root would land in A's folder some of the time.
    The write happens as B, so it lands in B's folder or is refused."""
    async with open_runtime("a") as a, open_runtime("b") as b:
        assert a.sandbox and b.sandbox
        made = await a.sandbox.run_bash(
            'mkdir private && echo "a\'s secret" > private/f.txt && chmod 700 private && echo ok'
        )
        assert made.stdout == "ok\n", made
        mine = await b.sandbox.run_bash("mkdir mine && echo mine > mine/f.txt && echo ok")
        assert mine.stdout == "ok\n", mine
        swapper = asyncio.ensure_future(b.sandbox.run_python(SWAPPER, fresh=True, timeout=60))
        await until(lambda: swapper.done() or (workspace / "swapped").exists(), 30, "swaps")
        b.read_paths.add("mine/f.txt")
        results = {"written": 0, "refused": 0}
        for i in range(300):
            out = await tool(b, "write_file", path="mine/f.txt", content=f"b wrote {i}\n")
            results["written" if out.ok else "refused"] += 1
            if swapper.done():
                break
        (workspace / "stop").write_text("")
        res = await swapper
        assert res.ok and int(res.stdout.split()[-1]) > 200, res
        assert results["written"] + results["refused"] >= 10, results
        # Wherever the folders ended up, A's file holds A's text and B's holds B's.
        for name in ("private", "mine"):
            text = (workspace / name / "f.txt").read_text()
            owner = (workspace / name).stat().st_uid
            if owner == a.sandbox.identity[0]:  # type: ignore[index]
                assert text == "a's secret\n", (name, text, results)
            else:
                assert text == "mine\n" or text.startswith("b wrote"), (name, text)
        # The legitimate use: once the race is over, B writes into its own folder.
        if (workspace / "mine").stat().st_uid != b.sandbox.identity[0]:  # type: ignore[index]
            os.rename(workspace / "mine", workspace / "tmp")
            os.rename(workspace / "private", workspace / "mine")
            os.rename(workspace / "tmp", workspace / "private")
        out = await tool(b, "write_file", path="mine/g.txt", content="b, after\n")
        assert out.ok and (workspace / "mine" / "g.txt").read_text() == "b, after\n", out
