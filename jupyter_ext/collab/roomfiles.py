"""One truth for files, on the server: rooms are flushed before sandboxed runs, and changes on
disk are merged into open rooms as minimal diffs, never the file poll's overwrite.

    files = RoomFiles(serverapp)
    files.install()                                 # once, before the first room opens
    lease = await files.flush("src", hold=30)       # dirty rooms under src/ saved; saves held
    ...                                             # the sandboxed run reads and writes disk
    await files.sync(["src/a.py"], lease)           # disk changes merged into open rooms

jupyter-collaboration (jupyter_server_ydoc 3.x) keeps a ``FileLoader`` per open file. Its poll
notices a change on disk and the room then *replaces* its content with the file's
(``DocumentRoom._on_outofband_change``: "Out-of-band changes. Overwriting the content in
room"); a save that finds the file changed does the same. Whatever a person typed since the
last save is lost. There is no public hook for either, so :func:`install` makes the
extension's ``FileLoaderMapping`` create :class:`~.fileloader.ThinkFileLoader` instead (the one
place that depends on those internals; ``tests/collab/test_roomfiles.py`` fails if they move):

- it remembers, per room, the content last read from or written to disk (the *base*);
- its poll, and a save that finds the file changed, merge the change (base -> disk) into the
  room's live document in one transaction (origin ``disk``): three-way, so unsaved typing
  stays; the room then saves the merged text;
- while a sandboxed run holds a lease on a folder, autosaves under it wait (the run owns the
  disk); :meth:`RoomFiles.sync` merges what the run changed and saves what waited.

A room the server opens for the agent (``DocumentService`` asks for the document with
``create=True`` when no tab has the file open) has no client, so jupyter-collaboration, which
cleans a room up only when its last client leaves, never would: :meth:`RoomFiles.used` closes
it once it was unused for the extension's ``document_cleanup_delay``, with nothing unsaved and
still no client. Until then each sandboxed run flushes first (see :attr:`RoomFiles.any_open`).

Saving goes through the same contents manager call the room's autosave uses.

jupyter_server_ydoc loads after this extension (extensions load in name order), so
:meth:`RoomFiles.install_later` tries again until its mapping is there; the loaders of rooms
opened before the install (a tab that reconnected at once) are adopted by :meth:`install`.
"""

from __future__ import annotations

import asyncio
import logging
import posixpath
import time
import uuid
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from jupyter_server_ydoc.rooms import DocumentRoom

from think_kernel.waits import wait_for

from .activity import RoomActivity
from .fileloader import ThinkFileLoader, ThinkFileLoaderMapping, room_content, same_content

log = logging.getLogger(__name__)
#: Seconds between looks at an idle room the agent opened while it still has unsaved changes.
UNSAVED_RETRY = 1.0
#: Seconds between attempts to install the loaders while jupyter_server_ydoc is not loaded,
#: and how many attempts (a server without it gives up after INSTALL_TRIES * INSTALL_RETRY).
INSTALL_RETRY = 0.02
INSTALL_TRIES = 500


