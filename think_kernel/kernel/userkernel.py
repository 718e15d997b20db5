"""``run_in_kernel``: code the agent runs in the user's own IPython kernel (``%%think`` only).

The agent runs on the magics' private loop; the user's namespace belongs to the cell's thread.
The tool hands a :class:`KernelExec` to the cell that is running ``%%think``, which executes it
with ``shell.run_cell`` (so outputs, plots and tracebacks appear in that cell) and hands back
what the model should read: printed text, the value, what was displayed, or the traceback.

    tool = make_run_in_kernel(lambda request: cell_queue.put(request))
    runtime.tools.add(tool)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import io
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..tools.base import ToolContext, ToolError, ToolOutput

MAX_TEXT = 20_000


@dataclass
class KernelExec:
    """One request to run code in the user's namespace, answered through ``future``."""

    code: str
    future: concurrent.futures.Future[ToolOutput] = field(default_factory=concurrent.futures.Future)


class _Tee(io.TextIOBase):
    """Writes to the cell's stream and keeps a copy for the model."""

    def __init__(self, target: Any, copy: io.StringIO) -> None:
        self.target, self.copy = target, copy

    def write(self, text: str) -> int:  # type: ignore[override]
        self.copy.write(text)
        return int(self.target.write(text) or len(text))

    def flush(self) -> None:
        self.target.flush()


@contextlib.contextmanager
def _captured(shell: Any) -> Iterator[tuple[io.StringIO, list[str]]]:
    """Copy stdout/stderr and note the MIME types displayed, while still showing them."""
    text = io.StringIO()
    shown: list[str] = []
    pub = shell.display_pub
    publish = pub.publish

    def noting(data: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        shown.extend(k for k in data if k != "text/plain")
        return publish(data, *args, **kwargs)

    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Tee(out, text), _Tee(err, text)  # type: ignore[assignment]
    pub.publish = noting
    try:
        yield text, shown
    finally:
        sys.stdout, sys.stderr = out, err
        pub.publish = publish


def execute(shell: Any, code: str) -> ToolOutput:
    """Run code as a cell of the user's kernel (call on the kernel's main thread)."""
    with _captured(shell) as (text, shown):
        result = shell.run_cell(code, store_history=False, silent=False)
    printed = text.getvalue()
    parts = [printed] if printed else []
    if result.result is not None:
        parts.append(f"Out: {_clip(repr(result.result), 4000)}")
    if shown:
        kinds = ", ".join(sorted(set(shown)))
        parts.append(f"[displayed in the cell: {kinds}]")
    error = result.error_before_exec or result.error_in_exec
    if error is not None:
        tb = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        parts.append(tb)
        body = _clip("\n".join(parts), MAX_TEXT)
        return ToolOutput(
            text=body,
            summary=f"raised {type(error).__name__}",
            ok=False,
            error=f"{type(error).__name__}: {error}",
        )
    body = _clip("\n".join(parts), MAX_TEXT) or "(ran; no output)"
    lines = code.count("\n") + 1
    return ToolOutput(text=body, summary=f"ran {lines} line(s) in the kernel")


def make_run_in_kernel(submit: Callable[[KernelExec], bool]) -> Callable[..., Any]:
    """The tool; ``submit`` hands a request to the running ``%%think`` cell (False: none)."""

    async def run_in_kernel(ctx: ToolContext, code: str) -> ToolOutput:
        """Run Python code in the user's own notebook kernel, in their namespace.

        Their variables, imports and data are there; outputs and plots appear in their cell.
        Use it to inspect or plot their objects. Changes persist in their session, so prefer
        reading over mutating. execute_code and bash run isolated in a sandbox instead.

        Args:
            code: Python source to run, like a notebook cell.
        """
        request = KernelExec(code)
        if not submit(request):
            raise ToolError("no %%think cell is running to execute this code", "NO_KERNEL_CELL")
        return await asyncio.wrap_future(request.future)

    return run_in_kernel


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... {len(text) - limit} characters cut ...\n{text[-half:]}"
