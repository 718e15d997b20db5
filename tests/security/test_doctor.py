"""Users can see it: ``jupyter think doctor`` and ``%think_doctor`` run the
containment probes on this machine; ``%think_status`` shows every limit and its mechanism."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from tests.kernel.conftest import Kernel, kernel_env, markdown_of, start_kernel
from think_kernel.sandbox import Sandbox, SandboxConfig, Tier, available_tiers, envpaths, launch
from think_kernel.sandbox.probes import python_env, python_env_writes

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow

ATTACKS = ("the Python environment", "the kernel's Python: write", "network",
           "host sockets", "files", "secrets", "the store", "the history store",
           "the kernel process", "its own launcher", "another session: signal",
           "another session: its private files", "fork bomb", "memory", "disk",
           "a wedged launcher", "output scripting", "planted skill and tool")  # fmt: skip


def verdicts(markdown: str) -> dict[str, dict[str, bool]]:
    """{tier heading: {attack: contained}} from the doctor's Markdown."""
    out: dict[str, dict[str, bool]] = {}
    tier = ""
    for line in markdown.splitlines():
        if line.startswith("**tier "):
            tier = line.strip("*").split(" (")[0]
            out[tier] = {}
        elif tier and line.startswith("| ") and line.count("|") == 4:
            attack, contained = (c.strip() for c in line.strip("|").split("|")[:2])
            if contained in ("yes", "**NO**"):
                out[tier][attack] = contained == "yes"
    return out


def test_cli_doctor_probes_every_tier() -> None:
    exe = Path(sys.executable).parent / "jupyter-think"
    proc = subprocess.run([str(exe), "doctor", "--all-tiers"], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    found = verdicts(proc.stdout)
    assert sorted(found) == [f"tier {int(t)}" for t in available_tiers()], proc.stdout
    for tier, results in found.items():
        assert [a for a in ATTACKS if not any(k.startswith(a) for k in results)] == [], results
        if tier == "tier 3":  # no file or network isolation: the doctor must say so
            assert not results["network: connect to a TCP port on this machine"]
            assert not results["files: write outside the workspace"]
        else:
            assert all(results.values()), (tier, results)
    assert "| memory per session | 4096 MiB | cgroup v1 memory.limit_in_bytes |" in proc.stdout
    assert "| disk writes per run | 1024 MiB |" in proc.stdout
    assert proc.returncode == 1  # tier 3 did not contain everything
    one = subprocess.run([str(exe), "doctor", "--tier=1"], capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert one.returncode == 0 and list(verdicts(one.stdout)) == ["tier 1"], one.stdout


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[Kernel]:
    # The workspace is not under pytest's basetemp (0700, reset by every pytest run).
    ws = Path(tempfile.mkdtemp(prefix="think-sec-kernel-"))
    k = start_kernel(ws, kernel_env(tmp_path, None))
    yield k
    k.stop()
    shutil.rmtree(ws, ignore_errors=True)


def test_status_and_doctor_magics(kernel: Kernel) -> None:
    reply, _ = kernel.execute("%%bash\necho started")  # the session's sandbox is up
    assert reply["status"] == "ok"
    reply, outputs = kernel.execute("%think_status")
    status = markdown_of(outputs)
    for row in ("| memory per session | 4096 MiB | cgroup v1 memory.limit_in_bytes |",
                "| processes per session | 256 | cgroup v1 pids.max;",
                "| disk writes per run | 1024 MiB |", "| scratch space | 1024 MiB |",
                "| session identity | uid 16"):  # fmt: skip
        assert row in status, status
    reply, outputs = kernel.execute("%think_doctor", timeout=120)
    assert reply["status"] == "ok"
    report = markdown_of(outputs)
    results = verdicts(report)
    assert list(results) == ["tier 1"] and len(results["tier 1"]) == len(ATTACKS), report
    assert all(results["tier 1"].values()) and "every attack contained" in report, report


#: A group nothing on this machine grants anything.
FRESH_GID = 1_650_300_000


def test_cli_doctor_is_not_green_when_the_sandbox_cannot_reach_python(tmp_path: Path) -> None:
    """Jupyter run as root with $HOME elsewhere, the Python under a home the sandbox's group
    cannot traverse, and no ACL grants allowed: the doctor says so, with the fix."""
    if os.geteuid() != 0:  # code runs as the kernel's own uid: its Python is in reach
        assert launch.unreachable_env(FRESH_GID) == ""
        return
    blocked = launch.blocked_ancestors([*launch.python_paths(), str(launch.INSIDE_DIR)], FRESH_GID)
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "think_kernel_config.py").write_text(
        f"c.SandboxConfig.sandbox_gid = {FRESH_GID}\nc.SandboxConfig.grant_acl = False\n"
    )
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "JUPYTER_CONFIG_DIR": str(conf)}
    exe = Path(sys.executable).parent / "jupyter-think"
    proc = subprocess.run([str(exe), "doctor", "--tier=3"], capture_output=True, text=True,
                          timeout=300, env=env)  # fmt: skip
    if not blocked:  # an interpreter every user may reach (e.g. under /usr): nothing to fix
        assert "setfacl" not in proc.stdout, proc.stdout
        return
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert verdicts(proc.stdout)["tier 3"] == {"the sandbox starts": False}, proc.stdout
    assert "cannot reach the kernel's Python" in proc.stdout, proc.stdout
    for b in blocked:
        assert f"setfacl -m g:{FRESH_GID}:x {b}" in proc.stdout, proc.stdout
    assert "NOT all green" in proc.stdout


