"""Settings of the task graph and of subagents (``c.TasksConfig.*``)."""

from __future__ import annotations

from traitlets import Float, Int
from traitlets.config import Configurable

from .graph import Limits


class TasksConfig(Configurable):
    """Task graph limits, subagent timeouts and the cadence of their checks."""

    max_depth = Int(
        3, config=True, help="Levels of subtasks below a request's root task. Default: 3."
    )
    max_children = Int(10, config=True, help="Subtasks of one task. Default: 10.")
    max_tasks = Int(50, config=True, help="Tasks of one request, its root included. Default: 50.")
    subagent_timeout = Float(
        600.0,
        config=True,
        help="Seconds a subagent may work before it is stopped (a delegation may ask for "
        "less). Default: 600 (10 minutes).",
    )
    subagent_max_running = Int(
        5, config=True, help="Subagents of a session running at the same time. Default: 5."
    )
    subagent_max_steps = Int(
        20, config=True, help="Model calls of one subagent before it stops. Default: 20."
    )
    subagent_heartbeat = Float(
        5.0,
        config=True,
        help="Seconds between heartbeats of running subagents (and timeout checks inside "
        "the kernel). Default: 5.",
    )
    subagent_first_check = Float(
        30.0,
        config=True,
        help="Seconds after a subagent starts before the server first checks it is alive "
        "(durable: a schedule row). Default: 30.",
    )
    subagent_check_interval = Float(
        60.0, config=True, help="Seconds between later checks of a subagent. Default: 60."
    )
    subagent_stale_after = Float(
        30.0,
        config=True,
        help="Seconds without a heartbeat after which a subagent counts as interrupted "
        "(its kernel died or hangs). Default: 30.",
    )

    def limits(self) -> Limits:
        """The graph limits in force."""
        return Limits(int(self.max_depth), int(self.max_children), int(self.max_tasks))
