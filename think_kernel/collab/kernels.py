"""Kernels for running notebook cells in standalone mode (no Jupyter server).

    kernels = LocalKernels(workspace_root)
    result = await kernels.run("nb.ipynb", "python3", "print(1)", timeout=30, on_output=show)
    result.outputs        # nbformat outputs, as they arrived
    await kernels.aclose()

One kernel per notebook, of the notebook's kernelspec, started on demand in the notebook's
folder and kept for the next cell (state carries over, as in JupyterLab). Never the ``think``
kernel: that is the agent itself, and running a cell there would start a second agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from jupyter_client.manager import AsyncKernelManager

from ..tools.base import ToolError

OnOutput = Callable[[dict[str, Any]], Awaitable[None]]
# Seconds a kernel gets to go idle after an interrupt before the run is given up on.
INTERRUPT_GRACE = 5.0


@dataclass
class CellRun:
    """What one cell run produced."""

    status: str = "running"  # ok, error, timeout, interrupted, failed
    execution_count: int | None = None
    outputs: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    duration_s: float = 0.0


def is_think_kernel(name: str, ksm: KernelSpecManager | None = None) -> bool:
    """Whether a kernelspec is the agent's own kernel (by name or by what it runs)."""
    if name == "think":
        return True
    try:
        spec = (ksm or KernelSpecManager()).get_kernel_spec(name)
    except NoSuchKernel:
        return False
    return any("think_kernel" in str(arg) for arg in spec.argv)


class LocalKernels:
    """Kernels of local notebooks, one per notebook path, started on demand."""

    def __init__(self, root: str | Path, startup_timeout: float = 60) -> None:
        self.root = Path(root)
        self.startup_timeout = startup_timeout
        self._ksm = KernelSpecManager()
        self._kernels: dict[str, tuple[AsyncKernelManager, AsyncKernelClient]] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def _kernel(self, path: str, name: str) -> tuple[AsyncKernelManager, AsyncKernelClient]:
        known = self._kernels.get(path)
        if known is not None and known[0].kernel_name == name and await known[0].is_alive():
            return known
        if known is not None:
            await self._shutdown(path)
        if is_think_kernel(name, self._ksm):
            raise ToolError(
                f"{path} uses the think kernel, which is the agent itself; execute_cell cannot "
                "run its cells (use execute_code, or switch the notebook to a python3 kernel)",
                "AGENT_KERNEL",
            )
        try:
            self._ksm.get_kernel_spec(name)
        except NoSuchKernel:
            raise ToolError(f"no kernel named {name!r} is installed", "NO_KERNEL") from None
        km = AsyncKernelManager(kernel_name=name)
        cwd = (self.root / path).parent
        await km.start_kernel(cwd=str(cwd))
        kc = km.client()
        kc.start_channels()
        try:
            await kc.wait_for_ready(timeout=self.startup_timeout)
        except BaseException:
            kc.stop_channels()
            await km.shutdown_kernel(now=True)
            raise
        self._kernels[path] = (km, kc)
        return km, kc

    async def run(
        self,
        path: str,
        kernel_name: str,
        source: str,
        timeout: float = 60,
        on_output: OnOutput | None = None,
        on_clear: Callable[[], Awaitable[None]] | None = None,
    ) -> CellRun:
        """Run ``source`` in the notebook's kernel; outputs go to ``on_output`` as they arrive.

        Past ``timeout`` seconds the kernel is interrupted (status ``timeout``); a cancelled call
        interrupts it too and re-raises.
        """
        import nbformat  # lazy: its import (jsonschema) is slow

        async with self._locks.setdefault(path, asyncio.Lock()):
            started = time.monotonic()
            km, kc = await self._kernel(path, kernel_name or "python3")
            run = CellRun()
            msg_id = kc.execute(source, store_history=True, allow_stdin=False)
            deadline = time.monotonic() + timeout
            interrupted = False
            try:
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        if interrupted:
                            run.error = "the kernel did not stop after an interrupt"
                            break
                        interrupted = True
                        run.status = "timeout"
                        run.error = f"timed out after {timeout} s; the kernel was interrupted"
                        await km.interrupt_kernel()
                        deadline = time.monotonic() + INTERRUPT_GRACE
                        continue
                    try:
                        msg = await kc.get_iopub_msg(timeout=left)
                    except Exception:  # queue.Empty when nothing arrived in time
                        continue
                    if msg.get("parent_header", {}).get("msg_id") != msg_id:
                        continue
                    kind, content = msg["msg_type"], msg["content"]
                    if kind == "status" and content.get("execution_state") == "idle":
                        break
                    if kind == "execute_input":
                        run.execution_count = content.get("execution_count")
                    elif kind == "clear_output":
                        run.outputs.clear()
                        if on_clear is not None:
                            await on_clear()
                    elif kind in ("stream", "display_data", "execute_result", "error"):
                        output = dict(nbformat.v4.output_from_msg(msg))
                        run.outputs.append(output)
                        if kind == "error" and run.status == "running":
                            run.status = "error"
                        if on_output is not None:
                            await on_output(output)
            except asyncio.CancelledError:
                # The agent was stopped: stop the cell too, then let the cancellation through.
                await asyncio.shield(km.interrupt_kernel())
                run.status = "interrupted"
                raise
            finally:
                run.duration_s = round(time.monotonic() - started, 3)
            if run.status == "running":
                run.status = "ok"
            return run

    async def interrupt(self, path: str) -> bool:
        """Interrupt the kernel of a notebook, if it has one."""
        known = self._kernels.get(path)
        if known is None:
            return False
        await known[0].interrupt_kernel()
        return True

    async def _shutdown(self, path: str) -> None:
        km, kc = self._kernels.pop(path)
        kc.stop_channels()
        with contextlib.suppress(Exception):
            await km.shutdown_kernel(now=True)

    async def aclose(self) -> None:
        """Shut down every kernel started here."""
        for path in list(self._kernels):
            await self._shutdown(path)
