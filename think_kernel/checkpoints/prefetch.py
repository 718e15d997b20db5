"""Copies ahead: the workspace's small files, read when a session's file watch starts.

Sandboxed code may change a file the agent never read (``sed -i`` on a module, a script that
rewrites a config); the watch names it only after the fact, when its earlier content is gone.
So when the watch starts, the small files of the folders it watches are copied into the
checkpoints' blob folder, shallowest folders first, within ``CheckpointConfig.prefetch_mb``;
the recorder keeps them current from the watch's events (a person's save is read again before
the next run), so a run's change to one of them has its prior state. Hidden files are not
copied (``.env`` and the like stay where they are), nor what the watch skips.

    found = copy_ahead(fs, blobs, root, watcher.folders(), max_bytes=32 << 20,
                       max_file=1 << 20, max_files=1000)   # [(path, blob, size, mtime_ns)]
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path
from typing import Any

from ..collab.watch import server_owned

log = logging.getLogger(__name__)


def copy_ahead(
    fs: Any,
    blobs: Any,
    root: Path,
    folders: list[str],
    *,
    max_bytes: int,
    max_file: int,
    max_files: int,
) -> list[tuple[str, str, int, int]]:
    """Copy the small files of ``folders`` (blocking); return ``(path, blob key, size,
    mtime_ns)`` of each. Files are read through ``fs`` (no link followed); one that cannot
    be read is left out."""
    out: list[tuple[str, str, int, int]] = []
    left = max_bytes
    for folder in folders:
        for rel, st in _small_files(root, folder, max_file):
            if len(out) >= max_files or left <= 0:
                return out
            if st.st_size > left:
                continue
            try:
                with fs.open_read(rel, follow=False) as f:
                    data = f.read(max_file + 1)
            except OSError:
                continue
            if len(data) > max_file:
                continue  # it grew meanwhile
            out.append((rel, blobs.save_sync(bytes(data)), len(data), st.st_mtime_ns))
            left -= len(data)
    return out


def _small_files(root: Path, folder: str, max_file: int) -> list[tuple[str, os.stat_result]]:
    """The regular, visible files of one folder up to ``max_file`` bytes, by name."""
    try:
        with os.scandir(root / folder if folder else root) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return []
    found = []
    for entry in entries:
        if entry.name.startswith(".") or server_owned(entry.name):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_size <= max_file:
            found.append((f"{folder}/{entry.name}" if folder else entry.name, st))
    return found
