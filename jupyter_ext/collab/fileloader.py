"""The file loader of a collaboration room that merges changes on disk into the room instead
of overwriting it, and the mapping that hands it out (see :mod:`.roomfiles`, which installs
them and keeps the rooms' files in step with sandboxed runs).

These subclass jupyter_server_ydoc's ``FileLoader`` and ``FileLoaderMapping``: the one place
that depends on their internals (``tests/collab/test_roomfiles.py`` fails if they move).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

from jupyter_server.utils import ensure_async
from jupyter_server_ydoc.loaders import FileLoader, FileLoaderMapping
from jupyter_server_ydoc.rooms import DocumentRoom
from jupyter_ydoc import YNotebook
from pycrdt import Map, Text
from tornado.web import HTTPError

from think_kernel.collab import ydocs
from think_kernel.collab.merge import merge_disk, merge_notebook

log = logging.getLogger(__name__)
DISK_ORIGIN = "disk"


class Rooms(Protocol):
    """What a loader tells its owner, :class:`~.roomfiles.RoomFiles`::

    loader.files.held(path)   # a sandboxed run owns the disk under path: do not save
    """

    loaders: dict[str, ThinkFileLoader]  # file id -> loader
    merged_at: dict[str, float]  # path -> when a change on disk was last merged

    def rooms_changed(self) -> None:
        """A room opened or closed."""

    def track(self, room: DocumentRoom) -> Any:
        """Watch what people do in ``room`` from now on."""

    def room(self, room_id: str) -> DocumentRoom | None:
        """The open room of that id, if any."""

    def held(self, path: str) -> bool:
        """Whether autosaves of ``path`` wait (a run holds its folder)."""

    def defer(self, room_id: str) -> None:
        """Save the room once the holds end."""


@dataclass
class _Base:
    """What a room's file held on disk when the room last read or wrote it."""

    content: Any
    state: bytes | None = None  # the room's state vector then (None: compare content)


def same_content(a: Any, b: Any) -> bool:
    """Whether two contents (a file's text, a notebook's JSON) are the same."""
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def room_content(room: DocumentRoom) -> Any:
    """The content a room saves: the text of a file, the JSON of a notebook."""
    if room.file_type == "notebook":
        return YNotebook(room.ydoc).get()
    return str(room.ydoc.get("source", type=Text))


def mark_clean(room: DocumentRoom | None, saved: dict[str, Any] | None = None) -> None:
    """Tell the tabs the document is saved (the room does this after its own saves).

    JupyterLab shows a tab as unsaved while the document's ``state.dirty`` is true; a save
    done here, or an autosave skipped because the file already holds the content, must clear
    it. Only changed keys are written (a write is an update, which would schedule a save).
    """
    if room is None:
        return
    state = room.ydoc.get("state", type=Map)
    digest = (saved or {}).get("hash")
    if state.get("dirty") is False and (not digest or state.get("hash") == digest):
        return
    with room.ydoc.transaction(origin=DISK_ORIGIN):
        if state.get("dirty") is not False:
            state["dirty"] = False
        if digest and state.get("hash") != digest:
            state["hash"] = digest


def merge_into_room(room: DocumentRoom, base: Any, disk: Any) -> bool:
    """Apply a change on disk (``base`` -> ``disk``) to the room, keeping its unsaved edits.

    Synchronous, one transaction: nothing else touches the document in between.
    """
    if room.file_type == "notebook":
        nb = YNotebook(room.ydoc)
        now = nb.get()
        merged = merge_notebook(base, dict(disk), now)
        if same_content(merged, now):
            return False
        with room.ydoc.transaction(origin=DISK_ORIGIN):
            ydocs.set_notebook(nb, merged)
        return True
    text = room.ydoc.get("source", type=Text)
    current = str(text)
    target = merge_disk(current if base is None else str(base), str(disk), current)
    if target == current:
        return False
    with room.ydoc.transaction(origin=DISK_ORIGIN):
        ydocs.apply_text(text, target)
    return True


