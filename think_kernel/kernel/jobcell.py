"""``%%think_job [NAME]`` cells: the cell's body starts as a background job of the session
(``run_job``'s limits, not a foreground run's), and the cell follows its progress in one
display that updates in place until the job ends.

Interrupting the cell (Stop) stops following, not the job: it runs on, in the sidebar and
``job_status``, until it ends or ``stop_job`` (or the sidebar's Stop) ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable
from typing import Any

from ..jobs import Job, JobError
from ..waits import wait_for

#: How often the cell's display is brought up to date (seconds).
REFRESH = 0.5
TAIL_LINES = 8

Out = Callable[[str, dict[str, Any]], None]


def job_view(job: Job, note: str = "") -> dict[str, str]:
    """The cell's display of ``job``: its state and progress, then its last lines."""
    d = job.describe()
    parts = [f"{d['lines']} lines", f"{d['elapsed']:.0f} s"]
    if d["percent"] is not None:
        parts.insert(0, f"{d['percent']:g}%")
    state = job.state
    if d["exit_code"] is not None and job.state != "done":
        state += f" (exit {d['exit_code']})"
    head = f"job {job.name}: {state} · {' · '.join(parts)}"
    if job.error and job.state != "running":
        head += f" — {job.error}"
    if note:
        head += f"\n{note}"
    tail = job.log.tail(TAIL_LINES)
    plain = f"{head}\n{tail}" if tail else head
    fence = "````"
    md = f"**{head}**" + (f"\n\n{fence}\n{tail}\n{fence}" if tail else "")
    return {"text/plain": plain, "text/markdown": md}


async def job_cell(runtime: Any, args: str, command: str, out: Out) -> dict[str, Any]:
    """Start ``command`` as a job named by ``args`` (or job-N) and follow it in the cell;
    the ``execute_reply`` content (an error when the job did not end with exit 0)."""
    try:
        job = await runtime.jobs.start(
            runtime.session_id, command, args.strip(), store=runtime.store,
            wake_scheduler=None,
        )  # fmt: skip
    except JobError as e:
        return _failed(out, "JobError", str(e))
    display = {"display_id": f"think-job-{uuid.uuid4().hex[:12]}"}
    out("display_data", {"data": job_view(job), "metadata": {}, "transient": display})
    try:
        while not job.ended.is_set():
            with contextlib.suppress(TimeoutError):
                await wait_for(job.ended.wait(), REFRESH)
            out("update_display_data", {"data": job_view(job), "metadata": {},
                                        "transient": display})  # fmt: skip
    except asyncio.CancelledError:
        note = (f"No longer followed here: the job runs on (the sidebar and job_status show "
                f"it; stop_job('{job.name}') or the sidebar's Stop ends it).")  # fmt: skip
        out("update_display_data", {"data": job_view(job, note), "metadata": {},
                                    "transient": display})  # fmt: skip
        raise
    if job.state == "done":
        return {"status": "ok"}
    return _failed(out, "JobError", f"job {job.name} ended: {job.state} ({job.error})")


def _failed(out: Out, ename: str, evalue: str) -> dict[str, Any]:
    out("error", {"ename": ename, "evalue": evalue, "traceback": [f"{ename}: {evalue}"]})
    return {"status": "error", "ename": ename, "evalue": evalue, "traceback": []}
