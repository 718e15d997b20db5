"""A think kernel process whose imports are done before the kernel is asked for.

A Jupyter server with the extension starts one of these while it is still loading
(``jupyter_ext`` links before the server's own components and web application are built, a
second or more before it listens). It imports what a think kernel imports, then waits on its
standard input for one line, ``{"args": [...], "env": {...}, "cwd": "..."}`` (``args``: those
after ``python -m think_kernel``), which the kernel provisioner
(:mod:`think_kernel.kernel.provisioner`) writes when the server starts a think kernel. It then
becomes that kernel: same environment, same folder, same arguments, exactly as if ``python -m
think_kernel -f CONNECTION_FILE`` had been started then. The server's first spare kernel so
answers a few hundred milliseconds after the server listens instead of a kernel start-up
later.

Nothing read at import time depends on the environment the kernel is given: the provisioner
hands a kernel to this process only when the variables read at start-up (``PYTHON*``,
``LD_*``, the locale and those listed below) are the ones this process started with. It
exits when its standard input closes (the server is gone) or after ``THINK_PRELOAD_WAIT``
seconds unused.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import sys
import time

WAIT = 300.0  # seconds an unused preloaded process waits before it exits

# Variables the interpreter or the modules imported here read when they start (at import
# time: tests/kernel/test_preload.py scans those modules for such reads); a kernel is handed
# to a preloaded process only if they are unchanged.
START_PREFIXES = ("PYTHON", "LD_", "LC_", "DEBUGPY_", "PYDEVD_", "DEBUG_PYDEVD_", "PSUTIL_")
START_NAMES = (
    "LANG", "LANGUAGE", "TERM", "USER", "DISPLAY", "PYZMQ_BACKEND", "TORNADO_EXTENSION",
    "TORNADO_NO_EXTENSION", "JUPYTER_ALLOW_INSECURE_WRITES", "IPYTHONENABLE",
    "IPYTHON_SUPPRESS_CONFIG_ERRORS", "IPYTHON_USE_PROGRAMDATA",
    "TRAITLETS_APPLICATION_RAISE_CONFIG_FILE_ERROR", "GEVENT_SUPPORT_NOT_SET_MSG",
    "PATHS_FROM_ECLIPSE_TO_PYTHON",
)  # fmt: skip
# Read at import time too, but per kernel: main() passes them on to the kernel application.
PER_KERNEL = ("JPY_PARENT_PID", "JPY_INTERRUPT_EVENT")


def start_env(env: dict[str, str]) -> dict[str, str]:
    """The part of an environment that a process's start depends on."""
    return {k: v for k, v in env.items() if k.startswith(START_PREFIXES) or k in START_NAMES}


def _preload() -> None:
    # What a chat kernel imports on its way to its first model request, in the order it does.
    # Modules imported later, while the kernel starts, links and prepares its runtime (found
    # by listing sys.modules there): ipykernel's debugger support (debugpy), the
    # link's WebSocket client, the file watch. The model client is named on its own, with
    # what httpx loads only when its first client is built (httpcore) and its first request
    # runs (anyio's asyncio backend): the first request must not pay for them.
    for name in (
        "think_kernel.kernel.app", "think_kernel.runtime", "think_kernel.store",
        "think_kernel.agent.model", "httpx", "httpcore", "anyio._backends._asyncio",
        "ipykernel.debugger", "IPython.core.debugger", "IPython.core.completerlib",
        "IPython.extensions.storemagic", "psutil", "tornado.websocket",
        "tornado.simple_httpclient", "certifi", "inotify_simple",
    ):  # fmt: skip
        try:
            importlib.import_module(name)
        except ImportError:  # optional there too: the kernel does without it
            pass


def _read_request(wait: float) -> dict[str, object] | None:
    """The kernel request on standard input; None when it closed or nothing came in time."""
    fd = sys.stdin.fileno()
    buf = b""
    end = time.monotonic() + wait
    while not buf.endswith(b"\n"):
        left = end - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 65536)
        if not chunk:
            return None
        buf += chunk
    request = json.loads(buf)
    return request if isinstance(request, dict) else None


def main() -> None:
    """``python -m think_kernel.kernel.preload``: import, wait for the kernel's arguments, be it."""
    _preload()
    try:
        wait = float(os.environ.get("THINK_PRELOAD_WAIT", WAIT))
    except ValueError:
        wait = WAIT
    request = _read_request(wait)
    if request is None:
        return
    args, env, cwd = request.get("args"), request.get("env"), request.get("cwd")
    if not isinstance(args, list) or not isinstance(env, dict):
        return
    # The kernel's standard input is what jupyter_client gives a kernel: a closed pipe.
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in env.items()})
    time.tzset()
    if isinstance(cwd, str) and cwd:
        os.chdir(cwd)
    import think_kernel.__main__ as entry
    from think_kernel.kernel.app import ThinkKernelApp

    sys.argv = [str(entry.__file__), *(str(a) for a in args)]
    # ipykernel reads these into trait defaults when it is imported, before we had them: the
    # parent's pid makes the kernel exit with the server that started it.
    ThinkKernelApp.launch_instance(
        parent_handle=int(os.environ.get("JPY_PARENT_PID") or 0),
        interrupt=int(os.environ.get("JPY_INTERRUPT_EVENT") or 0),
    )


if __name__ == "__main__":
    main()
