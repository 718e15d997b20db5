"""Sandboxed code finds the kernel's Python wherever it lives, and can never write it.

A Python under a home the session uid cannot enter (pyenv under a 0700 /root, Jupyter run as
root with $HOME set elsewhere) used to leave sandboxed code without its standard library
("No module named 'importlib'") and sandboxed bash without ``python``. Real sandboxes, every
tier this machine runs; $HOME points elsewhere in every test here.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_helpers import make_config

from think_kernel.sandbox import (
    Sandbox,
    SandboxConfig,
    SandboxError,
    Tier,
    available_tiers,
    envpaths,
    launch,
)

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="session")]

TIERS = available_tiers()
ROOT = os.geteuid() == 0
DEFAULT_GID = SandboxConfig().sandbox_gid
#: A group nothing on this machine grants anything: tier 1 must find its own way.
FRESH_GID = 1_650_200_000


@pytest.fixture
def elsewhere(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """$HOME set to an empty folder that is not the user's home (nor holds the Python)."""
    home = Path(tempfile.mkdtemp(prefix="think-home-elsewhere-"))
    monkeypatch.setenv("HOME", str(home))
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def workspace() -> Iterator[Path]:
    """A workspace outside pytest's basetemp (each pytest run chmods that 0700)."""
    ws = Path(tempfile.mkdtemp(prefix="think-envreach-ws-"))
    yield ws
    shutil.rmtree(ws, ignore_errors=True)


def _sid() -> str:
    return f"envreach-{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize("tier", TIERS, ids=lambda t: t.name)
async def test_python_of_the_kernel_runs_in_the_sandbox_with_home_elsewhere(
    tier: Tier, elsewhere: Path, workspace: Path
) -> None:
    # Tier 1 mounts its way to the interpreter, so it gets a group no folder grants anything;
    # tiers 2 and 3 reach it through search-only ACLs for the sandbox group.
    gid = FRESH_GID if tier == Tier.BUBBLEWRAP else DEFAULT_GID
    needed = launch.python_paths()
    # On this machine the interpreter lives under a 0700 /root; elsewhere the layout may be
    # easy, and the facts below hold all the same.
    layout = f"blocked on the way: {launch.blocked_ancestors(needed, gid)}; needed: {needed}"
    pybin = str(Path(sys.executable).parent)
    async with await Sandbox.create(workspace, _sid(), make_config(tier, sandbox_gid=gid)) as sb:
        res = await sb.run_bash(
            "command -v python python3; python -c 'import sys, importlib, warnings, threading,"
            " numpy, pandas, matplotlib; print(sys.prefix)'"
        )
        assert res.ok, (res, layout)
        assert res.stdout.split() == [f"{pybin}/python", f"{pybin}/python3", sys.prefix], layout
        warm = await sb.run_python(
            "import sys, importlib, warnings, threading, numpy, pandas, matplotlib\n"
            "print(sys.prefix, sys.base_prefix)"
        )
        assert warm.ok, (warm, layout)
        assert warm.stdout.split() == [sys.prefix, sys.base_prefix]
        # Never writable: the prefixes, the standard library, site-packages.
        if tier == Tier.RLIMITS and not ROOT:
            return  # tier 3 as the kernel's own uid isolates no files (a loud warning says so)
        targets = [Path(p) / "think-write-probe" for p in envpaths.core_paths()]
        each = " ".join(map(str, targets))
        wrote = await sb.run_bash(f'for t in {each}; do echo x > "$t" && echo "$t"; done')
        assert wrote.stdout == "", wrote
    assert [t for t in targets if t.exists()] == []