@pytest_asyncio.fixture(params=available_tiers(), ids=lambda t: t.name)
async def any_tier(request: pytest.FixtureRequest) -> AsyncIterator[Sandbox]:
    """A sandbox of each tier, its workspace outside pytest's basetemp."""
    ws = Path(tempfile.mkdtemp(prefix="think-doctor-env-"))
    tier: Tier = request.param
    sb = await Sandbox.create(ws, f"doctor-env-{tier.name.lower()}", SandboxConfig(
        force_tier=int(tier), preload_modules=[]))  # fmt: skip
    yield sb
    await sb.close()
    shutil.rmtree(ws, ignore_errors=True)


async def test_env_probe_green_names_what_imports_and_what_is_missing(any_tier: Sandbox) -> None:
    probe = await python_env(any_tier, ("numpy", "pandas", "matplotlib", "think_no_such_pkg"))
    assert probe.contained, probe
    pybin = Path(sys.executable).parent
    assert "numpy, pandas, matplotlib import" in probe.detail
    assert f"`python` in bash is {pybin}/python" in probe.detail
    assert "not installed in the kernel's environment: think_no_such_pkg" in probe.detail


async def test_env_probe_not_green_when_the_kernel_has_what_the_sandbox_cannot_import(
    any_tier: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Importable in the kernel only (its folder is on no path the sandbox sees).
    (tmp_path / "think_kernel_only_mod.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    probe = await python_env(any_tier, ("numpy", "think_kernel_only_mod"))
    assert not probe.contained, probe
    assert "No module named 'think_kernel_only_mod'" in probe.detail, probe
    assert "Fix: " in probe.detail, probe


async def test_write_probe_refused_on_the_env_and_reports_a_writable_one(
    any_tier: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    probe = await python_env_writes(any_tier)
    if any_tier.tier == Tier.RLIMITS and os.geteuid() != 0:
        assert not probe.contained  # the kernel's own uid, no file isolation: said, not hidden
    else:
        assert probe.contained and probe.detail == "refused: read-only", probe
    # A folder the sandbox may write (its workspace), counted as the environment: the probe
    # says so, and leaves nothing behind.
    ws = str(any_tier.workspace)
    monkeypatch.setattr(envpaths, "core_paths", lambda: [ws])
    probe = await python_env_writes(any_tier)
    assert not probe.contained and probe.detail.startswith(f"wrote {ws}/.think-doctor-write-")
    assert os.listdir(ws) == []
