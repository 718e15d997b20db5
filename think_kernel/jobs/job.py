"""One background job: its sandboxed process, its log, and the loop that follows it to its
end (output into the log, the wall clock, the memory limit, Stop).

A job is a bash run of the session's sandbox started with the job's own rlimits
(:meth:`Sandbox.start_job`); nothing of the foreground run's limits applies to it. Its end
is one of the closed set :data:`STATES` (besides ``running``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..waits import wait_for
from .config import JobsConfig
from .log import JobLog

if TYPE_CHECKING:
    from ..sandbox import Sandbox
    from ..sandbox.runs import Run

#: How a job ended: exit 0, another exit code, its wall clock, its memory limit, a disk
#: budget, Stop, a signal, or its kernel (and sandbox) went away while it ran.
STATES = ("running", "done", "failed", "timeout", "memory", "disk", "stopped", "killed", "lost")

_EXIT_GRACE = 1.0  # seconds for its pipes to close once the process is gone
_KILL_GRACE = 3.0  # seconds for the launcher to report a killed job


def job_memory(session_pids: list[int], ns_pid: int) -> int:
    """Resident bytes of a job's processes: those of the session whose session id is the
    job's process (each run calls setsid(), and seccomp keeps its children in it). ``ns_pid``
    is the job's pid as its launcher sees it (inside the sandbox's pid namespace)."""
    host = None
    stats: list[tuple[int, int]] = []  # (sid, rss pages) per process, in host pids
    for pid in session_pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
            if host is None:
                with open(f"/proc/{pid}/status", "rb") as f:
                    for line in f:
                        if line.startswith(b"NSpid:"):
                            if int(line.split()[-1]) == ns_pid:
                                host = pid
                            break
        except (OSError, ValueError):
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()
        stats.append((int(fields[3]), int(fields[21])))  # session, rss
    if host is None:
        return 0
    page = os.sysconf("SC_PAGE_SIZE")
    return sum(rss for sid, rss in stats if sid == host) * page


@dataclass(eq=False)
class Job:
    """A background job of one session, as the registry and the tools see it."""

    name: str
    command: str
    session_id: str
    wake: bool
    config: JobsConfig
    started_at: float = field(default_factory=time.time)
    state: str = "running"
    exit_code: int | None = None
    error: str = ""
    ended_at: float | None = None
    peak_memory: int = 0
    run: Run | None = None
    log: JobLog = field(init=False)
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    stop_reason: str | None = None
    stop_state: str = "stopped"  # "lost" when its kernel ends it
    sandbox: Any = None  # the Sandbox it runs in

    def __post_init__(self) -> None:
        self.log = JobLog(self.config.log_bytes)

    @property
    def elapsed(self) -> float:
        """Seconds it ran (so far, or until its end)."""
        return (self.ended_at or time.time()) - self.started_at

    def describe(self, tail: int = 0) -> dict[str, Any]:
        """Its status as the tools, the store and the REST API show it."""
        out: dict[str, Any] = {
            "name": self.name,
            "command": self.command[:500],
            "state": self.state,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "elapsed": round(self.elapsed, 1),
            "lines": self.log.lines,
            "bytes": self.log.bytes,
            "percent": self.log.percent,
            "exit_code": self.exit_code,
            "error": self.error,
            "wake": self.wake,
            "limits": {
                "timeout_s": self.config.timeout,
                "memory_mb": self.config.memory_mb,
                "cpu_seconds": self.config.cpu_seconds,
            },
        }
        if tail:
            out["tail"] = self.log.tail(tail)[-4000:]
        return out

    def end(self, state: str, error: str = "", exit_code: int | None = None) -> None:
        """Record its end (once)."""
        if self.state != "running":
            return
        self.state, self.error, self.exit_code = state, error, exit_code
        self.ended_at = time.time()
        self.ended.set()


async def follow(job: Job, sandbox: Sandbox, on_change: Any) -> None:
    """Read ``job``'s output into its log until it ends; kill it past its wall clock or its
    memory limit; record how it ended. ``on_change()`` is called after each piece of output."""
    run = job.run
    assert run is not None
    cfg = job.config
    loop = asyncio.get_running_loop()
    ooms = sandbox.oom_kills()
    deadline = loop.time() + cfg.timeout if cfg.timeout > 0 else float("inf")
    watch = sandbox.watch_job(run, cfg.max_write_mb)
    try:
        await _read(job, sandbox, on_change, deadline)
    finally:
        if watch is not None:
            watch.stop()
    for stream in ("stdout", "stderr"):
        job.log.feed(stream, b"", final=True)
    job.end(*_outcome(job, run, sandbox.oom_kills() > ooms))


async def _read(job: Job, sandbox: Sandbox, on_change: Any, deadline: float) -> None:
    """The job's events until it ended (or its kill was never reported)."""
    run = job.run
    assert run is not None
    cfg = job.config
    loop = asyncio.get_running_loop()
    next_check = loop.time()
    eofs: set[str] = set()
    exit_by: float | None = None
    kill_by: float | None = None
    while True:
        now = loop.time()
        if run.exit is not None and (len(eofs) == 2 or (exit_by is not None and now >= exit_by)):
            break
        if run.exit is not None and exit_by is None:
            exit_by = now + _EXIT_GRACE
        if run.kill_reason is None and now >= deadline:
            await _kill(job, sandbox, "timeout")
        if run.kill_reason is not None:  # killed (here, by Stop or by the disk watch)
            if kill_by is None:
                kill_by = deadline = min(deadline, now + _KILL_GRACE)
            elif now >= kill_by:
                break  # the launcher never reported the kill: give up on it
        if cfg.memory_mb > 0 and run.kill_reason is None and now >= next_check:
            next_check = now + cfg.check_interval
            used = await asyncio.to_thread(job_memory, sandbox.session_pids(), run.pid or -1)
            job.peak_memory = max(job.peak_memory, used)
            if used > cfg.memory_mb << 20:
                await _kill(job, sandbox, "memory")
                kill_by = deadline = now + _KILL_GRACE
        checking = cfg.memory_mb > 0 and run.kill_reason is None
        wait = min(deadline, next_check if checking else deadline,
                   exit_by if exit_by is not None else deadline) - loop.time()  # fmt: skip
        try:
            kind, a, b = await wait_for(run.queue.get(), max(0.0, min(wait, 3600.0)))
        except TimeoutError:
            continue
        if kind == "out":
            job.log.feed(a, b)
            on_change()
        elif kind == "eof":
            eofs.add(a)
        # "wake" (a kill from outside this loop) and "exit" only wake it up.


