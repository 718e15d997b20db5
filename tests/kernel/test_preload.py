"""A preloaded process becomes a think kernel (the server's first spare kernel no
longer imports after the server listens). think_kernel/kernel/provisioner.py hands a kernel's
arguments, environment and folder to a process that imported everything beforehand; the
kernel it becomes must be indistinguishable: the kernel's environment (not the one the
process started with), its folder, interrupts that kill a running tool, shutdown. A kernel
whose start environment differs is launched as usual. (Through a real server:
tests/server/test_early_spare.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fake_model import FakeModel
from tests.kernel.conftest import kernel_env, start_kernel, workspace_in
from tests.kernel.test_stop import _stop_a_running_tool
from tests.procs import running
from tests.waiting import wait_until
from think_kernel.kernel import provisioner

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


@pytest.fixture
def preloaded(tmp_path: Path):
    """Start a preloaded process (with an environment that has no model settings); yields
    its pid. Whatever is left of it is stopped afterwards."""
    env = kernel_env(tmp_path, None)
    assert not any(k.startswith(("OPENAI_", "THINK_")) for k in env)
    assert provisioner.preload(env)
    assert provisioner._waiting is not None
    yield provisioner._waiting.pid
    provisioner.discard()


def test_the_preloaded_process_becomes_the_kernel_with_its_environment_and_folder(
    tmp_path: Path, model: FakeModel, preloaded: int
) -> None:
    ws = workspace_in(tmp_path)
    kernel = start_kernel(ws, kernel_env(tmp_path, model), interrupt_mode="signal")
    try:
        assert kernel.km.provisioner.pid == preloaded
        assert provisioner._waiting is None  # taken: the next kernel is launched as usual
        assert os.readlink(f"/proc/{preloaded}/cwd") == str(ws)
        # The model's address, key and name exist only in the kernel's environment.
        model.reply(text="from the preloaded kernel")
        reply, outputs = kernel.execute("say something", timeout=60)
        assert reply["status"] == "ok", outputs
        assert "from the preloaded kernel" in str(outputs)
        assert model.requests[-1]["model"] == "fake-model"
        # Interrupts reach it (its own process group) and kill a running tool.
        _stop_a_running_tool(kernel, model, "loop forever")
    finally:
        kernel.stop()
    wait_until(lambda: not running(preloaded), 10, "the kernel process gone after shutdown")


def test_a_kernel_with_another_start_environment_is_launched_as_usual(
    tmp_path: Path, model: FakeModel, preloaded: int
) -> None:
    env = kernel_env(tmp_path, model)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))
    kernel = start_kernel(workspace_in(tmp_path), env)
    try:
        assert kernel.km.provisioner.pid != preloaded
        model.reply(text="launched as usual")
        reply, outputs = kernel.execute("hello", timeout=60)
        assert reply["status"] == "ok" and "launched as usual" in str(outputs), outputs
        assert provisioner._waiting is not None and provisioner._waiting.pid == preloaded
    finally:
        kernel.stop()
    provisioner.discard()  # its input closes: it exits
    wait_until(lambda: not running(preloaded), 30, "the unused preloaded process gone")


def test_an_unused_preloaded_process_exits_on_its_own() -> None:
    env = {**os.environ, "THINK_PRELOAD_WAIT": "0.5"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "think_kernel.kernel.preload"], stdin=subprocess.PIPE, env=env
    )
    start = time.monotonic()
    try:
        assert proc.wait(60) == 0
    finally:
        proc.kill()
        assert proc.stdin is not None
        proc.stdin.close()
    assert time.monotonic() - start >= 0.5


SCAN = r"""
import ast, json, sys
from think_kernel.kernel import preload
preload._preload()
names = set()
for mod in list(sys.modules.values()):
    path = getattr(mod, "__file__", None) or ""
    if not path.endswith(".py"):
        continue
    try:
        tree = ast.parse(open(path, encoding="utf-8").read())
    except (OSError, SyntaxError, UnicodeDecodeError):
        continue
    def visit(node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return  # runs later, with the kernel's environment
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("get", "getenv"):
            owner = node.func.value
            if (getattr(owner, "attr", "") == "environ" or node.func.attr == "getenv") and (
                node.args and isinstance(node.args[0], ast.Constant)
            ):
                names.add(node.args[0].value)
        if isinstance(node, ast.Subscript) and getattr(node.value, "attr", "") == "environ":
            if isinstance(node.slice, ast.Constant):
                names.add(node.slice.value)
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant):
            if any(getattr(c, "attr", "") == "environ" for c in node.comparators):
                names.add(node.left.value)
        for child in ast.iter_child_nodes(node):
            visit(child)
    visit(tree)
print(json.dumps(sorted(n for n in names if isinstance(n, str))))
"""


def test_every_variable_read_while_preloading_is_matched_or_passed_on() -> None:
    """A module the preloaded process imports that reads a variable at import time would
    keep the server's value, not the kernel's: each such variable must be one the
    provisioner compares (else the kernel is launched as usual) or one passed on."""
    import json

    from think_kernel.kernel.preload import PER_KERNEL, START_NAMES, START_PREFIXES

    out = subprocess.run(
        [sys.executable, "-c", SCAN], capture_output=True, text=True, check=True, timeout=120
    )
    read = json.loads(out.stdout)
    assert "JPY_PARENT_PID" in read  # the scan finds what it must (ipykernel's)
    unhandled = [
        n
        for n in read
        if not n.startswith(START_PREFIXES)
        and n not in START_NAMES
        and n not in PER_KERNEL
        and not n.startswith("_PYTHON")
        # Windows, IPython's documentation build and its own test suite only:
        and n not in ("PROGRAMDATA", "IN_SPHINX_RUN", "IPYTHON_TESTING_TIMEOUT_SCALE")
    ]
    assert unhandled == [], unhandled
