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
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from typing import Any

from jupyter_client.provisioning import LocalProvisioner

from .preload import start_env

log = logging.getLogger(__name__)

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


class ThinkProvisioner(LocalProvisioner):  # type: ignore[misc]
    """LocalProvisioner that hands a kernel to a preloaded process when one waits."""

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