class ThinkFileLoader(FileLoader):
    """A FileLoader that merges changes on disk into its rooms instead of overwriting them."""

    files: Rooms
    bases: dict[str, _Base]
    last_modified: Any
    _current_path: str

    @classmethod
    def adopt(cls, loader: FileLoader, files: Rooms) -> ThinkFileLoader:
        """Turn a loader the mapping just made into ours (its poll task calls our methods)."""
        loader.__class__ = cls
        assert isinstance(loader, ThinkFileLoader)
        loader.files = files
        loader.bases = {}
        files.loaders[loader.file_id] = loader
        files.rooms_changed()
        return loader

    @property
    def known_path(self) -> str:
        """The path as last resolved (``path`` asks the file id database every time)."""
        return self._current_path

    async def gone(self) -> bool:
        """Whether the file was deleted under the room (its id has no path, or no file)."""
        path = self._file_id_manager.get_path(self.file_id)
        if path is None:
            return True
        return not await ensure_async(self._contents_manager.file_exists(path))

    def saves(self) -> asyncio.Lock:
        """The lock each save of this file runs under. Held, the file can change on disk
        with no save of its rooms in between: a deletion must not race an autosave that
        already saw the file there, which would write it back."""
        return self._lock

    async def _meta(self, path: str, **kw: Any) -> dict[str, Any] | None:
        """The file's model without content, or None when it was deleted."""
        try:
            return dict(await ensure_async(self._contents_manager.get(path, content=False, **kw)))
        except HTTPError as e:
            if e.status_code == 404:
                return None
            raise

    async def clean(self) -> None:
        """Stop watching (the room closed)."""
        self.files.loaders.pop(self.file_id, None)
        self.files.rooms_changed()
        await super().clean()

    def observe(
        self,
        id: str,
        callback: Callable[[], Coroutine[Any, Any, None]],
        filepath_callback: Callable[[], Coroutine[Any, Any, None] | None] | None = None,
    ) -> None:
        """A room subscribes (from its constructor): track what people do in it from now on."""
        super().observe(id, callback, filepath_callback)
        room = getattr(callback, "__self__", None)  # the room's bound _on_outofband_change
        if isinstance(room, DocumentRoom):
            self.files.track(room)

    def _room_id(self, fmt: str, ftype: str) -> str:
        return f"{fmt}:{ftype}:{self.file_id}"

    async def load_content(self, format: str, file_type: str) -> dict[str, Any]:
        """Load as upstream does, and remember what the room starts from."""
        model = await super().load_content(format, file_type)
        self.bases[self._room_id(format, file_type)] = _Base(model["content"])
        return model

    async def maybe_save_content(self, model: dict[str, Any]) -> dict[str, Any] | None:
        """The room's autosave: held while a run owns the disk; a change on disk is merged
        into the room first (the room then saves the merged content)."""
        room_id = self._room_id(model["format"], model["type"])
        room = self.files.room(room_id)
        # A text room read its content in this loop turn, so this is the state it saved; a
        # notebook's ``aget`` yields between cells, so its state is not known (None: the next
        # flush compares contents).
        state = None
        if room is not None and room.file_type != "notebook":
            state = room.ydoc.get_state()
        if await self.gone():
            return None  # deleted under the room: writing it back would undo the deletion
        if self.files.held(self.path):
            self.files.defer(room_id)
            return None
        return await self.save(model, state)

    async def save(self, model: dict[str, Any], state: bytes | None) -> dict[str, Any] | None:
        """Write ``model`` through the contents manager unless the disk changed behind us."""
        room_id = self._room_id(model["format"], model["type"])
        async with self._lock:
            if await self.gone():
                return None  # deleted under the room (see maybe_save_content)
            path = self.path
            if model["type"] not in {"directory", "file", "notebook"}:
                model["type"] = "file"
            meta = await self._meta(path, format=model["format"], type=model["type"])
            if meta is None or not meta["writable"]:
                return None
            if self.last_modified != meta["last_modified"]:
                await self._merge_from_disk(path)
                return None  # the merged room saves again, with both sides
            base = self.bases.get(room_id)
            if base is not None and same_content(base.content, model["content"]):
                base.state = state
                mark_clean(self.files.room(room_id))
                return None  # nothing new (the autosave after a flush)
            done = asyncio.Event()
            task = asyncio.create_task(self._save_content(model, done, path))
            saved = None
            try:
                saved = await asyncio.shield(task)  # a save must not be cut in half
            except asyncio.CancelledError:
                pass
            await done.wait()
            if task.done() and not task.cancelled() and task.exception() is None:
                self.bases[room_id] = _Base(model["content"], state)
                mark_clean(self.files.room(room_id), task.result())
            return saved

    async def maybe_notify(self) -> None:
        """The poll: merge a change on disk into the rooms (upstream overwrites them)."""
        moved = False
        async with self._lock:
            # A deleted file has nothing to merge. Upstream's poll would raise here each time
            # (and, with no path for the id, again while logging it, which ends the poll with
            # an error that closing the room then re-raises).
            if await self.gone():
                return
            path = self.path
            if self._current_path != path:
                self._current_path, moved = path, True
            meta = await self._meta(path)
            if meta is None:
                return
            if self.last_modified is None:
                self.last_modified = meta["last_modified"]
            elif self.last_modified != meta["last_modified"]:
                await self._merge_from_disk(path)
        if moved:
            for callback in list(self._filepath_subscriptions.values()):
                await ensure_async(callback())

    async def _merge_from_disk(self, path: str) -> None:
        """Bring the disk's content into every room of this file; call with the lock held."""
        cm = self._contents_manager
        for room_id in list(self._subscriptions) or [None]:
            if room_id is None:  # no room: just note the new state
                meta = await ensure_async(cm.get(path, content=False))
                self.last_modified = meta["last_modified"]
                return
            fmt, ftype, _ = room_id.split(":", 2)
            model = await ensure_async(cm.get(path, format=fmt, type=ftype, content=True))
            disk = model["content"]
            if ftype == "file" and isinstance(disk, str) and "\r\n" in disk:
                disk = disk.replace("\r\n", "\n")  # as load_content does
            room = self.files.room(room_id)
            base = self.bases.get(room_id)
            if room is not None and room.ready:
                if merge_into_room(room, None if base is None else base.content, disk):
                    self.files.merged_at[path] = time.monotonic()
                    log.info("Think: merged the change on disk into the room of %s", path)
            self.bases[room_id] = _Base(disk)
            self.last_modified = model["last_modified"]


class ThinkFileLoaderMapping(FileLoaderMapping):
    """The extension's loader mapping, handing out :class:`ThinkFileLoader` s."""

    files: Rooms

    def __getitem__(self, file_id: str) -> FileLoader:
        loader = super().__getitem__(file_id)
        if not isinstance(loader, ThinkFileLoader):
            ThinkFileLoader.adopt(loader, self.files)
        return loader
