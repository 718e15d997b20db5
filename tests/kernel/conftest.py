"""Fixtures for the kernel tests: the scripted model, a workspace, real kernels.

Kernels run as real subprocesses (``jupyter_client``); the model is the scripted HTTP server of
``tests/fake_model.py``. Each kernel gets its own workspace (its cwd), a private
``JUPYTER_CONFIG_DIR`` holding a ``think_kernel_config.py`` with short retry delays, and a
private ``IPYTHONDIR``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from tests.fake_model import FakeModel
from tests.layers import starts_processes

CONFIG = """\
c.ThinkConfig.retry_delays = [0.3, 0.3, 0.3]
c.ThinkConfig.display_interval = 0.05
"""


def kernel_env(tmp: Path, fm: FakeModel | None, api_key: str = "sk-test") -> dict[str, str]:
    """Environment for a kernel: the fake model's URL and key, private Jupyter/IPython dirs
    (under ``tmp``, next to the workspace, never inside it)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "THINK_", "JPY_", "JUPYTER_RUNTIME"))
    }
    cfg = tmp / "jupyter-config"
    cfg.mkdir(exist_ok=True)
    (cfg / "think_kernel_config.py").write_text(CONFIG)
    env["JUPYTER_CONFIG_DIR"] = str(cfg)
    env["IPYTHONDIR"] = str(tmp / "ipython")
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    if fm is not None:
        env["OPENAI_BASE_URL"] = fm.url
        env["OPENAI_API_KEY"] = api_key
        env["THINK_MODEL"] = "fake-model"
    return env


class Kernel:
    """A running kernel and a blocking client, with helpers that wait on messages."""

    workspace: Path

    def __init__(self, km: KernelManager) -> None:
        self.km = km
        self.kc = km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)

    def execute(self, code: str, timeout: float = 30.0) -> tuple[dict[str, Any], list[dict]]:
        """Run a cell; return (reply content, iopub messages of the cell but status/input)."""
        msg_id = self.kc.execute(code)
        return self.collect(msg_id, timeout)

    def collect(self, msg_id: str, timeout: float = 30.0) -> tuple[dict[str, Any], list[dict]]:
        """Wait for the cell to go idle; return its reply and outputs."""
        outputs = []
        deadline = time.monotonic() + timeout
        while True:
            msg = self.kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind = msg["msg_type"]
            if kind == "status" and msg["content"]["execution_state"] == "idle":
                break
            if kind not in ("status", "execute_input"):
                outputs.append(msg)
        return self.shell_reply(msg_id, deadline)["content"], outputs

    def shell_reply(self, msg_id: str, deadline: float) -> dict[str, Any]:
        """The shell reply to ``msg_id`` (skipping stale replies, e.g. of wait_for_ready)."""
        while True:
            reply = self.kc.get_shell_msg(timeout=max(1.0, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply

    def wait_output(self, msg_id: str, predicate: Any, timeout: float = 20.0) -> list[dict]:
        """Read iopub until a message of the cell satisfies ``predicate``; return all read."""
        seen = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = self.kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            seen.append(msg)
            if predicate(msg):
                return seen
        raise TimeoutError("the expected output never came")

    def stop(self) -> None:
        """Stop channels and shut the kernel down."""
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def workspace_in(tmp: Path) -> Path:
    """A fresh workspace folder under ``tmp``."""
    ws = tmp / "ws"
    ws.mkdir(exist_ok=True)
    return ws


def start_kernel(
    workspace: Path,
    env: dict[str, str],
    name: str = "think",
    interrupt_mode: str | None = None,
) -> Kernel:
    """Start a kernel in ``workspace``; ``interrupt_mode`` uses a copy of its kernelspec."""
    tmp = workspace.parent
    if interrupt_mode is None:
        km = KernelManager(kernel_name=name)
    else:
        spec = KernelSpecManager().get_kernel_spec(name)
        folder = tmp / "kernels" / f"{name}-{interrupt_mode}"
        folder.mkdir(parents=True, exist_ok=True)
        data = spec.to_dict()
        data["interrupt_mode"] = interrupt_mode
        (folder / "kernel.json").write_text(json.dumps(data))
        ksm = KernelSpecManager(kernel_dirs=[str(tmp / "kernels")])
        km = KernelManager(kernel_name=folder.name, kernel_spec_manager=ksm)
        assert km.kernel_spec is not None and km.kernel_spec.interrupt_mode == interrupt_mode
    km.start_kernel(cwd=str(workspace), env=env)
    kernel = Kernel(km)
    kernel.workspace = workspace
    return kernel


def markdown_of(outputs: list[dict]) -> str:
    """The last Markdown the cell showed (display_data or its updates)."""
    texts = [
        m["content"]["data"]["text/markdown"]
        for m in outputs
        if m["msg_type"] in ("display_data", "update_display_data")
        and "text/markdown" in m["content"]["data"]
    ]
    return texts[-1] if texts else ""


@pytest.fixture(scope="session")
def fm() -> Iterator[FakeModel]:
    """The scripted model, shared; reset before each test by ``model``."""
    server = FakeModel().start()
    yield server
    server.stop()


@pytest.fixture
def model(fm: FakeModel) -> FakeModel:
    """The shared fake model with an empty script and request log."""
    fm.reset()
    fm.release.clear()
    yield fm
    fm.release.set()  # let any hanging stream finish


@pytest.fixture(scope="module")
@starts_processes
def shared_kernel(tmp_path_factory: pytest.TempPathFactory, fm: FakeModel) -> Iterator[Kernel]:
    """One think kernel for the tests that do not care about history or restarts."""
    tmp = tmp_path_factory.mktemp("shared")
    kernel = start_kernel(workspace_in(tmp), kernel_env(tmp, fm))
    yield kernel
    kernel.stop()
