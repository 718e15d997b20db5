"""A think kernel run as Jupyter runs it on a shared machine: as root, with $HOME set to a
folder that is not the user's home. The kernel's Python may live where the sandbox's uid
cannot go (here: pyenv under a 0700 /root); the agent's ``execute_code`` and ``%%bash`` still
run the kernel's Python, with its standard library and packages."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from tests.fake_model import FakeModel
from tests.kernel.conftest import kernel_env, start_kernel

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow

FRESH_GID = 1_650_400_000

IMPORTS = (
    "import sys, importlib, warnings, threading, numpy, pandas, matplotlib\n"
    "print('ENV-OK', sys.prefix)"
)


def test_execute_code_and_bash_run_the_kernels_python(tmp_path: Path, model: FakeModel) -> None:
    home = tmp_path / "home-elsewhere"
    home.mkdir(mode=0o700)
    ws = Path(tempfile.mkdtemp(prefix="think-home-elsewhere-"))
    env = {**kernel_env(tmp_path, model), "HOME": str(home)}
    # A sandbox group no folder on this machine grants anything yet (earlier tier 2 and 3
    # sessions may have let the default one through /root with a search-only ACL).
    with open(Path(env["JUPYTER_CONFIG_DIR"]) / "think_kernel_config.py", "a") as f:
        f.write(f"c.SandboxConfig.sandbox_gid = {FRESH_GID}\n")
    kernel = start_kernel(ws, env)
    try:
        model.reply(tool_calls=[("execute_code", {"code": IMPORTS})])
        model.reply(text="Imported.")
        reply, _ = kernel.execute("import the scientific stack", timeout=120)
        assert reply["status"] == "ok", reply
        result = json.dumps(model.requests[-1]["messages"][-1])  # the tool's result
        assert f"ENV-OK {sys.prefix}" in result and "No module named" not in result, result
        reply, outputs = kernel.execute(
            "%%bash\ncommand -v python python3\npython -c 'import sys, warnings; print(sys.prefix)'"
        )
        assert reply["status"] == "ok", reply
        text = "".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream")
        pybin = Path(sys.executable).parent
        assert text.split() == [f"{pybin}/python", f"{pybin}/python3", sys.prefix], text
    finally:
        kernel.stop()
        shutil.rmtree(ws, ignore_errors=True)
