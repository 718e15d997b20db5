"""The background job tools: ``run_job``, ``job_status``, ``job_output``, ``stop_job``.

A job runs in the session's sandbox like ``bash`` (same isolation, uid and network rules),
but past the model step and the turn, under the job limits (``c.JobsConfig``), with its
output in a bounded log. ``run_job`` goes through the approval policy as ``bash`` does.
"""

from __future__ import annotations

import json

from ..tools.base import ToolContext, ToolError, ToolOutput, optional, read_only
from ..tools.summarize import for_model
from .job import Job
from .registry import JobError, Jobs


def _jobs(ctx: ToolContext) -> Jobs:
    jobs = ctx.services.jobs
    if jobs is None:
        raise ToolError("background jobs are not available in this session", "NO_JOBS")
    return jobs


def _line(job: Job) -> str:
    d = job.describe()
    pct = f", {d['percent']:g}%" if d["percent"] is not None else ""
    end = f", {d['error']}" if d["error"] else ""
    code = f", exit code {d['exit_code']}" if d["exit_code"] is not None else ""
    return (f"{job.name}: {job.state}{code}{end} ({d['elapsed']:.0f} s, {d['lines']} lines"
            f"{pct})")  # fmt: skip


# The four go together and the model can do without them (it runs `bash` instead): on a
# context window too small for every tool's spec, they are not offered.
@optional
async def run_job(ctx: ToolContext, command: str, name: str = "", wake: bool = False) -> ToolOutput:
    """Start a long command in the background (a training run, a big download into the
    sandbox, a slow build): it keeps running after this step and this turn, with larger limits
    than `bash` (hours of wall clock, see job_status), in the same sandbox. Its output goes to
    a log: read it with job_output, follow it with job_status, end it with stop_job. Prefer it
    to `bash` for anything that may take more than a minute.

    Args:
        command: the command line, run with `bash -c` in the workspace
        name: a short name to refer to it (default job-N)
        wake: when it ends, post a message in this chat that starts a new run, so you can
            read its output and go on
    """
    jobs = _jobs(ctx)
    wake_fn = ctx.services.reminders.wake if ctx.services.reminders is not None else None
    try:
        job = await jobs.start(ctx.session_id, command, name, wake=wake, store=ctx.store,
                               wake_scheduler=wake_fn)  # fmt: skip
    except JobError as e:
        raise ToolError(str(e), "BAD_JOB") from None
    cfg = jobs.config
    limit = f"{cfg.timeout:g} s wall clock" if cfg.timeout > 0 else "no wall-clock limit"
    mem = f"{cfg.memory_mb} MiB of memory" if cfg.memory_mb > 0 else "the session's memory"
    then = ("you will be woken with a message when it ends" if wake
            else "check on it with job_status")  # fmt: skip
    text = (
        f"Started background job {job.name!r} ({limit}, {mem}); {then}. "
        f"job_output({job.name!r}) shows its log, stop_job({job.name!r}) ends it."
    )
    return ToolOutput(text=text, summary=f"job {job.name} started")


@optional
@read_only
async def job_status(ctx: ToolContext, name: str = "") -> ToolOutput:
    """The state of one background job, or of all of this session's: running or how it
    ended (done, failed, timeout, memory, stopped, killed, lost), elapsed time, output lines,
    the last percentage it printed, its exit code and limits.

    Args:
        name: the job's name (empty: every job of this session)
    """
    jobs = _jobs(ctx)
    if name:
        job = jobs.get(ctx.session_id, name)
        if job is None:
            past = [p for p in jobs.past(ctx.session_id) if p.get("name") == name]
            if past:
                return ToolOutput(text=json.dumps(past[-1], indent=1), summary=past[-1]["state"])
            raise ToolError(f"no job {name!r} in this session", "NO_SUCH_JOB")
        return ToolOutput(text=json.dumps(job.describe(tail=5), indent=1), summary=job.state)
    listed = jobs.of(ctx.session_id)
    past = [p for p in jobs.past(ctx.session_id) if jobs.get(ctx.session_id, p["name"]) is None]
    if not listed and not past:
        return ToolOutput(text="No background jobs in this session.", summary="0 jobs")
    lines = [f"{p['name']}: {p['state']} ({p.get('error') or 'earlier kernel'})" for p in past]
    lines += [_line(j) for j in listed]
    return ToolOutput(text="\n".join(lines), summary=f"{len(lines)} jobs")


@optional
@read_only
async def job_output(ctx: ToolContext, name: str, tail: int = 50) -> ToolOutput:
    """The last lines of a background job's log (stdout and stderr as they came), with its
    state.

    Args:
        name: the job's name
        tail: how many of the last lines (default 50)
    """
    jobs = _jobs(ctx)
    job = jobs.get(ctx.session_id, name)
    if job is None:
        past = [p for p in jobs.past(ctx.session_id) if p.get("name") == name]
        if past:  # an earlier kernel's job: only the last lines its record kept
            row = past[-1]
            head = f"{name}: {row.get('state')} ({row.get('error') or 'an earlier kernel'})"
            text = f"{head}\n[its last lines, as recorded]\n{row.get('tail') or '(none)'}"
            return ToolOutput(text=text, summary=f"{name}: {row.get('state')}")
        raise ToolError(f"no job {name!r} in this session (job_status lists them)",
                        "NO_SUCH_JOB")  # fmt: skip
    tail = max(1, min(int(tail), 5000))
    body = job.log.tail(tail)
    head = _line(job)
    if job.log.dropped:
        head += f"\n[the log keeps the last {job.log.limit} characters; {job.log.dropped} dropped]"
    text = f"{head}\n{for_model(body)}" if body else f"{head}\n(no output yet)"
    return ToolOutput(text=text, summary=f"{job.name}: {job.state}, {job.log.lines} lines",
                      full=f"{head}\n{body}")  # fmt: skip


@optional
async def stop_job(ctx: ToolContext, name: str) -> ToolOutput:
    """Stop a background job (its whole process group is killed); `all` stops every one.

    Args:
        name: the job's name, or `all`
    """
    jobs = _jobs(ctx)
    try:
        if name == "all":
            stopped = await jobs.stop_all(ctx.session_id, "stopped by the agent")
            n = len(stopped)
            return ToolOutput(text=f"Stopped {n} jobs.", summary=f"{n} stopped")
        job = await jobs.stop(ctx.session_id, name, "stopped by the agent")
    except JobError as e:
        raise ToolError(str(e), "NO_SUCH_JOB") from None
    return ToolOutput(text=_line(job), summary=f"{job.name}: {job.state}")


JOB_TOOLS = [run_job, job_status, job_output, stop_job]
