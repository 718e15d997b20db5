"""The memory the chat kernels may take, and what the server's process tree takes now.

    budget = MemoryBudget(limit_mb=2048)     # or MemoryBudget(derived_limit_mb())
    budget.over()                            # True when the tree's PSS passes the limit

The measure is the proportional set size (``/proc/<pid>/smaps_rollup``) of the server and
every process under it (kernels, their sandboxes): pages shared between processes (a forked
worker and its zygote) count once, not once per process. Past the limit, the pool starts no
spare and hibernates idle chats, least recently used first (see ``ChatKernels``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

#: Share of a memory cgroup's limit the derived budget takes: the rest is for the server
#: itself and for what a chat's run allocates before the next check.
CGROUP_SHARE = 0.8
CGROUP_LIMITS = (
    Path("/sys/fs/cgroup/memory.max"),  # cgroup v2
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),  # cgroup v1
)


def derived_limit_mb(files: tuple[Path, ...] = CGROUP_LIMITS) -> float:
    """A budget from this process's memory cgroup limit (0 when there is none)."""
    for path in files:
        try:
            raw = path.read_text().strip()
        except OSError:
            continue
        if raw.isdigit():
            limit = int(raw)
            # cgroup v1 says "no limit" with a number near 2**63.
            if 0 < limit < 2**60:
                return limit / 2**20 * CGROUP_SHARE
    return 0.0


def tree_pss_mb(root: int | None = None) -> float:
    """PSS in MB of ``root`` (this process) and every process under it."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    total_kb, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total_kb += int(line.split()[1])
                    break
        except (OSError, ValueError):
            continue  # gone, or not ours to read
    return total_kb / 1024


class MemoryBudget:
    """A limit on the memory of the server's tree (0: no limit)."""

    def __init__(self, limit_mb: float, measure: Callable[[], float] = tree_pss_mb) -> None:
        self.limit_mb = max(0.0, limit_mb)
        self.measure = measure
        self.last_mb = 0.0  # the last measure (shown in the kernels API)

    def over(self) -> bool:
        """Whether the tree takes more than the limit now (never, without a limit)."""
        if not self.limit_mb:
            return False
        self.last_mb = self.measure()
        return self.last_mb > self.limit_mb
