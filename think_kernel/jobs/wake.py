"""A job's end told to its session: the message that wakes the agent, and, in a kernel
without a server, its firing (with a server, ``jupyter_ext/jobs.py`` fires it).

    scheduler.register(JOB_END, functools.partial(fire_here, runtime))
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..schedules.scheduler import Firing


def message_id(key: str) -> str:
    """The id of the message a job's end posts (the same for every attempt at that firing)."""
    return "m_job_" + hashlib.sha256(key.encode()).hexdigest()[:24]


def end_text(job: dict[str, Any]) -> str:
    """What the model (and the chat) read when a job it asked to be woken for ends."""
    name = str(job.get("name", ""))
    how = str(job.get("state", ""))
    if job.get("exit_code") is not None:
        how += f", exit code {job['exit_code']}"
    if job.get("error"):
        how += f": {job['error']}"
    elapsed = float(job.get("elapsed") or 0)
    lines = int(job.get("lines") or 0)
    text = (f"Background job {name!r} ended ({how}) after {elapsed:.0f} s and {lines} lines "
            "of output.")  # fmt: skip
    tail = str(job.get("tail") or "")
    if tail:
        text += f" Its last lines:\n```\n{tail}\n```"
    text += f"\njob_output({name!r}) shows more of its log."
    return text


def attachment(job: dict[str, Any], key: str) -> dict[str, Any]:
    """The ``job`` attachment of the message (for the UI, not the model)."""
    return {"kind": "job", "name": str(job.get("name", "")), "state": str(job.get("state", "")),
            "key": key}  # fmt: skip


async def fire_here(runtime: Any, payload: dict[str, Any], firing: Firing) -> dict[str, Any]:
    """Without a server: post the end of a job that asked to wake the agent into its
    session (once per firing) and run it here, after any run in progress."""
    if not payload.get("wake"):
        return {}
    store = runtime.store
    sid = firing.session_id or runtime.session_id
    mid = message_id(firing.key)
    message = await store.get_message(mid)
    if message is None:
        marks = [attachment(payload, firing.key)]
        message = await store.add_message(sid, "user", end_text(payload), id=mid, attachments=marks)
    elif await store.reply_text(mid):
        return {"message_id": mid}  # an earlier attempt ran it to the end
    async with runtime.run_lock:
        async for _event in runtime.run(message["content"], user_message_id=mid):
            pass
    return {"message_id": mid}