class RoomFiles:
    """Flush, hold and merge the files of the collaboration rooms."""

    def __init__(self, serverapp: Any) -> None:
        self.serverapp = serverapp
        self.holds: dict[str, tuple[str, float]] = {}  # lease -> (folder, expiry)
        self.deferred: set[str] = set()  # rooms whose autosave waited for a hold
        self.merged_at: dict[str, float] = {}
        self.mapping: ThinkFileLoaderMapping | None = None
        self._waiter: asyncio.Task[None] | None = None
        self.trackers: weakref.WeakKeyDictionary[Any, RoomActivity] = weakref.WeakKeyDictionary()
        # file id -> our loader; the mapping's own lookup queries the file id database
        self.loaders: dict[str, ThinkFileLoader] = {}
        self._holds_changed = asyncio.Event()
        #: Called with :attr:`any_open` whenever it changes (kernels skip the flush request
        #: of a run while no room is open, see jupyter_ext/collab/docrpc.py).
        self.open_listeners: list[Callable[[bool], None]] = []
        self._told: bool | None = None
        self._used: dict[str, float] = {}  # room id -> when the agent last used it
        self._closers: dict[str, asyncio.Task[None]] = {}

    # -- plumbing ----------------------------------------------------------------------------

    @property
    def _ydoc_ext(self) -> Any:
        return self.serverapp.web_app.settings.get("jupyter_server_ydoc")

    def install(self) -> bool:
        """Make jupyter-collaboration's loaders ours; False if it is not there (yet)."""
        ext = self._ydoc_ext
        mapping = getattr(ext, "file_loaders", None)
        if mapping is None:
            return False
        if isinstance(mapping, ThinkFileLoaderMapping):
            self.mapping = mapping
            return True
        # The same object is referenced by the extension and by the room handler's kwargs:
        # changing its class keeps every reference (no handler is rebuilt).
        mapping.__class__ = ThinkFileLoaderMapping
        assert isinstance(mapping, ThinkFileLoaderMapping)
        mapping.files = self
        self.mapping = mapping
        self._adopt_open(mapping)
        self.rooms_changed()
        return True

    def _adopt_open(self, mapping: ThinkFileLoaderMapping) -> None:
        """Make ours the loaders of rooms opened before :meth:`install` (a tab that joined
        while the server still loaded): else their saves are never flushed nor held, and a
        run reads what the room saved last."""
        found = getattr(mapping, "_FileLoaderMapping__dict", None)
        if not isinstance(found, dict) or not found:
            return
        log.info(
            "Think: %d file(s) opened before the merge of disk changes was installed", len(found)
        )
        for loader in list(found.values()):
            if not isinstance(loader, ThinkFileLoader):
                # Their bases are unknown: the first flush saves them (the room is the truth).
                ThinkFileLoader.adopt(loader, self)
        server = getattr(self._ydoc_ext, "ywebsocket_server", None)
        for room in list(getattr(server, "rooms", {}).values()):
            if isinstance(room, DocumentRoom):
                self.track(room)

    @property
    def any_open(self) -> bool:
        """Whether a document room may be open: a file has a loader in the extension's
        mapping (a room holds it, or is starting or closing; ours are a subset), or ours are
        not installed yet, or the mapping is not the shape we know (then nobody knows)."""
        if self.mapping is None:
            return self._ydoc_ext is not None
        return bool(getattr(self.mapping, "_FileLoaderMapping__dict", True))

    def rooms_changed(self) -> None:
        """Tell the listeners when :attr:`any_open` changed."""
        now = self.any_open
        if now == self._told:
            return
        self._told = now
        for listener in list(self.open_listeners):
            try:
                listener(now)
            except Exception:
                log.exception("Think: a room listener failed")

    def install_later(self, tries: int = INSTALL_TRIES) -> None:
        """Install once the event loop turns, after jupyter_server_ydoc has loaded.

        Extensions load in name order, so it loads after us; and the loop may turn before
        it did (our first spare kernel starts while extensions load): then try again, a
        timer's turn later, until it is there (a room it opens meanwhile is adopted)."""
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            return

        def attempt(left: int) -> None:
            if not self.install() and left > 0:
                loop.call_later(INSTALL_RETRY, attempt, left - 1)

        loop.call_soon(attempt, tries)

    def track(self, room: DocumentRoom) -> RoomActivity:
        """Follow people's edits and cursors in a room (from its creation on)."""
        found = self.trackers.get(room.ydoc)
        if found is None:
            found = RoomActivity(
                room.ydoc, room.awareness, room.file_type == "notebook", ready=lambda: room.ready
            )
            self.trackers[room.ydoc] = found
        return found

    def tracker(self, ydoc: Any) -> RoomActivity | None:
        """The activity tracker of the room whose document is ``ydoc``, if it has one."""
        return self.trackers.get(ydoc)

    def room(self, room_id: str) -> DocumentRoom | None:
        """The live room of that id, if any."""
        ext = self._ydoc_ext
        server = getattr(ext, "ywebsocket_server", None)
        room = server.rooms.get(room_id) if server is not None else None
        return room if isinstance(room, DocumentRoom) else None

    def rooms(self) -> Iterator[tuple[str, DocumentRoom, ThinkFileLoader]]:
        """Every ready document room with our loader: ``(room_id, room, loader)``."""
        if self.mapping is None and not self.install():
            return
        server = getattr(self._ydoc_ext, "ywebsocket_server", None)
        if server is None:
            return
        for room_id, room in list(server.rooms.items()):
            if not isinstance(room, DocumentRoom) or not room.ready:
                continue
            loader = self._loader_of(room_id)
            if loader is not None:
                yield room_id, room, loader

    def _loader_of(self, room_id: str) -> ThinkFileLoader | None:
        """Our loader of the file a room holds, if it has one."""
        return self.loaders.get(_file_id(room_id))

    # -- rooms opened for the agent ----------------------------------------------------------

    def used(self, ydoc: Any) -> None:
        """The agent just used the room of ``ydoc``: once it has been unused for the cleanup
        delay, close it if no client joined and nothing is unsaved (a room a tab joined is
        jupyter-collaboration's to close, after its last client left)."""
        delay = getattr(self._ydoc_ext, "document_cleanup_delay", None)
        server = getattr(self._ydoc_ext, "ywebsocket_server", None)
        if delay is None or server is None:
            return  # configured to keep documents in memory forever
        room_id = next((k for k, r in list(server.rooms.items()) if r.ydoc is ydoc), None)
        if room_id is None:
            return
        self._used[room_id] = time.monotonic()
        if room_id not in self._closers:
            self._closers[room_id] = asyncio.ensure_future(self._close_when_idle(room_id, delay))

    async def _close_when_idle(self, room_id: str, delay: float) -> None:
        try:
            while True:
                wait = self._used[room_id] + delay - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue
                # Under the room's lock, as jupyter-collaboration cleans a tab's room up: the
                # agent's next use waits in get_document, then finds no room and opens one.
                async with self._room_lock(room_id):
                    room = self.room(room_id)
                    if room is None or room.clients or _cleaning(room):
                        return  # gone, or a tab joined: jupyter-collaboration cleans it up
                    if self._used[room_id] + delay > time.monotonic():
                        continue  # used again while the lock was taken
                    # A room whose file was deleted has nowhere to save to: it just closes.
                    if self._unsaved(room_id, room) and not await self._deleted(room_id):
                        self._used[room_id] = time.monotonic() - delay + UNSAVED_RETRY
                        continue
                    await self._close(room_id, room)
                    return
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("Think: could not close the idle room %s", room_id)
        finally:
            self._closers.pop(room_id, None)
            self._used.pop(room_id, None)

    def _room_lock(self, room_id: str) -> asyncio.Lock:
        """The lock jupyter-collaboration takes to create or clean up that room."""
        locks = getattr(self._ydoc_ext, "_room_locks", None)
        if not isinstance(locks, dict):
            return asyncio.Lock()  # not the shape we know: the checks above still hold
        return locks.setdefault(room_id, asyncio.Lock())

    async def _deleted(self, room_id: str) -> bool:
        """Whether the file of a room with our loader was deleted under it."""
        loader = self._loader_of(room_id)
        return loader is not None and await loader.gone()

    def _unsaved(self, room_id: str, room: DocumentRoom) -> bool:
        """Whether closing the room now could lose something: it is still loading, its
        autosave waits for a hold, or it holds changes its file does not have."""
        if not room.ready:
            return True
        loader = self._loader_of(room_id)
        if loader is None:
            return False  # not ours: as jupyter-collaboration, rely on the autosave
        return (
            room_id in self.deferred
            or self.held(loader.known_path)
            or self.dirty(room, loader, room_id)
        )

    async def _close(self, room_id: str, room: DocumentRoom) -> None:
        """Delete the room, then its file's loader if no room uses it (with its lock held)."""
        ext = self._ydoc_ext
        await ext.ywebsocket_server.delete_room(room=room)
        file_id = _file_id(room_id)
        loader = self.loaders.get(file_id)
        log.info(
            "Think: closed the room of %s (opened for the agent, no client, idle)",
            loader.known_path if loader is not None else file_id,
        )
        mapping = ext.file_loaders
        if file_id in mapping and mapping[file_id].number_of_subscriptions == 0:
            await mapping.remove(file_id)

    def close(self) -> None:
        """Stop the timers (the server stops)."""
        for task in list(self._closers.values()):
            task.cancel()

    def loader_at(self, path: str) -> ThinkFileLoader | None:
        """The loader of the rooms open on ``path`` (None when no room holds it)."""
        fileids = self.serverapp.web_app.settings.get("file_id_manager")
        file_id = fileids.get_id(path) if fileids is not None else None
        return self.loaders.get(file_id) if file_id is not None else None

    # -- holds -------------------------------------------------------------------------------

    def held(self, path: str) -> bool:
        """Whether a sandboxed run owns the disk under ``path`` now."""
        if not self.holds:
            return False
        now = time.monotonic()
        for lease, (folder, expiry) in list(self.holds.items()):
            if expiry < now:
                del self.holds[lease]  # its kernel never came back: saves resume
                continue
            if _under(path, folder):
                return True
        return False

    def defer(self, room_id: str) -> None:
        """A room's autosave met a hold: save it when the hold is released or expires."""
        self.deferred.add(room_id)
        self._holds_changed.set()
        if self._waiter is None or self._waiter.done():
            self._waiter = asyncio.ensure_future(self._resave_after_holds())

    async def _resave_after_holds(self) -> None:
        # A kernel that died mid-run never releases its lease; the expiry is the backstop.
        while self.deferred:
            self.held("")  # drops the expired leases
            if not self.holds:
                break
            soonest = min(expiry for _, expiry in self.holds.values())
            self._holds_changed.clear()
            try:
                wait = max(0.01, soonest - time.monotonic() + 0.01)
                await wait_for(self._holds_changed.wait(), wait)
            except TimeoutError:
                pass
        if self.deferred:
            await self._resave("")

    # -- the two operations ------------------------------------------------------------------

    def dirty(self, room: DocumentRoom, loader: ThinkFileLoader, room_id: str) -> bool:
        """Whether the room holds changes its file does not have."""
        base = loader.bases.get(room_id)
        if base is None:
            return True
        state = room.ydoc.get_state()
        if base.state == state:
            return False
        # Not every change is content (the room's own dirty/hash flags are in the document).
        if same_content(base.content, room_content(room)):
            base.state = state
            return False
        return True

    async def flush(self, folder: str = "", hold: float = 0.0) -> tuple[list[str], str | None]:
        """Save every dirty room under ``folder``; with ``hold`` > 0, hold autosaves there for
        that many seconds (until :meth:`sync` releases the returned lease)."""
        saved: list[str] = []
        jobs = []
        for room_id, room, loader in self.rooms():
            if not self.dirty(room, loader, room_id):
                continue
            path = loader.known_path
            if not _under(path, folder):
                continue
            fmt, ftype, _ = room_id.split(":", 2)
            model = {"format": fmt, "type": ftype, "content": room_content(room)}
            jobs.append(loader.save(model, room.ydoc.get_state()))
            saved.append(path)
            self.deferred.discard(room_id)
        if jobs:
            await asyncio.gather(*jobs)
        return saved, self.hold(folder, hold) if hold > 0 else None

    def hold(self, folder: str, seconds: float, lease: str | None = None) -> str:
        """Hold autosaves under ``folder`` for ``seconds`` (until :meth:`sync` releases the
        lease); ``lease`` is the kernel's own when it did not ask for a flush first."""
        lease = lease or uuid.uuid4().hex
        self.holds[lease] = (folder, time.monotonic() + seconds)
        self._holds_changed.set()
        return lease

    async def sync(self, paths: list[str], lease: str | None = None) -> list[str]:
        """Merge the named files' changes on disk into their rooms now; release ``lease``
        and save what waited for it."""
        merged: list[str] = []
        if self.mapping is None:
            self.install()
        for path in paths:
            loader = self.loader_at(path)
            if loader is None:
                continue  # no room has it open: the disk is the truth
            before = self.files_merged(path)
            try:
                await loader.maybe_notify()
            except Exception as e:  # deleted, unreadable: the room keeps its content
                log.info("Think: could not merge %s from disk: %s", path, e)
                continue
            if self.files_merged(path) != before:
                merged.append(path)
        if lease is not None:
            folder, _ = self.holds.pop(lease, ("", 0.0))
            self._holds_changed.set()
            await self._resave(folder)
        return merged

    def files_merged(self, path: str) -> float:
        """When a disk change of ``path`` was last merged into its room (0: never)."""
        return self.merged_at.get(path, 0.0)

    async def _resave(self, folder: str) -> None:
        """Save the rooms whose autosave waited for a hold that is gone."""
        waiting, self.deferred = self.deferred, set()
        jobs = []
        for room_id, room, loader in self.rooms():
            if room_id not in waiting:
                continue
            if self.held(loader.known_path):
                self.deferred.add(room_id)
                continue
            if self.dirty(room, loader, room_id):
                fmt, ftype, _ = room_id.split(":", 2)
                model = {"format": fmt, "type": ftype, "content": room_content(room)}
                jobs.append(loader.save(model, room.ydoc.get_state()))
        if jobs:
            await asyncio.gather(*jobs)


def _file_id(room_id: str) -> str:
    """The file id in a document room's id (``format:type:file id``)."""
    return room_id.split(":", 2)[-1]


def _cleaning(room: DocumentRoom) -> bool:
    """Whether jupyter-collaboration will clean the room up (its last client left; a client
    that came back cancelled that)."""
    cleaner = room.cleaner
    return cleaner is not None and not cleaner.done()


def _under(path: str, folder: str) -> bool:
    folder = posixpath.normpath(folder) if folder else ""
    if folder in ("", "."):
        return True
    return path == folder or path.startswith(folder.rstrip("/") + "/")
