"""A kernel's shutdown request closes its runtime on the loop that owns it: the store is
closed (its write-ahead log folded back and removed), not left open by a close that failed
on ipykernel's control thread."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from tests.kernel.conftest import kernel_env, start_kernel, workspace_in

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow


def test_a_shutdown_request_closes_the_runtime_and_its_store(tmp_path: Path) -> None:
    env = kernel_env(tmp_path, None)
    env["JUPYTER_DATA_DIR"] = str(tmp_path / "data")
    kernel = start_kernel(workspace_in(tmp_path), env)
    try:
        reply, outputs = kernel.execute("%%bash\necho hi", timeout=120)
        assert reply["status"] == "ok", outputs
        [db] = list((tmp_path / "data").rglob("think.db"))
        assert Path(f"{db}-wal").exists()  # open: the runtime writes through its log
        pid = kernel.km.provisioner.process.pid  # type: ignore[union-attr]
        kernel.kc.stop_channels()
        kernel.km.request_shutdown()
        # The kernel exits by itself after its do_shutdown (no interrupt, no kill needed).
        psutil.Process(pid).wait(timeout=30)
        assert not Path(f"{db}-wal").exists(), "the store was not closed"
    finally:
        kernel.km.shutdown_kernel(now=True)
