"""Benchmarks of live apps. Prints medians next to their baseline; targets in docs/apps.md.

    python bench/apps.py            # 300 requests each way
    python bench/apps.py --quick    # 100

1. ``serve_app`` to first byte: a trivial ``http.server`` app started in a real sandbox (the
   strongest tier here), from the start call until its first answer is read.
2. Proxy overhead per request: the same GET through a real Jupyter server's proxy
   (``/api/think/sessions/{id}/apps/{name}/``, token auth, a new connection each time) next
   to a direct request on the app's socket (a new connection each time), in the same run.
   Target: p50 overhead <= 2 ms.

The server learns of the app as it learns of a kernel's apps: an ``apps`` item over a real
kernel link (of a python3 kernel the server started).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from server import TOKEN, Sink, call, start_server, wait_up  # noqa: E402

from tests.apps.app_source import app_source, apps_in  # noqa: E402
from think_kernel.kernel.link import KernelLink, kernel_identity  # noqa: E402
from think_kernel.sandbox import Sandbox, SandboxConfig  # noqa: E402


def report(name: str, ours: float, base: float | None, unit: str, target: str) -> None:
    """One result line: ours, the baseline, the target."""
    shown = f"{ours:>9,.2f} {unit}"
    if base is not None:
        shown += f"   (baseline {base:,.2f} {unit}, +{ours - base:,.2f})"
    print(f"{name:<52} {shown}   target {target}", flush=True)


async def direct(path: str) -> float:
    """Milliseconds of one GET on the app's socket."""
    t0 = time.perf_counter()
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(b"GET / HTTP/1.1\r\nHost: app\r\nConnection: close\r\n\r\n")
    await writer.drain()
    data = await reader.read()
    writer.close()
    assert data.startswith(b"HTTP/1.0 200"), data[:80]
    return (time.perf_counter() - t0) * 1000


async def proxied(port: int, path: str, token: bool = True) -> float:
    """Milliseconds of one GET through the server's proxy (a new connection); with another
    path, of any authenticated GET of the server (``api/status``: the floor). ``token``:
    False at the app's keyed path (its key is the credential, as for the Lab tab)."""
    t0 = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    auth = f"Authorization: token {TOKEN}\r\n" if token else ""
    writer.write(f"GET /{path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                 f"{auth}Connection: close\r\n\r\n".encode())  # fmt: skip
    await writer.drain()
    data = await reader.read()
    writer.close()
    assert data.startswith(b"HTTP/1.1 200"), data[:200]
    return (time.perf_counter() - t0) * 1000


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    n = 100 if parser.parse_args().quick else 300
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        ws = tmp / "ws"
        ws.mkdir()
        (ws / "app.py").write_text(app_source("bench"))
        sandbox = await Sandbox.create(ws, f"bench-apps-{uuid.uuid4().hex[:6]}", SandboxConfig())
        apps = apps_in(sandbox)
        proc = None
        try:
            await sandbox.run_bash("true")  # the sandbox is up: time the app alone
            starts = []
            for i in range(5):
                t0 = time.perf_counter()
                app = await apps.start("s", "python app.py", f"start{i}")
                await direct(app.path)
                starts.append((time.perf_counter() - t0) * 1000)
                await apps.stop("s", app.name)
            report("serve_app to first byte (trivial app), p50", statistics.median(starts),
                   None, "ms", "-")  # fmt: skip
            app = await apps.start("s", "python app.py", "web")

            proc, port = start_server(ws, tmp, True)
            await asyncio.to_thread(wait_up, port, "api/think/sessions")
            sid = (await asyncio.to_thread(call, port, "POST", "api/think/sessions", {}))["id"]
            kernel = await asyncio.to_thread(call, port, "POST", "api/kernels", {"name": "python3"})
            ident = await asyncio.to_thread(
                kernel_identity, str(tmp / "runtime" / f"kernel-{kernel['id']}.json")
            )
            assert ident is not None
            link = KernelLink(Sink(), f"http://127.0.0.1:{port}/", *ident)
            link.start()
            await asyncio.wait_for(link.connected.wait(), 30)
            link.push({"kind": "apps", "session_id": sid, "record": apps.record("s")})
            base = f"api/think/sessions/{sid}/apps/web/"
            for _ in range(200):
                listed = await asyncio.to_thread(
                    call, port, "GET", f"api/think/sessions/{sid}/apps"
                )
                if listed["apps"]:
                    break
                await asyncio.sleep(0.05)
            # What the Lab tab opens: the running app's keyed path.
            keyed_path = next(a["open_url"] for a in listed["apps"] if a["name"] == "web")
            ours: list[float] = []
            theirs: list[float] = []
            floor: list[float] = []
            keyed: list[float] = []
            for _ in range(20):  # warm every path
                await direct(app.path)
                await proxied(port, base)
                await proxied(port, "api/status")
                await proxied(port, keyed_path, token=False)
            for _ in range(n):  # interleaved: all see the same machine
                theirs.append(await direct(app.path))
                ours.append(await proxied(port, base))
                floor.append(await proxied(port, "api/status"))
                keyed.append(await proxied(port, keyed_path, token=False))
            p50, b50 = statistics.median(ours), statistics.median(theirs)
            report("GET through the proxy, p50", p50, b50, "ms", "overhead <= 2 ms")
            q = statistics.quantiles
            report("GET through the proxy, p90", q(ours, n=10)[-1], q(theirs, n=10)[-1], "ms", "-")
            report("GET at the keyed path (the Lab tab's), p50", statistics.median(keyed), b50,
                   "ms", "overhead <= 2 ms")  # fmt: skip
            # The floor: what any authenticated request costs this server (a new TCP
            # connection, tornado, the token check), with no app behind it.
            report("any authenticated GET (api/status), p50", statistics.median(floor), b50,
                   "ms", "the floor of a request through this server")  # fmt: skip
            await link.close()
        finally:
            await apps.close()
            await sandbox.close()
            if proc is not None:
                proc.terminate()
                proc.wait(10)


if __name__ == "__main__":
    asyncio.run(main())
