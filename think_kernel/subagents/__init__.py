"""Subagents: a task delegated to an agent loop that runs in parallel with its
own context, the ``fast`` model and the parent's tools through the parent.

:mod:`.manager` owns them (delegate, wait, cancel, heartbeat, recovery), :mod:`.runner` runs
one, :mod:`.stream` turns its events into ``subagent_*`` events, :mod:`.facet` gives it its
own conversation and Python worker, :mod:`.monitor` decides whether one is lost (also used
by the server's durable checks), :mod:`.tools` are what the model calls.
"""

from .manager import Handle, Subagents
from .monitor import Checks, mark_lost, owner_alive, verdict

__all__ = ["Checks", "Handle", "Subagents", "mark_lost", "owner_alive", "verdict"]
