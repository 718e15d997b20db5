"""The session's disk budget in a real think kernel: ``%%bash`` / ``%%python`` cells that
together write past ``session_write_mb`` are stopped, then refused, with the setting named;
``%think_status`` shows what was used, the budget and the free-space floor."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fake_model import FakeModel

from .conftest import Kernel, kernel_env, markdown_of, start_kernel, workspace_in

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow

MIB = 1 << 20


@pytest.fixture
def budget_kernel(tmp_path: Path, fm: FakeModel) -> Iterator[Kernel]:
    env = kernel_env(tmp_path, fm)
    config = Path(env["JUPYTER_CONFIG_DIR"]) / "think_kernel_config.py"
    config.write_text(
        config.read_text()
        + "c.SandboxConfig.session_write_mb = 48\n"
        + "c.SandboxConfig.write_check_interval = 0.05\n"
    )
    kernel = start_kernel(workspace_in(tmp_path), env)
    yield kernel
    kernel.stop()


def status_rows(kernel: Kernel) -> dict[str, str]:
    reply, outputs = kernel.execute("%think_status")
    assert reply["status"] == "ok", outputs
    rows = {}
    for line in markdown_of(outputs).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3:
            rows[cells[0]] = cells[1]
    return rows


def test_cells_share_the_session_budget_and_status_shows_it(budget_kernel: Kernel) -> None:
    rows = status_rows(budget_kernel)
    assert rows["disk writes per session"] in ("48 MiB", "0 MiB used of 48 MiB"), rows
    assert rows["free-space floor"].startswith("1024 MiB"), rows

    reply, outputs = budget_kernel.execute("%%bash\nhead -c 30M /dev/zero > a.bin && echo wrote")
    assert reply["status"] == "ok", outputs
    # A writer that only the budget ends (1 GiB in 10 s at most): a writer that finishes before
    # the budget's next check would pass whatever the budget did, on a loaded machine.
    reply, outputs = budget_kernel.execute(
        "%%python\nimport time\nwith open('b.bin', 'wb') as f:\n"
        "    for _ in range(1000): f.write(b'x' * (1 << 20)); f.flush(); time.sleep(0.01)",
        timeout=60,
    )
    assert reply["status"] == "error" and "session_write_mb" in reply["evalue"], reply
    assert (budget_kernel.workspace / "b.bin").stat().st_size < 200 * MIB

    reply, outputs = budget_kernel.execute("%%bash\necho ran > c.txt")
    assert reply["status"] == "error", reply
    assert "refused to run" in reply["evalue"] and "session_write_mb" in reply["evalue"]
    assert not (budget_kernel.workspace / "c.txt").exists()

    rows = status_rows(budget_kernel)
    used = rows["disk writes per session"]
    assert used.endswith("MiB used of 48 MiB") and int(used.split()[0]) >= 48, rows
    floor = rows["free-space floor"]
    assert floor.startswith("1024 MiB (") and floor.endswith(" free now)"), rows