async def _kill(job: Job, sandbox: Sandbox, reason: str) -> None:
    assert job.run is not None
    await sandbox.kill_run(job.run, reason)


def _outcome(job: Job, run: Run, oom: bool) -> tuple[str, str, int | None]:
    """(state, error, exit code) from what ended the job."""
    cfg = job.config
    ex = run.exit or {}
    code, sig = ex.get("code"), ex.get("signal")
    reason = run.kill_reason
    if reason == "timeout":
        why = f"killed after its wall-clock limit of {cfg.timeout:g} s (c.JobsConfig.timeout)"
        return "timeout", why, None
    if reason == "memory":
        return "memory", (f"killed: its processes used more than {cfg.memory_mb} MiB "
                          "(c.JobsConfig.memory_mb)"), None  # fmt: skip
    if reason == "disk":
        why = run.kill_detail.replace(
            "allowed per run (max_write_mb)", "allowed per job (c.JobsConfig.max_write_mb)"
        )
        return "disk", why or "it wrote past a disk budget", None
    if reason == "stopped":
        return job.stop_state, job.stop_reason or "stopped", None
    if run.exit is None or ex.get("lost"):
        return "lost", "its sandbox went away while it ran (the launcher was replaced)", None
    if ex.get("error"):
        return "failed", str(ex["error"]), None
    if sig is not None or code == 128 + signal.SIGKILL:
        if oom:
            why = "killed: the session reached its memory limit (session_memory_mb)"
            return "memory", why, None
        if sig == signal.SIGXCPU:
            why = f"its CPU time limit ({cfg.cpu_seconds} s, c.JobsConfig.cpu_seconds)"
            return "timeout", why, None
        name = signal.Signals(sig).name if sig in signal.valid_signals() else str(sig or code)
        return "killed", f"killed by {name}", None if sig is not None else code
    if code == 0:
        return "done", "", 0
    return "failed", f"exit code {code}", code
