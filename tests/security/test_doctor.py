"""Users can see it (issue 9, item 8): ``jupyter think doctor`` and ``%think_doctor`` run the
containment probes on this machine; ``%think_status`` shows every limit and its mechanism."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel.conftest import Kernel, kernel_env, markdown_of, start_kernel
from think_kernel.sandbox import available_tiers

ATTACKS = ("network", "host sockets", "files", "secrets", "the store", "the kernel process",
           "its own launcher", "another session", "fork bomb", "memory", "disk",
           "a wedged launcher")  # fmt: skip


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
