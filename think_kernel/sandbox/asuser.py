"""File access with a session's rights: the file tools and the loopback act as the session.

When the kernel is root, each session's sandboxed code runs under a uid of its own (see
:mod:`.uids`), and a file one session makes private (``chmod 600``, a 0700 folder) is closed
to the others. The tools the agent calls, and the loopback (``import think``), run in the
kernel, as root: they must not open what the calling session could not open itself. So every
disk access of a tool call runs in a thread that holds the session's filesystem credentials::

    files = SessionFiles(Identity(uid=1600000007, gid=1599999999))
    text = await files.run(lambda: open("/ws/a.txt").read())  # refused as its code would be
    files.close()

Why a thread: Linux keeps credentials per thread. ``setfsuid``/``setfsgid`` change only the
calling thread's filesystem ids, and the raw ``setgroups`` syscall only its supplementary
groups (glibc's ``setgroups`` would signal every thread of the kernel to follow). Moving the
fsuid off 0 also drops the file capabilities (``CAP_DAC_OVERRIDE``, ``CAP_DAC_READ_SEARCH``,
``CAP_FOWNER``, ``CAP_CHOWN``...) from that thread's effective set, so the kernel's own
permission checks apply there as they do to the sandbox: mode bits, POSIX ACLs, search
permission on every folder on the way. A hand-written ``access()``-like check would have to
reimplement ACLs and miss the next rule; opening inside the sandbox and passing the fd back
would cost a round trip to the sandbox per file. The thread is dedicated (never handed back
to a pool) and checks its credentials before each job, in case something in the kernel
called a glibc set*id that broadcasts to every thread.

What goes through a document (the server's collaboration rooms, the kernel's own document
history) is checked in this thread first (``LocalWorkspace.check_access``). The kernel's
history also reads and writes the disk in this thread, so what was checked is what is
opened; the server's rooms act with the server's rights after the check, a window that a
session renaming folders in a shared parent could race. The root itself is reached with the
kernel's rights (``SafeRoot.anchored``): the session's rights count from there on.

A runtime puts its :class:`ActingAs` in ``ToolContext.services.acting``;
:class:`~think_kernel.tools.base.ToolRegistry` makes it the context of each call
(``tools.base.ACTING``), and the workspace runs its disk access through it. Its ``files()``
answers None (the kernel's own rights, nothing changes) unless the kernel is root and the
session has a sandbox uid; a runtime that is not root sets nothing, so that path costs one
context lookup.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import os
import platform
import queue
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

# setgroups(2) syscall numbers; glibc's wrapper is not used because it changes every thread.
_SYS_SETGROUPS = {"x86_64": 116, "amd64": 116, "aarch64": 159, "arm64": 159}.get(
    platform.machine().lower()
)
# faccessat2(2) (Linux 5.8; 439 in the unified table): what ``os.access(effective_ids=True)``
# needs to check the filesystem ids. Without it glibc checks root's ids instead, silently.
_SYS_FACCESSAT2 = 439
_AT_EACCESS = 0x200


@dataclass(frozen=True)
class Identity:
    """Whom a session's sandboxed code runs as: uid, gid and supplementary groups."""

    uid: int
    gid: int
    groups: tuple[int, ...] = ()


class CredentialsError(OSError):
    """The worker thread could not take (or lost) the session's credentials."""


_libc: Any = None


def _lib() -> Any:
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(None, use_errno=True)
        lib.syscall.restype = ctypes.c_long
        lib.setfsuid.restype = ctypes.c_int
        lib.setfsgid.restype = ctypes.c_int
        _libc = lib
    return _libc


def _current() -> tuple[int, int, tuple[int, ...]]:
    """This thread's fsuid, fsgid and groups (``setfs*id(-1)`` changes nothing, returns them)."""
    lib = _lib()
    fsuid = lib.setfsuid(ctypes.c_int(-1)) & 0xFFFFFFFF
    fsgid = lib.setfsgid(ctypes.c_int(-1)) & 0xFFFFFFFF
    return fsuid, fsgid, tuple(sorted(os.getgroups()))


