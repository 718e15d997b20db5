"""Finding the processes a test started, by a marker in their command line (a sandboxed
command that must be killed by Stop, a crash, a restart)."""

from __future__ import annotations

import os
from pathlib import Path


def marked_loop(marker: str, body: str = "sleep 0.1") -> str:
    """A bash command that loops forever in a process whose command line holds ``marker``:
    a shell of its own, since the bash that runs a command may have been started before it
    (``prime_bash``), with its bootstrap for a command line."""
    return f"sh -c 'while true; do {body}; done' {marker}"


def processes_with(marker: str) -> list[int]:
    """Pids (not this process's) whose command line holds ``marker``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmd:
            found.append(int(pid))
    return found


def running(pid: int) -> bool:
    """Whether process ``pid`` exists and has not exited (a zombie has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].split()[0] != "Z"
