"""The zygote's heavy preload (numpy, pandas, matplotlib), in a thread of its own.

Runs inside the sandbox (stdlib only). The zygote's main thread keeps serving the kernel
meanwhile: pings (a launcher silent past the kernel's ping deadline is replaced, with every
run of the session), kills, and bash runs, which its bash fork server (forked before this
thread) starts. Python runs wait until the thread is done: a fork while another thread
imports leaves the child with that module's import lock taken::

    pre = Preloader(cfg, rfd_ready)     # the thread starts, and waits for go()
    pre.go()                            # now (or at once: cfg["preload_deferred"] false)
    ...                                 # rfd_ready readable: the thread is done
    loaded = pre.finish()               # joined; the zygote may fork Python runs again

The thread acts on files as the session (see ``_think_confine.files_as``): its real,
effective and saved uids stay the launcher's while session processes run.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

import _think_confine as confine

# While the thread imports, the main thread waits at most this long for the GIL between two
# control lines (the default, 5 ms, is paid on each relayed spawn and exit of a bash run).
_SWITCH_INTERVAL = 0.0005
_NICE = 10  # the thread's CPU priority: a command of the session's first turn goes first


def preload(mods: list[str], code: str) -> list[str]:
    """Import ``mods`` and run the warm-up ``code`` once, in the zygote, before any fork."""
    done = []
    for name in mods:
        try:
            __import__(name)
            done.append(name)
        except Exception:
            pass
    if code:
        try:
            exec(compile(code, "<preload>", "exec"), {"__name__": "__preload__"})
        except Exception:
            pass
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.show = lambda *a, **k: None  # type: ignore[attr-defined]  # collected after cells
    return done


class Preloader:
    """The preload thread: started at once, it imports when told to (or right away)."""

    def __init__(self, cfg: dict) -> None:
        self.cfg = cfg
        self.loaded: list[str] = []
        self.done = False
        #: Readable once the thread has finished (the zygote's selector watches it).
        self.rfd, self._wfd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._go = threading.Event()
        self._switch = sys.getswitchinterval()
        # Created before the zygote applies Landlock to itself (its main thread): the imports
        # read what the Python environment holds, as they did before any confinement.
        self._thread = threading.Thread(target=self._run, name="preload", daemon=True)
        self._thread.start()
        if not cfg.get("preload_deferred"):
            self.go()

    @property
    def asked(self) -> bool:
        """True once the preload was asked for (it may still be under way)."""
        return self._go.is_set()

    def go(self) -> None:
        """Start importing (a second call does nothing)."""
        if not self._go.is_set():
            sys.setswitchinterval(_SWITCH_INTERVAL)
            self._go.set()

    def _run(self) -> None:
        self._go.wait()
        try:
            with contextlib.suppress(OSError):  # per thread on Linux: only these imports yield
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _NICE)
            cfg = self.cfg
            uid, gid = cfg.get("drop_uid"), cfg.get("drop_gid")
            as_session = uid is not None and os.geteuid() == 0
            with confine.files_as(uid if as_session else None, gid if as_session else None):
                # Started with -S, the zygote forked its bash fork server without
                # site-packages (its .pth files) or the Python runner: both load here, once,
                # for the zygote's own children.
                import site

                site.main()
                import _think_runner  # noqa: F401

                self.loaded = preload(cfg.get("preload", []), cfg.get("preload_code", ""))
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            os.write(self._wfd, b"x")

    def finish(self) -> list[str]:
        """In the main thread, once ``rfd`` is readable: join the thread; what it loaded."""
        self._thread.join()
        sys.setswitchinterval(self._switch)
        os.close(self.rfd)
        os.close(self._wfd)
        self.done = True
        return self.loaded
