"""Run a notebook cell in the notebook's own kernel, with no browser, outputs into the room.

    executor = CellExecutor(serverapp, documents)
    result = await executor.execute("nb.ipynb", cell_id, timeout=30)
    result["outputs_text"]   # what the model sees: text, errors, images summarised

The kernel is the one of the notebook's Jupyter session (what the human's tab uses); a session
is started when there is none. Outputs are appended to the shared notebook as they arrive, so
collaborators watch them appear, and are kept for the agent. ``wait=False`` returns at once with
an execution id; :meth:`CellExecutor.poll` then streams new outputs (progress) and
:meth:`CellExecutor.interrupt` interrupts the kernel.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import nbformat
from jupyter_client.asynchronous import AsyncKernelClient

from think_kernel.collab import ydocs
from think_kernel.waits import wait_for

if TYPE_CHECKING:
    from .documents import DocumentService


@dataclass
class Execution:
    """One cell run: its outputs so far and how it ended."""

    id: str
    path: str
    cell_id: str
    kernel_id: str = ""
    status: str = "running"  # running, ok, error, timeout, interrupted, failed
    execution_count: int | None = None
    outputs: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    def to_dict(self, since: int = 0) -> dict[str, Any]:
        """JSON form; ``since`` skips outputs the caller already has."""
        end = self.finished or time.monotonic()
        return {
            "execution_id": self.id,
            "path": self.path,
            "cell_id": self.cell_id,
            "status": self.status,
            "done": self.done.is_set(),
            "execution_count": self.execution_count,
            "outputs": self.outputs[since:],
            "output_count": len(self.outputs),
            "outputs_text": ydocs.summarise_outputs(self.outputs),
            "error": self.error,
            "duration_s": round(end - self.started, 3),
        }


class CellExecutor:
    """Executes cells of shared notebooks in their session kernels."""

    def __init__(self, serverapp: Any, documents: DocumentService, keep: int = 100) -> None:
        self.serverapp = serverapp
        self.documents = documents
        self.executions: dict[str, Execution] = {}
        self._keep = keep

    async def kernel_for(self, path: str, kernel_name: str = "") -> str:
        """The kernel id of the notebook's session, starting a session if there is none."""
        sm = self.serverapp.session_manager
        for s in await sm.list_sessions():
            if s.get("path") == path and s.get("kernel"):
                return str(s["kernel"]["id"])
        km = self.serverapp.kernel_manager
        session = await sm.create_session(
            path=path,
            name=os.path.basename(path),
            type="notebook",
            kernel_name=kernel_name or km.default_kernel_name,
        )
        return str(session["kernel"]["id"])

    async def execute(
        self,
        path: str,
        cell_id: str,
        timeout: float = 60,
        wait: bool = True,
        action_id: str = "",
        caller_kernel_id: str = "",
    ) -> dict[str, Any]:
        """Run a code cell; with ``wait`` return its outputs, else its execution id."""
        from .documents import DocumentError

        doc = await self.documents._notebook(path)
        nb = doc.get()
        try:
            cell = nb["cells"][ydocs.find_cell(doc, cell_id)]
        except KeyError as e:
            raise DocumentError(str(e.args[0])) from e
        if cell.get("cell_type") != "code":
            raise DocumentError(f"cell {cell_id} is a {cell.get('cell_type')} cell, not code")
        kernelspec = nb.get("metadata", {}).get("kernelspec", {}) or {}
        kernel_id = await self.kernel_for(path, kernelspec.get("name", ""))
        if caller_kernel_id and kernel_id == caller_kernel_id:
            raise DocumentError(
                "this notebook runs on the agent's own kernel; it cannot execute its cells "
                "while it runs (use execute_code, or a notebook with another kernel)"
            )
        ex = Execution(uuid.uuid4().hex, path, cell_id, kernel_id)
        self.executions[ex.id] = ex
        self._trim()
        ex.task = asyncio.create_task(self._run(ex, cell["source"], timeout, action_id))
        if not wait:
            return ex.to_dict()
        try:
            await ex.done.wait()
        except asyncio.CancelledError:
            # The agent gave up (stop button): interrupt the kernel too, then propagate.
            await self.interrupt(ex.id)
            raise
        return ex.to_dict()

    async def poll(self, execution_id: str, since: int = 0, wait: float = 0) -> dict[str, Any]:
        """New outputs of an execution since output number ``since`` (waits up to ``wait`` s)."""
        from .documents import DocumentError

        ex = self.executions.get(execution_id)
        if ex is None:
            raise DocumentError(f"unknown execution {execution_id!r}")
        if wait > 0 and not ex.done.is_set() and len(ex.outputs) <= since:
            ex.changed.clear()
            try:
                await wait_for(ex.changed.wait(), wait)
            except TimeoutError:
                pass
        return ex.to_dict(since)

    async def interrupt(self, execution_id: str) -> dict[str, Any]:
        """Interrupt the kernel running an execution."""
        ex = self.executions.get(execution_id)
        if ex is None or ex.done.is_set():
            return {"interrupted": False}
        ex.status = "interrupted"
        await self.serverapp.kernel_manager.interrupt_kernel(ex.kernel_id)
        return {"interrupted": True}

    def _trim(self) -> None:
        finished = [k for k, v in self.executions.items() if v.done.is_set()]
        for k in finished[: max(0, len(self.executions) - self._keep)]:
            del self.executions[k]

    async def _update(self, ex: Execution, action_id: str, fn: Any) -> None:
        try:
            await self.documents.update_cell(ex.path, action_id, fn)
        except KeyError:
            # The cell was deleted meanwhile: keep the outputs for the agent only.
            pass

    async def _run(self, ex: Execution, source: str, timeout: float, action_id: str) -> None:
        km = self.serverapp.kernel_manager.get_kernel(ex.kernel_id)
        # parent=km: liveness comes from the manager, not a heartbeat that has not beaten yet
        kc = AsyncKernelClient(parent=km)
        kc.load_connection_info(km.get_connection_info())
        kc.start_channels()
        deadline = time.monotonic() + timeout
        try:
            await kc.wait_for_ready(timeout=max(1.0, deadline - time.monotonic()))

            def start(nb: Any) -> None:
                ydocs.clear_outputs(nb, ex.cell_id)
                ydocs.set_execution_state(nb, ex.cell_id, "busy")

            await self._update(ex, action_id, start)
            msg_id = kc.execute(source, store_history=True, allow_stdin=False)
            timed_out = False
            while True:
                left = deadline - time.monotonic()
                if left <= 0 and not timed_out:
                    timed_out = True
                    ex.status = "timeout"
                    await self.serverapp.kernel_manager.interrupt_kernel(ex.kernel_id)
                    deadline = time.monotonic() + 5  # grace for the kernel to go idle
                    continue
                if left <= 0:
                    break
                try:
                    msg = await kc.get_iopub_msg(timeout=left)
                except Exception:  # queue.Empty on timeout
                    continue
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind = msg["msg_type"]
                content = msg["content"]
                if kind == "status" and content.get("execution_state") == "idle":
                    break
                if kind == "execute_input":
                    ex.execution_count = content.get("execution_count")
                elif kind == "clear_output":
                    ex.outputs.clear()
                    await self._update(
                        ex, action_id, lambda nb: ydocs.clear_outputs(nb, ex.cell_id)
                    )
                elif kind in ("stream", "display_data", "execute_result", "error"):
                    output = dict(nbformat.v4.output_from_msg(msg))
                    ex.outputs.append(output)
                    ex.changed.set()
                    await self._update(
                        ex, action_id, lambda nb, o=output: ydocs.append_output(nb, ex.cell_id, o)
                    )
                    if kind == "error" and ex.status == "running":
                        ex.status = "error"
            if ex.status == "running":
                ex.status = "ok"

            def finish(nb: Any) -> None:
                ydocs.set_execution_count(nb, ex.cell_id, ex.execution_count)
                ydocs.set_execution_state(nb, ex.cell_id, "idle")

            await self._update(ex, action_id, finish)
        except asyncio.CancelledError:
            ex.status = "interrupted"
            raise
        except Exception as e:  # report, never leave the agent waiting
            ex.status = "failed"
            ex.error = f"{type(e).__name__}: {e}"
        finally:
            kc.stop_channels()
            ex.finished = time.monotonic()
            ex.done.set()
            ex.changed.set()
