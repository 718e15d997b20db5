"""The durable scheduler: timed work in the ``schedules`` table, run by kind, at least once.

    scheduler = Scheduler(store, owner="srv_...")
    scheduler.register("run_retry", handler)        # async handler(payload) -> Any
    scheduler.register("reminder", fire)            # or handler(payload, firing)
    await store.add_schedule("run_retry", due_at, {"run_id": ...})
    scheduler.wake()                                 # a new row may be due sooner
    task = asyncio.create_task(scheduler.run())

One server extension runs every kind of deferred work through one of these (a standalone
kernel runs its own over its local store, for its session's reminders only). Delivery:

- **At least once.** A row is claimed (``running``) with a lease this scheduler renews while
  the handler runs. A claim whose lease ran out, or whose owner process is gone (same host,
  pid not alive), is claimed again by the next scheduler that looks: a server killed between
  a claim and the end of its handler does not lose the work.
- **Idempotency key per firing.** ``firing.key`` (``<schedule id>:<occurrence epoch>``) is
  the same for every attempt at one firing and recorded in ``firings``; handlers use it to
  do their work once (a reminder's message id is derived from it). A firing whose record
  says ``done`` is not handed to its handler again.
- **Bounded retries with backoff.** A handler that raises is retried after
  ``backoff(attempt)`` seconds (exponential, capped), up to ``max_attempts`` attempts; then
  the row is ``failed`` with the error. A recurring (cron) row then moves on to its next
  occurrence, keeping the error in ``last_error``.
- **Late.** A firing is late when the time it was last due passed before this scheduler
  started (the process was down) or more than ``late_after`` seconds ago; handlers are told.
- **Not now, or not at all.** A handler may raise :class:`Defer` (the same firing, with the
  same key, is due again later; its attempt is not counted) or :class:`Skip` (the firing is
  recorded ``skipped`` with the reason and its work is not done; a cron row moves on).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..waits import wait_for
from .when import next_occurrence

if TYPE_CHECKING:
    from ..store import Store

log = logging.getLogger(__name__)
Handler = Callable[..., Awaitable[Any]]


@dataclass(frozen=True)
class Firing:
    """One firing of a schedule, as its handler sees it."""

    key: str  # the idempotency key: same for every attempt at this firing
    schedule_id: str
    kind: str
    session_id: str | None
    occurrence_at: float  # when it was due
    attempt: int  # 1 for the first attempt at this firing
    late: bool
    cron: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)


class Defer(Exception):
    """Raised by a handler: not now; the same firing is due again at ``until`` (epoch)."""

    def __init__(self, until: float, reason: str) -> None:
        super().__init__(reason)
        self.until = until
        self.reason = reason


class Skip(Exception):
    """Raised by a handler: this firing is recorded as skipped, with the reason, undone."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def backoff(attempt: int, base: float = 2.0, cap: float = 300.0) -> float:
    """Seconds before retry ``attempt`` (1-based): base, 2 x base, 4 x base ... up to cap."""
    return float(min(cap, base * 2 ** max(0, attempt - 1)))


def is_late(occurrence_at: float, now: float, started_at: float, late_after: float) -> bool:
    """Whether a firing is late: it fell due before the scheduler started (its process was
    down then) or more than ``late_after`` seconds ago."""
    return occurrence_at < started_at or now - occurrence_at > late_after


