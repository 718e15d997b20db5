"""The split of the suite into the in-process layer and the slow layer (tests/layers.py), run
on a small suite of its own in a pytest of its own: a test that starts a process outside the
slow layer fails, whichever way it starts it, even when the code swallows the refusal; a test
that uses a fixture starting processes is slow without saying so."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # it starts a pytest

REPO = Path(__file__).resolve().parents[1]

SUITE = """
import asyncio
import ctypes.util
import multiprocessing
import subprocess

import pytest

from tests.layers import starts_processes


@pytest.fixture
@starts_processes
def helper():
    return subprocess.run(["true"]).returncode


def test_fast_runs_a_command():
    subprocess.run(["true"])


def test_fast_swallows_the_refusal():
    try:
        subprocess.run(["true"])
    except Exception:
        pass


def test_fast_starts_an_asyncio_subprocess():
    async def main():
        proc = await asyncio.create_subprocess_exec("true")
        await proc.wait()

    asyncio.run(main())


def test_fast_forks():
    proc = multiprocessing.get_context("fork").Process(target=print)
    proc.start()
    proc.join()


def test_fast_finds_libc():
    ctypes.util.find_library("c")


@pytest.mark.slow
def test_slow_runs_a_command():
    assert subprocess.run(["true"]).returncode == 0


def test_uses_a_fixture_that_starts_processes(helper):
    assert helper == 0
"""


def outcomes(tmp_path: Path, *args: str) -> dict[str, str]:
    """Run the small suite with the repository's hooks; each test's outcome by name."""
    suite = tmp_path / "suite"
    suite.mkdir(exist_ok=True)
    (suite / "conftest.py").write_text("from tests.conftest import *  # noqa: F403\n")
    (suite / "test_suite.py").write_text(SUITE)
    (suite / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: starts processes\n")
    report = tmp_path / f"report{len(args)}.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--strict-markers",
         f"--junitxml={report}", *args, str(suite)],
        cwd=suite,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "HOME": str(tmp_path)},
        capture_output=True,
        timeout=120,
    )  # fmt: skip
    found = {}
    for case in ET.parse(report).iter("testcase"):
        failed = case.find("failure") is not None or case.find("error") is not None
        found[case.get("name", "")] = "failed" if failed else "passed"
    return found


def test_fast_tests_may_not_start_processes_and_slow_ones_may(tmp_path: Path) -> None:
    assert outcomes(tmp_path) == {
        "test_fast_runs_a_command": "failed",
        "test_fast_swallows_the_refusal": "failed",
        "test_fast_starts_an_asyncio_subprocess": "failed",
        "test_fast_forks": "failed",
        "test_fast_finds_libc": "passed",
        "test_slow_runs_a_command": "passed",
        "test_uses_a_fixture_that_starts_processes": "passed",
    }
    fast = outcomes(tmp_path, "-m", "not slow")
    assert "test_slow_runs_a_command" not in fast
    assert "test_uses_a_fixture_that_starts_processes" not in fast
    assert "test_fast_finds_libc" in fast
