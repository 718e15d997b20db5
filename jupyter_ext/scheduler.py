"""The server's scheduler: every kind of deferred work (run retries, reminders, subagent
checks) through one :class:`~think_kernel.schedules.Scheduler`, at least once.

    scheduler = Scheduler(store, owner=ext.owner)
    scheduler.register("run_retry", handler)           # async handler(payload[, firing])
    await store.add_schedule("run_retry", due_at, {"run_id": ...})
    scheduler.wake()                                    # a new row may be due sooner

The loop lives in ``think_kernel/schedules/scheduler.py`` because a standalone kernel (no
server) runs the same one over its local store for its own reminders.
"""

from think_kernel.schedules.scheduler import Firing, Handler, Scheduler, backoff

__all__ = ["Firing", "Handler", "Scheduler", "backoff"]
