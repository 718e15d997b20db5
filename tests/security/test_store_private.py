"""Attack class: reaching Think's store. The store lives in
``<jupyter data dir>/think/<hash of root>/``; sandboxed code must not read, write, rename or
create anything there, on any tier, while the workspace stays fully usable."""

from __future__ import annotations

import os
import shutil
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import SandboxFactory

from think_kernel.sandbox import Tier


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A Jupyter data dir outside $HOME and /tmp (so nothing else hides it), holding a store
    created with loose modes, the worst case: 0755 folders, a 0644 database."""
    data = Path(tempfile.mkdtemp(prefix="think-sec-data-", dir="/var/tmp"))
    data.chmod(0o755)
    folder = data / "think" / "0123abcd"
    folder.mkdir(parents=True)
    for d in (data / "think", folder):
        d.chmod(0o755)
    db = folder / "think.db"
    db.write_text("the audit log")
    db.chmod(0o644)
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(data))
    yield folder
    shutil.rmtree(data, ignore_errors=True)


async def test_store_folder_is_out_of_reach(
    open_sandbox: SandboxFactory, tier: Tier, store: Path
) -> None:
    root = store.parent  # <data dir>/think
    code = textwrap.dedent(f"""
        import os
        folder, root = {str(store)!r}, {str(root)!r}
        tries = {{
            "read": lambda: open(folder + "/think.db").read(),
            "list": lambda: os.listdir(root),
            "write": lambda: open(folder + "/think.db", "a").write("tampered"),
            "create": lambda: open(folder + "/planted.txt", "w").write("x"),
            "mkdir": lambda: os.mkdir(root + "/new"),
            "rename": lambda: os.rename(folder, root + "/moved"),
            "rename-root": lambda: os.rename(root, root + "-moved"),
            "replace": lambda: os.replace(os.environ["TMPDIR"], folder),
            "chmod": lambda: os.chmod(folder + "/think.db", 0o666),
            "symlink": lambda: os.symlink("/etc/passwd", folder + "/link"),
        }}
        for name, attempt in tries.items():
            try:
                got = attempt()
                # Tier 1 shows an empty folder in the store's place: nothing reached.
                print("DENIED", name, "(empty)" if got == [] else "", "" if got == [] else "DID")
            except OSError as e:
                print("DENIED", name, e.errno)
        open("in-workspace.txt", "w").write("fine")
        os.rename("in-workspace.txt", "renamed.txt")
        print("WORKSPACE", open("renamed.txt").read())
    """)
    async with open_sandbox("store") as sb:
        for fresh in (True, False):
            res = await sb.run_python(code, fresh=fresh)
            assert res.ok, res
            assert "DID" not in res.stdout, res.stdout
            assert res.stdout.count("DENIED") == 10 and "WORKSPACE fine" in res.stdout, res
        bres = await sb.run_bash(f"cat {store}/think.db; ls {root}; touch {store}/b; echo end")
        assert bres.stdout == "end\n", bres
    assert (store / "think.db").read_text() == "the audit log"
    assert os.listdir(root) == [store.name] and os.listdir(store) == ["think.db"]


async def test_private_folders_inside_the_workspace_stay_private(
    open_sandbox: SandboxFactory, tier: Tier, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``jupyter lab`` started in the home folder: the workspace contains the Jupyter data dir
    (the store) and the runtime dir (kernel keys, server tokens). Granting the workspace to the
    sandbox must not grant those (on tier 3 their modes are all that keeps a session out)."""
    data, runtime = workspace / "data", workspace / "runtime"
    store = data / "think" / "ws-0123abcd"
    store.mkdir(parents=True)
    runtime.mkdir(mode=0o700)
    (store / "think.db").write_text("the audit log")
    (runtime / "kernel-1.json").write_text('{"key": "kernel-secret"}')
    (runtime / "kernel-1.json").chmod(0o600)
    (workspace / "notes.txt").write_text("shared")
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(data))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    code = textwrap.dedent(f"""
        for p in ({str(store / "think.db")!r}, {str(runtime / "kernel-1.json")!r}):
            try:
                print("READ", open(p).read())
            except OSError as e:
                print("DENIED", e.errno)
        print("WORKSPACE", open("notes.txt").read())
    """)
    async with open_sandbox("home") as sb:
        res = await sb.run_python(code, fresh=True)
    assert res.ok, res
    assert "READ" not in res.stdout and res.stdout.count("DENIED") == 2, res.stdout
    assert "WORKSPACE shared" in res.stdout
    # and no ACL entry was added to them (a later tier or a chmod must not open them)
    for p in (store, store / "think.db", runtime, runtime / "kernel-1.json"):
        assert not os.listxattr(p, follow_symlinks=False) or all(
            "posix_acl" not in a for a in os.listxattr(p, follow_symlinks=False)
        ), p
