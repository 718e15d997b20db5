"""Helpers for the attack suite (imported by name: tests/security is not a package)."""

from __future__ import annotations

import os
from typing import TypeVar

T = TypeVar("T")


def host_processes(session_id: str, needle: str = "") -> list[int]:
    """Host pids of live processes of this sandbox whose command line starts with ``needle``."""
    marker = f"THINK_SANDBOX={session_id}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if marker not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            if cmd.startswith(needle) and process_state(int(name)) not in ("Z", ""):
                found.append(int(name))
        except OSError:
            continue
    return found


def process_state(pid: int) -> str:
    """One-letter state of ``pid`` (R, S, T for stopped, Z...), or "" when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return ""
    return stat[stat.rindex(b")") + 2 :].split()[0].decode()
