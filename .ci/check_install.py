"""Check an installed think-jupyter the way a new user meets it (run by ``.ci/run``).

    python .ci/check_install.py      # with the python of the environment to check

Run from outside the checkout with no Node.js on PATH: JupyterLab lists the lab extension,
the ``think`` kernelspec is there and its kernel starts, the server extension loads, a started
server answers ``/api/think/sessions`` and serves the extension's bundle to JupyterLab.
Exits non-zero with what failed.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

EXT = "@think/jupyter-think"


def fail(what: str) -> None:
    """Stop with a message."""
    print(f"check_install: FAILED: {what}", file=sys.stderr)
    sys.exit(1)


def jupyter(*args: str) -> str:
    """Output (stdout and stderr) of a ``jupyter`` subcommand of this environment."""
    exe = Path(sys.executable).parent / "jupyter"
    out = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120)
    return re.sub(r"\x1b\[[0-9;]*m", "", out.stdout + out.stderr)  # no colours


def get(url: str, token: str) -> tuple[int, bytes]:
    """GET with the token; (status, body)."""
    req = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError:
        return 0, b""


def check_lists() -> None:
    """The three lists a user would look at."""
    labext = jupyter("labextension", "list")
    if not re.search(rf"{re.escape(EXT)} v\S+ .*enabled.*OK", labext):
        fail(f"`jupyter labextension list` does not show {EXT} enabled and OK:\n{labext}")
    specs = json.loads(jupyter("kernelspec", "list", "--json"))["kernelspecs"]
    if "think" not in specs:
        fail(f"no think kernelspec: {sorted(specs)}")
    if not specs["think"]["resource_dir"].startswith(sys.prefix):
        fail(f"the think kernelspec is not this environment's: {specs['think']['resource_dir']}")
    serverext = jupyter("server", "extension", "list")
    if not re.search(r"jupyter_ext enabled", serverext) or not re.search(
        r"jupyter_ext \S* ?OK", serverext
    ):
        fail(f"`jupyter server extension list`: jupyter_ext not enabled and OK:\n{serverext}")


def check_kernel() -> None:
    """The think kernel of the kernelspec starts and answers kernel_info."""
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="think", startup_timeout=90)
    try:
        reply = kc.kernel_info(reply=True, timeout=60)
        if reply["content"].get("implementation") in (None, ""):
            fail(f"odd kernel_info reply: {reply['content']}")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def check_server() -> None:
    """A real server: the API answers, JupyterLab's page config names the extension and its
    bundle is served."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(16)
    root = tempfile.mkdtemp(prefix="think-install-")
    exe = Path(sys.executable).parent / "jupyter"
    cmd = [str(exe), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}"]
    cmd += [f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = Path(root) / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=root)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        status, body = 0, b""
        while time.monotonic() < deadline and proc.poll() is None:
            status, body = get(f"{base}/api/think/sessions", token)
            if status:
                break
            time.sleep(0.2)
        if status != 200 or "sessions" not in json.loads(body or b"{}"):
            fail(f"/api/think/sessions answered {status} {body[:200]!r}\n{log.read_text()}")
        status, page = get(f"{base}/lab", token)
        m = re.search(rb'"federated_extensions": (\[.*?\])', page)
        if status != 200 or m is None:
            fail(f"/lab answered {status} without federated_extensions")
        exts = {e["name"]: e for e in json.loads(m.group(1))}
        if EXT not in exts:
            fail(f"JupyterLab's page does not load {EXT}: {sorted(exts)}")
        entry = exts[EXT]["load"]
        status, _ = get(f"{base}/lab/extensions/{EXT}/{entry}", token)
        if status != 200:
            fail(f"the extension's bundle {entry} answered {status}")
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    """Run every check; say where things came from."""
    for tool in ("node", "npm"):
        if shutil.which(tool):
            fail(f"{tool} is on PATH ({shutil.which(tool)}): this check must run without Node.js")
    import think_kernel

    origin = Path(think_kernel.__file__).resolve()
    if not str(origin).startswith(str(Path(sys.prefix).resolve())):
        fail(f"think_kernel is imported from {origin}, not from the installed wheel")
    check_lists()
    check_kernel()
    check_server()
    print(f"check_install: ok (think_kernel from {origin.parent}; no node on PATH)")


if __name__ == "__main__":
    main()
