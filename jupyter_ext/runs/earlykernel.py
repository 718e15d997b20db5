"""The first chat kernel, started while the server still loads.

The first message after a server start used to wait for a whole kernel start-up. When
jupyter_server finds the extension, :func:`preload_first_kernel` starts a process importing a
kernel (think_kernel/kernel/provisioner.py); when the extension loads, :func:`start_early_spare`
starts the pool's first spare in it, beside the server's own loading. Only where the
server's loop has not started yet (``jupyter server``): a host that loads extensions on a
running loop gets its spares from the pool as usual.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_POOL_SIZE = 1  # spare kernels the server keeps (ThinkExtension.kernel_pool_size)


def loop_not_started(serverapp: Any) -> Any:
    """The server's asyncio loop if it has not started yet (``jupyter server`` / ``jupyter
    lab`` loading extensions), else None (a host that loads them on a running loop)."""
    loop: Any = getattr(getattr(serverapp, "io_loop", None), "asyncio_loop", None)
    if loop is None or loop.is_running() or loop.is_closed():
        return None
    return loop


def preload_first_kernel() -> None:
    """Called when jupyter_server finds the extension, before it links and loads it: if a
    server is starting with a kernel pool, start importing its first spare kernel now. The
    server's other extensions import, link and load for a second or more after this; the
    kernel's imports take most of that, and the early spare then starts in milliseconds.
    ``jupyter server extension list`` and other tools that read the extension points have no
    server instance: nothing starts."""
    try:
        from jupyter_server.serverapp import ServerApp

        if not ServerApp.initialized():
            return
        app = ServerApp.instance()
        if loop_not_started(app) is None:
            return
        configured = app.config.get("ThinkExtension", {})
        if int(configured.get("kernel_pool_size", DEFAULT_POOL_SIZE)) <= 0:
            return
        from think_kernel.kernel import provisioner

        provisioner.preload()
    except Exception:  # a nicety: the early spare starts the usual way without it
        log.debug("no preloaded kernel", exc_info=True)


def keep_preloaded(serverapp: Any, pool_size: int) -> None:
    """Keep the process ``preload_first_kernel`` started only if the early spare will use
    it (the extension's own config files are read by now); start it if it was not (a host
    that links extensions without listing them first)."""
    from think_kernel.kernel import provisioner

    if pool_size > 0 and loop_not_started(serverapp) is not None:
        provisioner.preload()
    else:
        provisioner.discard()


def start_early_spare(
    serverapp: Any, pool_size: int, kernel_name: str, kernel_env: Callable[[], dict[str, str]]
) -> tuple[str, dict[str, str]] | None:
    """Start the pool's first spare kernel now, with ``kernel_env()``, on the loop that has
    not started yet. Returns (kernel id, the environment it got), or None."""
    loop = loop_not_started(serverapp)
    if pool_size <= 0 or serverapp is None or loop is None:
        return None
    try:
        env = kernel_env()
        km: Any = serverapp.kernel_manager
        start = km.start_kernel(kernel_name=kernel_name, path="", env={**os.environ, **env})
        return str(loop.run_until_complete(start)), env
    except Exception:  # a nicety: the pool starts its spares later anyway
        log.warning("Think: could not start a spare kernel early", exc_info=True)
        return None
    finally:
        from think_kernel.kernel import provisioner

        provisioner.discard()  # if the spare did not use it, nothing else will
