"""The think kernelspec's provisioner: jupyter_client's local one, plus preloaded processes.

``kernel.json`` names it (``metadata.kernel_provisioner``). It launches kernels exactly as
:class:`jupyter_client.provisioning.LocalProvisioner` does, except when a preloaded process
(:mod:`think_kernel.kernel.preload`) is waiting in this process: then the kernel's arguments,
environment and folder are handed to it, and it becomes the kernel without importing
anything. The server starts one while it loads (``preload()``), for its first spare kernel.

    preload()                  # in the server, early: one process starts importing
    ... km.start_kernel(kernel_name="think") ...   # the provisioner hands it the kernel
    discard()                  # the server no longer needs it (if it was not used)

The preloaded process is used only for the plain command of the think kernelspec and when
the variables that a process's start depends on are the same (else a kernel is launched as
usual). Signals, polling, interrupts and shutdown are the local provisioner's: the process
is this process's child, in its own session, as a launched kernel is.

A think kernel's channels are Unix sockets beside its connection file (ZeroMQ's ``ipc``
transport), not localhost TCP ports. jupyter_client picks TCP ports by binding port 0 and
letting go, and the kernel binds them later: any connection or listener made meanwhile on
the machine (a browser's socket, a sandbox's web proxy) can take one, the kernel then fails
with "Address already in use", and its restarts reuse the same ports. A socket file has no
such race, and only its owner can open it (the runtime folder is private). A runtime folder
too deep for a socket's path limit gives its place to a short private one,
``<temp>/think-ipc-<uid>``. Kept on TCP: a transport set in configuration, Windows, and a deep
runtime folder when that short folder cannot be ours alone.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import stat
import subprocess
import sys
import tempfile
from typing import Any

from jupyter_client.provisioning import LocalProvisioner

from .preload import start_env

log = logging.getLogger(__name__)

# A Unix socket's path is at most 107 bytes on Linux, 103 on macOS; ZeroMQ adds "-<n>".
_SOCKET_PATH_MAX = 100

_waiting: subprocess.Popen[bytes] | None = None
_waiting_env: dict[str, str] = {}


def preload(env: dict[str, str] | None = None) -> bool:
    """Start a preloaded kernel process (once). False if it could not be started."""
    global _waiting, _waiting_env
    if _waiting is not None and _waiting.poll() is None:
        return True
    env = dict(os.environ if env is None else env)
    try:
        _waiting = subprocess.Popen(
            [sys.executable, "-m", "think_kernel.kernel.preload"],
            stdin=subprocess.PIPE,
            env=env,
            start_new_session=True,  # as jupyter_client launches kernels
        )
    except OSError:
        log.warning("Think: could not start a preloaded kernel process", exc_info=True)
        _waiting = None
        return False
    _waiting_env = start_env(env)
    return True


def discard() -> None:
    """Let the waiting preloaded process go, if any: it exits once its imports are done and
    it finds its input closed (not waited for: the server is starting; subprocess reaps it)."""
    global _waiting
    proc, _waiting = _waiting, None
    if proc is not None and proc.stdin is not None:
        proc.stdin.close()


def _take(cmd: list[str], env: dict[str, str] | None) -> subprocess.Popen[bytes] | None:
    """The waiting process, if it can become the kernel ``cmd`` with ``env``."""
    global _waiting
    proc = _waiting
    if proc is None or proc.poll() is not None or proc.stdin is None:
        return None
    if cmd[:3] != [sys.executable, "-m", "think_kernel"]:
        return None
    if start_env(dict(os.environ if env is None else env)) != _waiting_env:
        log.debug("Think: the kernel's environment differs from the preloaded process's")
        return None
    _waiting = None
    return proc


def _transport_configured(km: Any) -> bool:
    """Whether configuration sets the kernel manager's transport (then it is kept)."""
    return any("transport" in km.config.get(cls.__name__, {}) for cls in type(km).__mro__)


