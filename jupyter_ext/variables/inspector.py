"""Read the variables of an open notebook's kernel, without side effects, in bounded time.

    inspector = VariableInspector(serverapp, VariableLimits())
    answer = await inspector.inspect("analysis.ipynb", ["df"])
    answer["status"]      # ok, busy, no_kernel, not_supported, timeout, error
    answer["variables"]   # [{"name": "df", "kind": "dataframe", "shape": [...], ...}]

The kernel is the one of the notebook's Jupyter session (what the person's tab runs); none is
started. The server asks it with a silent ``execute_request`` (``silent=True``,
``store_history=False``: no ``execution_count``, no ``execute_input``, no outputs) whose code
is empty and whose one user expression runs :mod:`.probe` in a fresh dict of globals, so the
user's namespace, history and outputs are left as they were; JupyterLab only sees the kernel's
status go busy and idle. A kernel the server knows busy answers ``busy`` at once (its queue
would make the caller wait for the person's cell); a kernel of another language
``not_supported``; past the deadline the answer is ``timeout`` and the kernel, which ends the
probe on its own budget, is left alone (never interrupted: the interrupt could reach the
person's next cell instead).
"""

from __future__ import annotations

import ast
import asyncio
import json
import keyword
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_client.asynchronous import AsyncKernelClient

from think_kernel.collab.kernels import is_think_kernel
from think_kernel.waits import wait_for

PROBE_SOURCE = (Path(__file__).parent / "probe.py").read_text(encoding="utf-8")
MAX_NAMES = 20
MAX_NAME_CHARS = 200
# How long the server may take to hear the kernel go idle after the probe answered, so that
# the next call does not take the probe's own trailing "busy" for the person's cell.
SETTLE = 0.25


class InspectError(ValueError):
    """A request that cannot be served as asked (bad names or path): the message says why."""


@dataclass(frozen=True)
class VariableLimits:
    """Bounds of one inspection (seconds and sizes)."""

    #: Seconds the server waits for the kernel's answer.
    timeout: float = 5.0
    #: Seconds the probe may spend in the kernel, in all.
    budget: float = 2.0
    #: Seconds the probe may spend on one variable.
    per_var: float = 0.5
    #: Characters of the whole answer.
    max_output: int = 60_000

    def probe_limits(self) -> dict[str, Any]:
        """The limits the probe enforces in the kernel."""
        return {"budget": self.budget, "per_var": self.per_var, "max_output": self.max_output}


def checked_names(names: list[str] | None) -> list[str] | None:
    """Variable names as asked (None: every variable); InspectError on a name that is not a
    Python identifier, or too many."""
    if not names:
        return None
    if len(names) > MAX_NAMES:
        raise InspectError(f"at most {MAX_NAMES} names at a time")
    out: list[str] = []
    for name in names:
        if (
            not isinstance(name, str)
            or len(name) > MAX_NAME_CHARS
            or not name.isidentifier()
            or keyword.iskeyword(name)
        ):
            raise InspectError(f"{str(name)[:80]!r} is not a Python variable name")
        if name not in out:
            out.append(name)
    return out


def expression(args: dict[str, Any]) -> str:
    """The user expression that runs the probe with ``args`` in a fresh dict of globals."""
    source = PROBE_SOURCE + "\n_think_answer = run(_think_args)\n"
    scope = {"__name__": "__think_probe__", "_think_args": args}
    return f"(lambda g: (exec({source!r}, g), g['_think_answer'])[1])({scope!r})"


def _answer(status: str, path: str, message: str = "", **more: Any) -> dict[str, Any]:
    return {"status": status, "path": path, "message": message, "variables": [], **more}


