"""Which attempts of its runs a think kernel says it owns: the server pings, the kernel's
``pong`` lists its ``(run_id, attempt)`` pairs, and an attempt it stops listing is lost.

    owners = Owners(links.send)
    owners.ping(kernel_id)                 # answered by a pong listing the kernel's runs
    run.ping_floor = owners.next_ping      # a chat frame went out: later pongs must list it
    owners.on_pong(info, frame)            # a pong listener of the links
    owners.lost(run, grace)                # True once the kernel stopped listing the attempt
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from think_kernel.wire.base import Frame
from think_kernel.wire.link import PingFrame

from .run import ChatRun

if TYPE_CHECKING:
    from ..link import KernelInfo


class Owners:
    """The last pong of each kernel, and the pings sent to get them."""

    def __init__(self, send: Callable[[str, Frame], bool]) -> None:
        self.send = send
        self.next_ping = 1
        self._pongs: dict[str, tuple[int, set[tuple[str, int]]]] = {}

    def ping(self, kernel_id: str) -> None:
        """Ask a kernel which runs it owns (answered by a ``pong`` listing them)."""
        ping_id = self.next_ping
        self.next_ping += 1
        self.send(kernel_id, PingFrame(ping_id))

    def on_pong(self, info: KernelInfo, frame: dict[str, Any]) -> None:
        """Record the attempts a kernel listed in its answer to one of our pings."""
        ping_id = frame.get("id")
        runs = frame.get("runs")
        if not isinstance(ping_id, int) or not isinstance(runs, list):
            return  # a keep-alive pong, or a kernel that does not list its runs
        keys = {
            (str(r[0]), int(r[1]))
            for r in runs
            if isinstance(r, list) and len(r) == 2 and isinstance(r[1], int)
        }
        self._pongs[info.kernel_id] = (ping_id, keys)

    def lost(self, run: ChatRun, grace: float) -> bool:
        """Whether the kernel stopped listing this attempt for ``grace`` seconds.

        A pong may overtake the stored ``run_end`` of a run that just finished: only a run
        still missing after ``grace`` counts as lost.
        """
        if run.kernel_id is None or not run.delivered or run.ping_floor == 0:
            return False
        pong = self._pongs.get(run.kernel_id)
        if pong is None or pong[0] < run.ping_floor:
            return False
        if run.key in pong[1]:
            run.missing_since = None
            return False
        now = time.monotonic()
        if run.missing_since is None:
            run.missing_since = now
        return now - run.missing_since >= grace
