"""Finding the Jupyter server that started this kernel, and the keys both ends prove.

    url = find_server()                  # THINK_SERVER_URL, or the jpserver-<ppid>.json file
    kernel_id, key = kernel_identity()   # from this kernel's connection file
    mac = link_mac(key, "kernel", kernel_id, epoch, nonce)

Only the server's URL is read, never its token: the kernel authenticates with an HMAC over its
own connection key, which the server knows for every kernel it started.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from pathlib import Path


def link_mac(key: bytes, *parts: str) -> str:
    """HMAC-SHA256 over ``think-link|part|part...`` (same as the server)."""
    return hmac.new(key, "|".join(("think-link", *parts)).encode(), hashlib.sha256).hexdigest()


def find_server(env: dict[str, str] | None = None) -> str | None:
    """The base URL of the Jupyter server that started this kernel, or None."""
    env = dict(os.environ if env is None else env)
    if env.get("THINK_SERVER_URL"):
        return env["THINK_SERVER_URL"]
    ppid = env.get("JPY_PARENT_PID")
    if not ppid or not ppid.isdigit():
        return None
    from jupyter_core.paths import jupyter_runtime_dir

    info_file = Path(jupyter_runtime_dir()) / f"jpserver-{ppid}.json"
    try:
        info = json.loads(info_file.read_text())
    except (OSError, ValueError):
        return None
    url = info.get("url")
    return url if isinstance(url, str) and url else None


def kernel_identity(connection_file: str | None = None) -> tuple[str, bytes] | None:
    """``(kernel_id, key)`` from the connection file jupyter_server wrote for this kernel."""
    if connection_file is None:
        try:
            from ipykernel.kernelapp import IPKernelApp

            if IPKernelApp.initialized():
                connection_file = IPKernelApp.instance().abs_connection_file
        except Exception:  # not in a kernel
            return None
    if not connection_file:
        return None
    name = Path(connection_file).name
    if not (name.startswith("kernel-") and name.endswith(".json")):
        return None
    try:
        key = json.loads(Path(connection_file).read_text()).get("key", "")
    except (OSError, ValueError):
        return None
    if not key:
        return None
    return name[len("kernel-") : -len(".json")], key.encode()