def use_socket_files(km: Any) -> bool:
    """Put the channels of the kernel ``km`` manages on Unix sockets beside its connection
    file, before its ports are chosen; False where it stays on TCP (see the module's text)."""
    if km is None or sys.platform == "win32" or km.transport != "tcp":
        return km is not None and km.transport == "ipc"
    if _transport_configured(km):
        return False
    if km.connection_file:
        base = os.path.splitext(km.connection_file)[0] + "-ipc"
    else:  # a kernel manager of its own (no server): its connection file is a temporary one
        from jupyter_core.paths import jupyter_runtime_dir
        from jupyter_core.utils import ensure_dir_exists

        runtime = jupyter_runtime_dir()
        ensure_dir_exists(runtime, 0o700)
        base = os.path.join(runtime, f"kernel-{km.kernel_id}-ipc")
    if len(os.fsencode(base)) > _SOCKET_PATH_MAX:
        # A deep runtime folder (a long home or data path): the sockets go to a short
        # private folder instead, as private as the runtime folder (0700, ours).
        short = _short_folder()
        if short is None:
            return False
        base = os.path.join(short, os.path.basename(base))
        if len(os.fsencode(base)) > _SOCKET_PATH_MAX:
            return False
    if not _can_bind_socket_files(base):
        return False
    km.transport = "ipc"
    km.ip = base
    km.cache_ports = False  # TCP's port cache: socket files need none
    return True


def _short_folder() -> str | None:
    """``<temp>/think-ipc-<uid>``, made 0700 if missing; None unless it is a real folder of
    ours that no one else can enter (in a shared temp folder another user could have made
    it first, or put a link there)."""
    folder = os.path.join(tempfile.gettempdir(), f"think-ipc-{os.getuid()}")
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    try:
        st = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        log.warning("Think: %s is not a private folder of ours; the kernel uses TCP", folder)
        return None
    return folder


def _can_bind_socket_files(base: str) -> bool:
    """Whether a Unix socket can be made where the kernel's will be (some network and
    FUSE file systems refuse them): one is bound and removed at once."""
    probe = f"{base}-probe"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(probe)
    except OSError:
        log.info("Think: no Unix sockets in %s; the kernel uses TCP", os.path.dirname(base))
        return False
    finally:
        sock.close()
        with contextlib.suppress(OSError):
            os.unlink(probe)
    return True


class ThinkProvisioner(LocalProvisioner):  # type: ignore[misc]
    """LocalProvisioner that puts a kernel's channels on Unix sockets, and hands the kernel
    to a preloaded process when one waits."""

    async def pre_launch(self, **kwargs: Any) -> dict[str, Any]:
        """The local provisioner's preparation, on socket files where they can be used."""
        use_socket_files(self.parent)
        result: dict[str, Any] = await super().pre_launch(**kwargs)
        return result

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> Any:
        """Launch ``cmd``; through the waiting preloaded process when it fits."""
        env = kwargs.get("env")
        plain = set(kwargs) <= {"env", "cwd", "kernel_id", "extra_arguments"}
        proc = _take(cmd, env) if plain else None
        if proc is None:
            return await super().launch_kernel(cmd, **kwargs)
        env = dict(os.environ if env is None else env)
        if sys.platform != "win32":
            env["JPY_PARENT_PID"] = str(os.getpid())  # as jupyter_client's launch_kernel
        cwd = kwargs.get("cwd")
        request = {"args": cmd[3:], "env": env, "cwd": str(cwd) if cwd else os.getcwd()}
        assert proc.stdin is not None
        try:
            proc.stdin.write(json.dumps(request).encode() + b"\n")
            proc.stdin.close()
        except OSError:  # it died meanwhile: launch as usual
            log.warning("Think: the preloaded kernel process is gone", exc_info=True)
            return await super().launch_kernel(cmd, **kwargs)
        self.process = proc
        self.pid = proc.pid
        try:
            self.pgid = os.getpgid(proc.pid)
        except OSError:
            self.pgid = None
        self.cwd = request["cwd"]
        self.log.info("Think: kernel %s runs in the preloaded process %d", self.kernel_id, self.pid)
        return self.connection_info