def pid_alive(pid: int) -> bool:
    """Whether a process of this host with that pid exists (True when unsure)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, owned by someone else
        return True
    return True


class Scheduler:
    """Polls for due schedules (sleeping until the next one, at most ``poll`` seconds)."""

    def __init__(
        self,
        store: Store,
        poll: float = 5.0,
        *,
        owner: str = "",
        lease: float = 30.0,
        max_attempts: int = 5,
        backoff_base: float = 2.0,
        backoff_cap: float = 300.0,
        late_after: float = 60.0,
        session_id: Callable[[], str | None] | None = None,
    ) -> None:
        self.store = store
        self.poll = poll
        self.owner = f"{owner or 'sched'}@{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self.pid = os.getpid()
        self.lease = lease
        self.max_attempts = max(1, max_attempts)
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.late_after = late_after
        # A standalone kernel fires only its own session's rows (the server fires the rest).
        self.session_filter = session_id
        self.handlers: dict[str, Handler] = {}
        self._wants_firing: dict[str, bool] = {}
        self._wake = asyncio.Event()
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self.started_at = time.time()

    def register(self, kind: str, handler: Handler) -> None:
        """Run ``handler(payload)`` (or ``handler(payload, firing)``) for due rows of a kind."""
        self.handlers[kind] = handler
        try:
            params = inspect.signature(handler).parameters.values()
        except (TypeError, ValueError):
            params = []  # type: ignore[assignment]
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
        self._wants_firing[kind] = varargs or len(positional) >= 2

    def wake(self) -> None:
        """Look again now (a schedule was added)."""
        self._wake.set()

    @property
    def running(self) -> int:
        """How many handlers are running now."""
        return len(self._tasks)

    def _scope(self) -> dict[str, Any]:
        scope: dict[str, Any] = {"kinds": sorted(self.handlers)}
        if self.session_filter is not None:
            scope["session_id"] = self.session_filter() or ""
        return scope

    async def run(self) -> None:
        """Run due work forever (cancel the task to stop); one bad pass never ends it."""
        self.started_at = min(self.started_at, time.time())
        while True:
            try:
                await self.run_due()
                await self.store.renew_leases(list(self._tasks), self.owner, self.lease)
                due = await self.store.next_schedule_due(**self._scope())
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("scheduler pass failed")
                due = None
            wait = self.poll if due is None else min(self.poll, max(0.0, due - time.time()))
            if self._tasks:
                wait = min(wait, self.lease / 3)  # renew leases well before they end
            self._wake.clear()
            try:
                await wait_for(self._wake.wait(), max(wait, 0.01))
            except TimeoutError:
                pass

    async def run_due(self) -> int:
        """Start every due schedule of a known kind; return how many were started."""
        if not self.handlers:
            return 0
        started = 0
        now = time.time()
        for row in await self.store.due_schedules(now, **self._scope()):
            if row["id"] in self._tasks:
                continue  # ours, still running
            steal = None
            if row["status"] == "running":
                lease = row.get("lease_until")
                if lease is not None and lease >= now:
                    if not self._owner_gone(row):
                        continue
                    steal = row["owner"]
                log.info("schedule %s (%s): claim of %s lapsed, running it again",
                         row["id"], row["kind"], row.get("owner"))  # fmt: skip
            claimed = await self.store.claim_schedule(
                row["id"], self.owner, self.pid, self.lease, steal_from=steal
            )
            if claimed is None:
                continue
            sid = str(claimed["id"])
            task = asyncio.create_task(self._run_one(claimed))
            self._tasks[sid] = task
            task.add_done_callback(self._forget(sid))
            started += 1
        return started

    def _forget(self, sid: str) -> Callable[[asyncio.Task[None]], None]:
        def done(task: asyncio.Task[None]) -> None:
            if self._tasks.get(sid) is task:
                del self._tasks[sid]

        return done

    def _owner_gone(self, row: dict[str, Any]) -> bool:
        owner, pid = str(row.get("owner") or ""), row.get("owner_pid")
        if not owner or not isinstance(pid, int) or owner == self.owner:
            return False
        host = owner.split("@", 1)[1].split(":", 1)[0] if "@" in owner else ""
        if host != socket.gethostname() or pid == self.pid:
            return False  # another machine, or this very process: wait for the lease
        return not pid_alive(pid)

    async def _run_one(self, row: dict[str, Any]) -> None:
        try:
            await self._fire(row)
        except asyncio.CancelledError:
            raise
        except Exception:  # the store failed under us: the lease lapses, someone retries
            log.exception("schedule %s (%s): bookkeeping failed", row["id"], row["kind"])

    async def _fire(self, row: dict[str, Any]) -> None:
        kind, sid = row["kind"], row["id"]
        handler = self.handlers[kind]
        now = time.time()
        # Late against when it was last due: a firing deferred or retried on purpose is not
        # late for that (a first attempt that was late stays so: the record keeps it).
        late = is_late(float(row["due_at"]), now, self.started_at, self.late_after)
        record = await self.store.begin_firing(row, late)
        payload = row["payload"] if isinstance(row["payload"], dict) else {}
        firing = Firing(
            key=row["firing_key"],
            schedule_id=sid,
            kind=kind,
            session_id=row["session_id"],
            occurrence_at=float(row["occurrence_at"]),
            attempt=int(row["attempts"]),
            late=bool(record["late"]),
            cron=row.get("cron"),
            payload=payload,
        )
        if record["status"] == "done":
            # A previous attempt did the work and died before settling the row.
            await self._settle_done(row)
            return
        try:
            if self._wants_firing.get(kind):
                outcome = await handler(payload, firing)
            else:
                outcome = await handler(payload)
        except asyncio.CancelledError:
            raise
        except Defer as d:
            await self.store.finish_firing(firing.key, "deferred", error=d.reason)
            await self.store.settle_schedule(
                sid, self.owner, "pending", due_at=d.until, error=d.reason, uncount=True
            )
            return
        except Skip as s:
            await self._skipped(row, firing, s.reason)
            return
        except Exception as e:
            await self._failed(row, firing, e)
            return
        keep = outcome if isinstance(outcome, (dict, list, str, int, float)) else None
        await self.store.finish_firing(firing.key, "done", keep)
        await self._settle_done(row)

    async def _settle_done(self, row: dict[str, Any]) -> None:
        upcoming = self._next(row)
        if upcoming is None:
            await self.store.settle_schedule(row["id"], self.owner, "done", fired=True)
        else:
            await self.store.settle_schedule(
                row["id"], self.owner, "pending", due_at=upcoming, fired=True, next_occurrence=True
            )

    def _next(self, row: dict[str, Any]) -> float | None:
        cron = row.get("cron")
        if not cron:
            return None
        # The next occurrence after now: a cron row that was down for a day fires once (late),
        # not once per missed occurrence.
        after = max(time.time(), float(row["occurrence_at"]))
        return next_occurrence(cron, row.get("tz") or "UTC", after)

    async def _skipped(self, row: dict[str, Any], firing: Firing, reason: str) -> None:
        await self.store.finish_firing(firing.key, "skipped", {"skipped": reason}, error=reason)
        upcoming = self._next(row)
        if upcoming is None:
            await self.store.settle_schedule(row["id"], self.owner, "skipped", error=reason)
        else:
            await self.store.settle_schedule(
                row["id"], self.owner, "pending", due_at=upcoming, error=reason,
                next_occurrence=True,
            )  # fmt: skip

    async def _failed(self, row: dict[str, Any], firing: Firing, e: Exception) -> None:
        error = f"{type(e).__name__}: {e}"
        sid = row["id"]
        if firing.attempt < self.max_attempts:
            delay = backoff(firing.attempt, self.backoff_base, self.backoff_cap)
            log.warning("schedule %s (%s) attempt %d failed (%s); retry in %g s",
                        sid, row["kind"], firing.attempt, error, delay)  # fmt: skip
            await self.store.finish_firing(firing.key, "retrying", error=error)
            await self.store.settle_schedule(
                sid, self.owner, "pending", due_at=time.time() + delay, error=error
            )
            return
        log.error("schedule %s (%s) failed after %d attempts: %s",
                  sid, row["kind"], firing.attempt, error)  # fmt: skip
        await self.store.finish_firing(firing.key, "failed", error=error)
        upcoming = self._next(row)
        if upcoming is None:
            await self.store.settle_schedule(sid, self.owner, "failed", error=error)
        else:
            await self.store.settle_schedule(
                sid, self.owner, "pending", due_at=upcoming, error=error, next_occurrence=True
            )

    async def drain(self) -> None:
        """Wait until the handlers running now have finished (and settled their rows)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks.values()), return_exceptions=True)

    async def close(self) -> None:
        """Cancel running handlers and hand their claims back (another process may run them)."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        try:
            await self.store.release_claims(self.owner)
        except Exception:  # a closed store: the leases lapse instead
            log.debug("could not release schedule claims", exc_info=True)
