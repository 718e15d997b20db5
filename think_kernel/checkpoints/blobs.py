"""The contents checkpoints keep: content-addressed files in the store's folder, never in the
workspace, in a folder of their own so that pruning can collect what no step uses.

    blobs = Blobs.beside(store)
    key = await blobs.save(b"print(1)\\n")      # sha256 of the bytes
    data = await blobs.load(key)
    removed = await blobs.collect(keep={key})  # files no kept step names (and not new)
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from pathlib import Path
from typing import Any

#: A blob younger than this is never collected: a turn saves a content before it records the
#: step that names it, possibly in another process.
GRACE = 3600.0


class Blobs:
    """Content-addressed blobs of checkpoints (one folder per store)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def beside(cls, store: Any) -> Blobs:
        """The checkpoints' folder next to the store's database."""
        return cls(Path(store.path).parent / "checkpoints")

    def _path(self, key: str) -> Path:
        if len(key) != 64 or not key.isalnum() or not key.isascii():
            raise KeyError(key)
        return self.folder / key[:2] / key

    def save_sync(self, data: bytes) -> str:
        """Store bytes by their hash (blocking); return the key."""
        key = hashlib.sha256(data).hexdigest()
        target = self._path(key)
        try:
            os.utime(target)  # in use again: not collected in the grace period
        except FileNotFoundError:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f"{key}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            tmp.replace(target)
        return key

    async def save(self, data: bytes) -> str:
        """:meth:`save_sync` off the event loop."""
        return await asyncio.to_thread(self.save_sync, data)

    def touch(self, key: str) -> bool:
        """Mark a blob in use again (blocking); False if it is gone."""
        try:
            os.utime(self._path(key))
        except FileNotFoundError:
            return False
        return True

    async def load(self, key: str) -> bytes:
        """A blob's bytes; KeyError if unknown."""
        path = self._path(key)
        try:
            return await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError:
            raise KeyError(key) from None

    async def collect(self, keep: set[str]) -> int:
        """Delete the blobs not in ``keep`` and older than :data:`GRACE`; return how many."""
        return await asyncio.to_thread(self._collect, keep)

    def _collect(self, keep: set[str]) -> int:
        removed = 0
        old = time.time() - GRACE
        if not self.folder.is_dir():
            return 0
        for sub in self.folder.iterdir():
            if not sub.is_dir():
                continue
            for f in sub.iterdir():
                if f.name in keep:
                    continue
                try:
                    if f.stat().st_mtime < old:
                        f.unlink()
                        removed += 1
                except FileNotFoundError:
                    continue
        return removed