@pytest.fixture
def blocked_lib(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    """A package folder under a 0700 folder, outside /tmp and $HOME, counted as part of the
    kernel's Python (as a pyenv under a 0700 home is): (the 0700 folder, the package folder)."""
    blocked = Path(tempfile.mkdtemp(prefix="think-envreach-", dir="/var/tmp"))
    lib = blocked / "lib"
    lib.mkdir()
    (lib / "envreach_mod.py").write_text("VALUE = 42\n")
    (blocked / "secret.txt").write_text("not for the sandbox\n")
    (blocked / "secret.txt").chmod(0o600)
    real = launch.python_paths
    monkeypatch.setattr(launch, "python_paths", lambda: [*real(), str(lib)])
    yield blocked, lib
    shutil.rmtree(blocked, ignore_errors=True)


@pytest.mark.parametrize("tier", TIERS, ids=lambda t: t.name)
async def test_a_python_folder_under_a_folder_the_uid_cannot_traverse(
    tier: Tier, elsewhere: Path, workspace: Path, blocked_lib: tuple[Path, Path]
) -> None:
    blocked, lib = blocked_lib
    assert oct(blocked.stat().st_mode & 0o777) == "0o700"
    if ROOT:
        assert launch.blocked_ancestors([str(lib)], FRESH_GID) == [str(blocked)]
    gid = FRESH_GID if tier == Tier.BUBBLEWRAP else DEFAULT_GID
    async with await Sandbox.create(workspace, _sid(), make_config(tier, sandbox_gid=gid)) as sb:
        res = await sb.run_python(
            f"import sys\nsys.path.insert(0, {str(lib)!r})\nimport envreach_mod\n"
            "print(envreach_mod.VALUE)",
            fresh=True,
        )
        assert res.ok and res.stdout == "42\n", res
        probe = await sb.run_bash(
            f"echo x > {lib}/new.py && echo WROTE; cat {blocked}/secret.txt; ls {blocked}"
        )
    assert not (lib / "new.py").exists() and "WROTE" not in probe.stdout, probe
    if ROOT or tier != Tier.RLIMITS:
        # The way through is search-only (tiers 2, 3) or a tmpfs (tier 1): nothing else in
        # the blocked folder can be read or listed.
        assert "not for the sandbox" not in probe.stdout and "secret" not in probe.stdout


@pytest.mark.skipif(not ROOT, reason="a kernel that is not root runs code as its own uid")
@pytest.mark.parametrize("tier", [t for t in TIERS if t != Tier.BUBBLEWRAP], ids=lambda t: t.name)
async def test_without_acl_grants_the_start_fails_with_the_fix(
    tier: Tier, elsewhere: Path, workspace: Path, blocked_lib: tuple[Path, Path]
) -> None:
    blocked, _lib = blocked_lib
    os.chmod(workspace, 0o777)  # grant_acl False: the workspace must be open already
    cfg = make_config(tier, sandbox_gid=DEFAULT_GID, grant_acl=False)
    with pytest.raises(SandboxError) as err:
        await Sandbox.create(workspace, _sid(), cfg)
    msg = str(err.value)
    assert "cannot reach the kernel's Python" in msg, msg
    assert f"setfacl -m g:{DEFAULT_GID}:x {blocked}" in msg, msg
    assert f"{blocked} (mode 0700)" in msg, msg


@pytest.mark.parametrize("tier", TIERS, ids=lambda t: t.name)
async def test_a_python_env_inside_the_workspace_stays_read_only(
    tier: Tier, elsewhere: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv = workspace / ".venv" / "lib" / "site-packages"
    venv.mkdir(parents=True)
    (venv / "mod.py").write_text("X = 1\n")
    if tier == Tier.BUBBLEWRAP:
        # Open to all by its modes: only the sandbox's read-only mount can refuse the write.
        for p in (workspace / ".venv", workspace / ".venv" / "lib", venv):
            p.chmod(0o777)
        (venv / "mod.py").chmod(0o666)
    real = envpaths.core_paths
    monkeypatch.setattr(envpaths, "core_paths", lambda: [*real(), str(workspace / ".venv")])
    async with await Sandbox.create(workspace, _sid(), make_config(tier)) as sb:
        res = await sb.run_bash(
            f"echo x > {venv}/evil.pth && echo WROTE1; echo y >> {venv}/mod.py && echo WROTE2;"
            " echo z > beside.txt && echo BESIDE"
        )
    assert "BESIDE" in res.stdout, res  # the rest of the workspace stays writable
    if tier == Tier.RLIMITS and not ROOT or tier == Tier.LANDLOCK and not ROOT:
        return  # without a mount namespace or an own uid, only file modes could refuse
    assert "WROTE" not in res.stdout, res
    assert not (venv / "evil.pth").exists() and (venv / "mod.py").read_text() == "X = 1\n"
