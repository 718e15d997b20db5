"""``%%python`` / ``%%bash`` cells: run code for the human, streaming its output.

    result = await run_cell_code(runtime, "python", "print('hi')", on_output=cb)

With a sandbox on the runtime the code runs there (``sandbox.run_python`` /
``run_bash``, warm worker state kept between cells), between a save of the open documents and
a merge of what it changed on disk into them (``runtime.files``). Without one it
runs in a plain subprocess in the workspace, in its own process group so an interrupt reaches
exactly it. Cancelling the awaiting task interrupts the code (SIGINT, then SIGKILL after a
grace period) and re-raises.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import inspect
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..waits import wait_for

OutputCallback = Callable[[str, str], Any]
"""(stream, text) with stream "stdout" or "stderr"; may be sync or async."""

GRACE_SECONDS = 0.5
HOLD_MARGIN = 10.0  # seconds a run holds the documents' autosaves beyond its timeout


@dataclass
class CellCodeResult:
    """What a ``%%python`` / ``%%bash`` cell produced (besides the streamed text)."""

    ok: bool
    exit_code: int | None
    duration_ms: float
    error: str = ""
    error_category: str = ""
    outputs: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    traceback: str = ""


async def _call(cb: OutputCallback, stream: str, text: str) -> None:
    res = cb(stream, text)
    if inspect.isawaitable(res):
        await res


async def run_cell_code(
    runtime: Any,
    language: str,
    code: str,
    on_output: OutputCallback,
    timeout: float | None = None,
) -> CellCodeResult:
    """Run ``code`` ("python" or "bash") in the runtime's sandbox, or a plain subprocess."""
    sandbox = getattr(runtime, "sandbox", None)
    ensure = getattr(runtime, "ensure_sandbox", None)
    if sandbox is None and ensure is not None:
        try:
            sandbox = await ensure()
        except Exception as e:  # e.g. required_tier not met: refuse, never run unsandboxed
            return CellCodeResult(False, None, 0.0, str(e), "killed")
    if sandbox is not None:
        run = sandbox.run_python if language == "python" else sandbox.run_bash
        files = getattr(runtime, "files", None)
        if files is None:
            res = await run(code, timeout=timeout, on_output=on_output)
        else:
            # Open documents are saved first; what the code changed is merged into them after.
            config = getattr(sandbox, "config", None)
            hold = float(timeout or getattr(config, "timeout", 60) or 60) + HOLD_MARGIN
            async with files.run(hold=hold):
                res = await run(code, timeout=timeout, on_output=on_output)
        return CellCodeResult(
            ok=bool(res.ok),
            exit_code=res.exit_code,
            duration_ms=float(res.duration_ms),
            error=res.error or "",
            error_category=res.error_category or "",
            outputs=list(res.outputs or []),
            warnings=list(getattr(res, "warnings", []) or []),
            traceback=res.traceback or "",
        )
    return await _run_subprocess(runtime.workspace.root, language, code, on_output, timeout)


def _argv(language: str, code: str) -> list[str]:
    if language == "python":
        return [sys.executable, "-u", "-c", code]
    return [shutil.which("bash") or "/bin/sh", "-c", code]


async def _run_subprocess(
    cwd: Any, language: str, code: str, on_output: OutputCallback, timeout: float | None
) -> CellCodeResult:
    start = time.monotonic()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = await asyncio.create_subprocess_exec(
        *_argv(language, code),
        cwd=str(cwd),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        start_new_session=True,  # our own process group: interrupts reach only this code
    )

    async def pump(reader: asyncio.StreamReader | None, name: str) -> None:
        assert reader is not None
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        while chunk := await reader.read(65536):
            text = decoder.decode(chunk)
            if text:
                await _call(on_output, name, text)
        if tail := decoder.decode(b"", final=True):
            await _call(on_output, name, tail)

    timed_out = False
    code_: int | None
    try:
        async with asyncio.timeout(timeout):
            async with asyncio.TaskGroup() as tg:
                tg.create_task(pump(proc.stdout, "stdout"))
                tg.create_task(pump(proc.stderr, "stderr"))
            code_ = await proc.wait()
    except TimeoutError:
        timed_out = True
        await _stop(proc)
        code_ = proc.returncode
    except BaseException:
        await asyncio.shield(_stop(proc))
        raise
    ms = (time.monotonic() - start) * 1000
    if timed_out:
        return CellCodeResult(False, code_, ms, f"timed out after {timeout:g} s", "timeout")
    if code_ == 0:
        return CellCodeResult(True, 0, ms)
    category = "killed" if code_ is not None and code_ < 0 else "runtime"
    return CellCodeResult(False, code_, ms, f"exit status {code_}", category)


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """SIGINT the process group (Python shows its KeyboardInterrupt), then SIGKILL."""
    if proc.returncode is not None:
        return
    for sig in (signal.SIGINT, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            await wait_for(proc.wait(), GRACE_SECONDS)
            return
        except TimeoutError:
            continue