def _become(identity: Identity) -> None:
    """Give the calling thread (only) the filesystem credentials of ``identity``."""
    if _SYS_SETGROUPS is None:
        raise CredentialsError(f"no setgroups syscall number known for {platform.machine()}")
    lib = _lib()
    groups = identity.groups
    arr = (ctypes.c_uint * max(1, len(groups)))(*groups)
    if lib.syscall(ctypes.c_long(_SYS_SETGROUPS), ctypes.c_size_t(len(groups)), arr) != 0:
        err = ctypes.get_errno()
        raise CredentialsError(err, f"setgroups: {os.strerror(err)}")
    # setfs*id report no error; the state is read back and compared instead.
    lib.setfsgid(ctypes.c_int(identity.gid))
    lib.setfsuid(ctypes.c_int(identity.uid))
    _verify(identity)
    path = ctypes.c_char_p(b"/")
    if lib.syscall(ctypes.c_long(_SYS_FACCESSAT2), -100, path, 0, _AT_EACCESS) != 0:
        err = ctypes.get_errno()
        raise CredentialsError(
            err,
            f"faccessat2 is not available ({os.strerror(err)}; Linux 5.8 or later is "
            "needed to check a session's rights to files)",
        )


def _verify(identity: Identity) -> None:
    want = (identity.uid, identity.gid, tuple(sorted(identity.groups)))
    have = _current()
    if have != want:
        raise CredentialsError(
            f"the file worker holds fsuid/fsgid/groups {have}, not the session's {want}"
        )


class SessionFiles:
    """A dedicated thread that runs file operations with one session's credentials."""

    def __init__(self, identity: Identity) -> None:
        self.identity = identity
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(
            target=self._serve, args=(ready,), name=f"think-files-{identity.uid}", daemon=True
        )
        self._thread.start()
        ready.result()  # raises CredentialsError if the thread could not become the session

    def _serve(self, ready: concurrent.futures.Future[None]) -> None:
        try:
            _become(self.identity)
        except Exception as e:
            ready.set_exception(e)
            return
        ready.set_result(None)
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fut, fn = job
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                _verify(self.identity)
                fut.set_result(fn())
            except BaseException as e:
                fut.set_exception(e)

    def submit(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        """Queue ``fn`` for the session's thread."""
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._jobs.put((fut, fn))
        return fut

    async def run(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` with the session's credentials and return its result (or raise)."""
        return await asyncio.wrap_future(self.submit(fn))

    def close(self) -> None:
        """Stop the thread once the queued jobs are done."""
        self._jobs.put(None)


IdentitySource = Callable[[], Awaitable[Identity | None]]


class ActingAs:
    """The session a runtime's tool calls act for: its files thread, made on first need.

    ``source`` answers the session's identity (None: act with the kernel's own rights); a new
    identity (the sandbox was started again under another uid) gets a new thread.
    """

    def __init__(self, source: IdentitySource) -> None:
        self.source = source
        self._files: SessionFiles | None = None
        self._lock = asyncio.Lock()

    async def files(self) -> SessionFiles | None:
        """The thread acting as the session now, or None where the kernel's rights apply."""
        identity = await self.source()
        if identity is None:
            return None
        async with self._lock:
            if self._files is None or self._files.identity != identity:
                if self._files is not None:
                    self._files.close()
                self._files = await asyncio.to_thread(SessionFiles, identity)
            return self._files

    def close(self) -> None:
        """Stop the thread (the runtime is closing)."""
        if self._files is not None:
            self._files.close()
            self._files = None


def sandbox_identity(identity: tuple[int, int] | None) -> Identity | None:
    """The :class:`Identity` of a sandbox's ``(uid, gid)``: its processes have no
    supplementary groups (the sandbox drops them)."""
    if identity is None or identity[0] == 0:
        return None
    return Identity(identity[0], identity[1], ())