class VariableInspector:
    """Inspects the variables of notebooks' session kernels through the server's kernels."""

    def __init__(self, serverapp: Any, limits: VariableLimits | None = None) -> None:
        self.serverapp = serverapp
        self.limits = limits or VariableLimits()
        self._locks: dict[str, asyncio.Lock] = {}

    async def kernel_of(self, path: str) -> str | None:
        """The kernel id of the notebook's session, if it has one (none is started)."""
        for s in await self.serverapp.session_manager.list_sessions():
            if s.get("path") == path and s.get("kernel"):
                return str(s["kernel"]["id"])
        return None

    async def inspect(
        self, path: str, names: list[str] | None = None, caller_kernel_id: str = ""
    ) -> dict[str, Any]:
        """The summary of ``names`` (or every variable) in the kernel of notebook ``path``."""
        wanted = checked_names(names)
        kernel_id = await self.kernel_of(path)
        if kernel_id is None:
            return _answer(
                "no_kernel",
                path,
                f"{path} has no running kernel: open it and run a cell, then ask again",
            )
        km = self.serverapp.kernel_manager
        try:
            kernel = km.get_kernel(kernel_id)
        except KeyError:
            return _answer("no_kernel", path, f"the kernel of {path} has just stopped")
        name = str(getattr(kernel, "kernel_name", "") or "")
        info = {"id": kernel_id, "name": name}
        if kernel_id == caller_kernel_id or is_think_kernel(name, km.kernel_spec_manager):
            return _answer(
                "not_supported",
                path,
                f"{path} runs the think kernel, the agent itself: its variables are the "
                "agent's sandbox, not a notebook's",
                kernel=info,
            )
        language = self._language(kernel)
        info["language"] = language
        if language != "python":
            return _answer(
                "not_supported",
                path,
                f"{path} runs a {language or 'unknown'} kernel ({name}); only Python kernels "
                "can be inspected",
                kernel=info,
            )
        # One inspection of a kernel at a time (each is bounded by the timeout): a second one
        # would find the kernel busy with the first.
        async with self._locks.setdefault(kernel_id, asyncio.Lock()):
            state = str(getattr(kernel, "execution_state", "") or "")
            if state != "idle":
                what = "busy running a cell" if state == "busy" else state or "not ready"
                return _answer(
                    "busy",
                    path,
                    f"the kernel of {path} is {what}; ask again when it is idle",
                    kernel={**info, "execution_state": state},
                )
            return await self._probe(path, kernel, wanted, info)

    def _language(self, kernel: Any) -> str:
        try:
            spec = kernel.kernel_spec
        except Exception:  # the kernelspec was removed since the kernel started
            return ""
        return str(getattr(spec, "language", "") or "").lower()

    async def _probe(
        self, path: str, kernel: Any, names: list[str] | None, info: dict[str, Any]
    ) -> dict[str, Any]:
        started = time.monotonic()
        client = AsyncKernelClient(parent=kernel)
        client.load_connection_info(kernel.get_connection_info())
        client.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=False)
        try:
            args = {"names": names, "limits": self.limits.probe_limits()}
            msg_id = client.execute(
                "",
                silent=True,
                store_history=False,
                user_expressions={"think": expression(args)},
                allow_stdin=False,
            )
            try:
                reply = await wait_for(self._reply(client, msg_id), self.limits.timeout)
            except TimeoutError:
                return _answer(
                    "timeout",
                    path,
                    f"the kernel of {path} did not answer within {self.limits.timeout:g} s",
                    kernel=info,
                )
        finally:
            client.stop_channels()
        await self._settle(kernel)
        answer = self._parse(path, reply, info)
        answer["elapsed_ms"] = round((time.monotonic() - started) * 1000, 1)
        return answer

    async def _reply(self, client: AsyncKernelClient, msg_id: str) -> dict[str, Any]:
        while True:
            msg = await client.get_shell_msg()
            if msg.get("parent_header", {}).get("msg_id") == msg_id:
                return dict(msg["content"])

    async def _settle(self, kernel: Any) -> None:
        deadline = time.monotonic() + SETTLE
        while getattr(kernel, "execution_state", "idle") == "busy":
            if time.monotonic() > deadline:
                return
            await asyncio.sleep(0.002)

    def _parse(self, path: str, reply: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
        result = (reply.get("user_expressions") or {}).get("think") or {}
        if reply.get("status") != "ok" or result.get("status") != "ok":
            why = result.get("ename") or reply.get("ename") or reply.get("status") or "no answer"
            return _answer("error", path, f"the kernel could not run the inspection: {why}")
        text = str((result.get("data") or {}).get("text/plain") or "")
        try:
            body = json.loads(ast.literal_eval(text))
        except (ValueError, SyntaxError, TypeError):
            return _answer("error", path, "the kernel's answer could not be read", kernel=info)
        if not isinstance(body, dict) or body.get("error"):
            why = body.get("error") if isinstance(body, dict) else "not an object"
            return _answer("error", path, f"the kernel could not be inspected: {why}")
        return {
            "status": "ok",
            "path": path,
            "message": "",
            "kernel": info,
            "variables": list(body.get("variables") or []),
            "missing": list(body.get("missing") or []),
            **{k: body[k] for k in ("omitted", "not_described", "truncated") if k in body},
            "kernel_ms": body.get("elapsed_ms"),
        }
