"""What a sandboxed run returns, and the output buffer that truncates floods."""

from __future__ import annotations

import codecs
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: The closed set of error categories (``disk``: the write budgets).
ERROR_CATEGORIES = ("syntax", "runtime", "timeout", "memory", "killed", "disk")


@dataclass
class ExecResult:
    """The outcome of one ``run_python`` / ``run_bash`` call.

    ``outputs`` holds MIME bundles (``{"image/png": base64, "text/plain": ...}``) in the order
    they were displayed; ``error_category`` is one of :data:`ERROR_CATEGORIES` or ``None``.
    ``warnings`` carries the tier-3 notice and notes such as a reset warm worker.
    """

    ok: bool
    exit_code: int | None = 0
    stdout: str = ""
    stderr: str = ""
    outputs: list[dict[str, Any]] = field(default_factory=list)
    error_category: str | None = None
    error: str = ""
    traceback: str = ""
    duration_ms: float = 0.0
    truncated: bool = False
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line for the action log, e.g. ``exit=0, stdout=1234 chars``."""
        parts = [f"exit={self.exit_code}", f"stdout={len(self.stdout)} chars"]
        if self.stderr:
            parts.append(f"stderr={len(self.stderr)} chars")
        if self.outputs:
            parts.append(f"outputs={len(self.outputs)}")
        if self.error_category:
            parts.append(f"error={self.error_category}")
        if self.truncated:
            parts.append("truncated")
        return ", ".join(parts)


class OutputBuffer:
    """Keeps the first ``limit`` bytes of stdout+stderr together; counts the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept = 0
        self.dropped = 0
        self.parts: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self._dec = {s: codecs.getincrementaldecoder("utf-8")("replace") for s in self.parts}

    @property
    def truncated(self) -> bool:
        return self.dropped > 0

    def feed(self, stream: str, data: bytes, final: bool = False) -> str:
        """Add bytes; return the text that was kept (to stream live), possibly empty."""
        room = max(0, self.limit - self.kept)
        keep, drop = data[:room], data[room:]
        self.kept += len(keep)
        self.dropped += len(drop)
        text = self._dec[stream].decode(keep, final or bool(drop))
        if text:
            self.parts[stream].append(text)
        return text

    def text(self, stream: str) -> str:
        """Everything kept for ``stream``, with a note when output was dropped."""
        out = "".join(self.parts[stream])
        if self.dropped and stream == "stdout":
            out += (
                f"\n[output truncated: {self.kept + self.dropped} bytes written, "
                f"only the first {self.kept} kept (max_output_bytes)]\n"
            )
        return out


def timeout_text(limit: float, default: float, ceiling: float) -> str:
    """Why a foreground run was killed at its wall clock, and how to give it longer."""
    return (
        f"timed out after {limit:g} s wall clock; the process group was killed. A foreground "
        f"run may take {default:g} s by default (c.SandboxConfig.timeout) and up to "
        f"{ceiling:g} s when the call asks for more with its timeout argument "
        "(c.SandboxConfig.max_timeout); run longer work as a background job (run_job)"
    )


def classify(
    *,
    kind: str,
    exit: dict[str, Any] | None,
    kill_reason: str | None,
    kill_detail: str = "",
    report: dict[str, Any] | None,
    out: OutputBuffer,
    outputs: list[dict[str, Any]],
    limit: float,
    diag: Callable[[], str],
    default: float | None = None,
    ceiling: float | None = None,
) -> ExecResult:
    """Turn what we saw of a run into an :class:`ExecResult` with its error category.

    ``exit`` is the zygote's exit report (code or signal; ``lost`` if the zygote died;
    ``error`` if it could not start the process), ``kill_reason`` is why we killed it
    (``timeout``, ``interrupted``, ``disk``) and ``kill_detail`` says more, ``report`` is the
    result message a Python run sent over its channel. ``default`` and ``ceiling`` are the
    configured wall clock of a run and its largest value, named in a timeout's message.
    """
    res = ExecResult(
        ok=True,
        stdout=out.text("stdout"),
        stderr=out.text("stderr"),
        outputs=outputs,
        truncated=out.truncated,
    )
    ex = exit or {}
    sig = ex.get("signal")
    res.exit_code = ex.get("code") if exit else (0 if report is not None else None)
    if kill_reason == "timeout" or sig == signal.SIGXCPU:
        res.ok, res.error_category = False, "timeout"
        if sig == signal.SIGXCPU:
            res.error = ("timed out: its CPU time limit (c.SandboxConfig.cpu_seconds) was "
                         "reached; the process group was killed")  # fmt: skip
        else:
            res.error = timeout_text(limit, limit if default is None else default,
                                     limit if ceiling is None else ceiling)  # fmt: skip
    elif kill_reason == "disk":
        res.ok, res.error_category = False, "disk"
        res.error = kill_detail or "the run wrote more than its disk budget (max_write_mb)"
    elif kill_reason == "interrupted":
        res.ok, res.error_category, res.error = False, "killed", "interrupted by the user"
    elif report is not None and report.get("category"):
        res.ok, res.error_category = False, report["category"]
        res.error, res.traceback = report.get("error", ""), report.get("traceback", "")
        if report.get("exit_code") is not None:
            res.exit_code = report["exit_code"]
        elif res.exit_code == 0:
            res.exit_code = 1
    elif ex.get("error"):
        res.ok, res.error_category, res.error = False, "killed", str(ex["error"])
    elif ex.get("lost"):
        res.ok, res.error_category = False, "killed"
        res.error = kill_detail or f"the sandbox process died unexpectedly; {diag()}"
    elif sig is not None:
        res.ok, res.error_category = False, "killed"
        name = signal.Signals(sig).name if sig in signal.valid_signals() else str(sig)
        hint = " (possibly out of memory)" if sig == signal.SIGKILL else ""
        res.error = f"killed by {name}{hint}"
        res.exit_code = -sig
    elif kind in ("python", "warm") and report is None:
        res.ok, res.error_category = False, "killed"
        who = "the process" if kind == "python" else "the warm worker"
        res.error = f"{who} exited with code {res.exit_code} before reporting"
    elif kind == "bash" and res.exit_code not in (0, None):
        res.ok, res.error_category = False, "runtime"
        res.error = f"exit code {res.exit_code}"
    return res
