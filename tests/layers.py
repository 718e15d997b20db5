"""The two layers of the test suite: in-process tests, and ``slow`` tests that start real
processes (a Jupyter server, kernels, sandboxes, a browser, helper servers).

``python -m pytest -m "not slow"`` runs the in-process layer alone. A test is slow when it is
marked so (``pytestmark = pytest.mark.slow`` in a module that starts processes itself) or when
it uses a fixture that starts them: ours say so with :func:`starts_processes`, pytest-jupyter's
server is named in :data:`PROCESS_FIXTURES`. :class:`ProcessGuard` keeps the split honest: a
test outside the slow layer that starts a process fails and names the command.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import pytest

F = TypeVar("F", bound=Callable[..., Any])

# Fixtures of other packages that start a real server: pytest-jupyter's server runs in the
# test's process, but it is a whole Jupyter server and every kernel it starts is a process.
PROCESS_FIXTURES = frozenset({"jp_serverapp"})


def starts_processes(fixture: F) -> F:
    """Mark a fixture function (below ``@pytest.fixture``) as one that starts processes:
    every test that uses it, directly or through other fixtures, is ``slow``."""
    fixture.starts_processes = True  # type: ignore[attr-defined]
    return fixture


def uses_processes(item: pytest.Item) -> bool:
    """Whether a collected test uses a fixture that starts processes."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:  # not a function test (a doctest)
        return False
    for name in info.names_closure:
        if name in PROCESS_FIXTURES:
            return True
        for fixturedef in info.name2fixturedefs.get(name, ()):
            if getattr(fixturedef.func, "starts_processes", False):
                return True
    return False


def _finding_a_library() -> bool:
    """Whether ``ctypes.util.find_library`` is asking (``ldconfig -p``): how the standard
    library finds libc for inotify, not a process the test is about."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.endswith(os.path.join("ctypes", "util.py")):
            return True
        frame = frame.f_back
    return False


class ProcessInFastTest(RuntimeError):
    """A test outside the slow layer tried to start a process."""


class ProcessGuard:
    """Refuses, and records, every process started while a test outside the slow layer runs
    (its fixtures' set-up and its body). Installed once per session; idle otherwise."""

    def __init__(self) -> None:
        self.test: str | None = None
        self.started: list[str] = []

    def install(self) -> None:
        """Wrap the ways the standard library starts a process. ``subprocess`` covers
        ``asyncio``'s subprocesses too; ``os.fork`` covers ``multiprocessing``."""
        execute_child = subprocess.Popen._execute_child  # type: ignore[attr-defined]
        guard = self

        def guarded_execute_child(popen: Any, args: Any, *rest: Any, **kw: Any) -> Any:
            guard.check(args)
            return execute_child(popen, args, *rest, **kw)

        subprocess.Popen._execute_child = guarded_execute_child  # type: ignore[attr-defined]
        for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
            original = getattr(os, name, None)
            if original is not None:
                setattr(os, name, self._wrap(name, original))

    def _wrap(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def guarded(*args: Any, **kw: Any) -> Any:
            self.check(args[0] if args and name != "fork" else f"os.{name}()")
            return original(*args, **kw)

        return guarded

    def check(self, command: Any) -> None:
        """Record and refuse ``command`` when a fast test runs; let it through otherwise."""
        if self.test is None or _finding_a_library():
            return
        text = command if isinstance(command, (str, bytes)) else " ".join(map(str, command))
        self.started.append(str(text)[:200])
        raise ProcessInFastTest(f"{self.test} started a process ({text!s:.200}): mark it slow")

    @contextmanager
    def watching(self, item: pytest.Item) -> Iterator[None]:
        """Guard ``item``'s phase, unless it is slow; fail it if it started a process (even
        one whose refusal the code under test swallowed)."""
        if item.get_closest_marker("slow") is not None:
            yield
            return
        self.test, self.started = item.nodeid, []
        try:
            yield
        finally:
            started, self.test = self.started, None
            if started:
                pytest.fail(
                    f"{item.nodeid} is in the fast layer but started a process:\n  "
                    + "\n  ".join(started)
                    + "\nmark the test (or the fixture that starts it) slow: see tests/layers.py",
                    pytrace=False,
                )
