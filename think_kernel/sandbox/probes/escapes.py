"""Probes of what one session's code could reach outside its sandbox: the network, host
sockets, files outside the workspace, the kernel's secrets and process, the store, its own
launcher, and the page (scriptable output)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import textwrap
from pathlib import Path

from .. import launch
from ..sandbox import Sandbox
from .report import Probe

CANARY = "THINK_DOCTOR_CANARY_SECRET"  # set in the kernel's environment while probing


async def output_scripting(sb: Sandbox) -> Probe:
    """Sandboxed code displays HTML, JavaScript, SVG and Markdown with handlers: what the
    kernel would publish of it must hold no MIME type the page could run."""
    from ...safeoutput import UNTRUSTED_MIME, safe_bundle, scriptable

    code = textwrap.dedent("""
        display({"text/html": "<img src=x onerror=alert(1)><script>alert(2)</script>",
                 "text/plain": "html"})
        display({"application/javascript": "alert(3)", "text/plain": "js"})
        display({"text/markdown": "<img src=x onerror=alert(4)>", "text/plain": "md"})
        display({"image/svg+xml": "<svg onload='alert(5)'/>", "text/plain": "svg"})
    """)
    res = await sb.run_python(code, fresh=True)
    sent = [safe_bundle({k: v for k, v in b.items() if "/" in k}) for b in res.outputs]
    leaks = sorted({mime for data in sent for mime in scriptable(data)})
    framed = sum(UNTRUSTED_MIME in data for data in sent)
    ok = len(sent) == 4 and not leaks and framed == 3
    detail = "HTML, JavaScript and SVG go to a sandboxed frame; Markdown is sanitised"
    if leaks:
        detail = "would reach the page: " + ", ".join(leaks)
    elif not ok:
        detail = f"expected 4 displays (3 framed), got {len(sent)} ({framed} framed)"
    return Probe("output scripting: HTML and JavaScript from sandboxed code", ok, detail)


async def network(sb: Sandbox) -> Probe:
    """Connect to a TCP port on this machine."""
    hits: list[int] = []

    async def on_conn(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        hits.append(1)
        w.close()

    server = await asyncio.start_server(on_conn, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    code = textwrap.dedent(f"""
        import socket
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=2)
            print("CONNECTED")
        except OSError as e:
            print("BLOCKED", e.strerror)
    """)
    try:
        res = await sb.run_python(code, fresh=True)
        await asyncio.sleep(0.05)
    finally:
        server.close()
    ok = not hits and "CONNECTED" not in res.stdout
    return Probe("network: connect to a TCP port on this machine", ok,
                 "refused: " + res.stdout.strip().removeprefix("BLOCKED ") if ok else
                 "a connection got through")  # fmt: skip


async def sockets(sb: Sandbox, ws: Path) -> Probe:
    """Connect to a world-writable Unix socket in the workspace."""
    # A world-writable Unix socket in the workspace, as a forgotten dev server would leave.
    path = ws / "doctor.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen()
    srv.setblocking(False)
    os.chmod(path, 0o777)
    code = textwrap.dedent(f"""
        import socket
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect({str(path)!r})
            print("CONNECTED")
        except OSError as e:
            print("BLOCKED", e.strerror)
    """)
    try:
        res = await sb.run_python(code, fresh=True)
        try:
            srv.accept()[0].close()
            reached = True
        except BlockingIOError:
            reached = False
    finally:
        srv.close()
        path.unlink(missing_ok=True)
    ok = not reached
    return Probe("host sockets: connect to a Unix socket", ok,
                 "refused: " + res.stdout.strip().removeprefix("BLOCKED ") if ok else
                 "connected to a socket outside the sandbox")  # fmt: skip


async def outside(sb: Sandbox, outside: Path) -> Probe:
    """Write a file outside the workspace."""
    target = outside / "escaped.txt"
    await sb.run_bash(f"echo escaped > {target}")
    ok = not target.exists()
    return Probe("files: write outside the workspace", ok, "refused" if ok else f"wrote {target}")


async def secrets(sb: Sandbox) -> Probe:
    """Read the kernel's environment (a canary variable in it)."""
    res = await sb.run_bash(f"env; cat /proc/{os.getpid()}/environ 2>/dev/null | tr '\\0' '\\n'")
    ok = CANARY not in res.stdout and "sk-doctor-canary" not in res.stdout
    return Probe(
        "secrets: the kernel's environment",
        ok,
        "not visible" if ok else "a kernel environment variable was visible",
    )


async def store(sb: Sandbox) -> Probe:
    """List and write the store's folder."""
    root = launch.store_root()
    probe = root / "doctor-probe.txt"
    res = await sb.run_bash(f"ls {root} 2>&1 | head -3; echo x > {probe} && echo WROTE")
    wrote = probe.exists()
    with contextlib.suppress(OSError):
        probe.unlink()
    listed = [n for n in os.listdir(root) if n != probe.name] if root.is_dir() else []
    seen = any(n in res.stdout for n in listed)
    ok = not wrote and not seen
    return Probe(f"the store: {root}", ok, "hidden" if ok else
                 "its folder was listed or written")  # fmt: skip


async def history_store() -> Probe:
    # Where a server started here would keep the collaboration rooms' Yjs history: sandboxed
    # code can write the workspace, so a history kept there can be replaced with a link.
    attack = "the history store: replace it in the workspace"
    try:
        from jupyter_ext.collab.ystore import check_workspace
    except ImportError as e:  # no server extension (or no jupyter-collaboration) here
        return Probe(attack, True, f"no collaboration rooms ({e})")
    ok, detail = await asyncio.to_thread(check_workspace, os.getcwd())
    return Probe(attack, ok, ("outside the workspace: " if ok else "") + detail)


async def kernel(sb: Sandbox) -> Probe:
    """Signal the kernel process and open its memory."""
    me = os.getpid()
    code = textwrap.dedent(f"""
        import os
        for what, act in (("signal", lambda: os.kill({me}, 0)),
                          ("memory", lambda: open("/proc/{me}/mem", "rb"))):
            try:
                act()
                print("REACHED", what)
            except OSError as e:
                print("DENIED", what)
    """)
    res = await sb.run_python(code, fresh=True)
    ok = "REACHED" not in res.stdout
    return Probe(
        "the kernel process: signal it, open its memory",
        ok,
        "refused" if ok else res.stdout.strip().replace("\n", ", "),
    )


async def launcher(sb: Sandbox) -> Probe:
    """Stop the session's own launcher (the parent of every run)."""
    res = await sb.run_bash("kill -STOP $PPID && echo STOPPED; kill -0 $PPID && echo REACHED")
    alive = await sb.ping(2.0)
    ok = "STOPPED" not in res.stdout and "REACHED" not in res.stdout and alive
    return Probe(
        "its own launcher: kill -STOP $PPID",
        ok,
        "refused, launcher still answers" if ok else "the launcher could be signalled",
    )
