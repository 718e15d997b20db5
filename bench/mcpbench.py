"""What MCP costs, each next to a baseline measured in the same run.

    python bench/mcpbench.py [--quick]

(a) The cold path: the first request of a runtime with one stdio MCP server (the test
    server of tests/mcp, written with the SDK) whose tool list is not cached yet (the server
    starts and is listed before the model is asked), the same with the list cached (nothing
    starts), and the baseline: the same request with no MCP server configured.
(b) One tool call: an MCP server's ``echo`` (a JSON-RPC round trip over stdio) through the
    registry, against the core ``read_file`` of a small file.
(c) Think's endpoint: ``tools/call list_files`` by an SDK client over streamable HTTP,
    through a real Jupyter server and the session's think kernel: the first call (it starts
    the kernel) and then steady state, next to ``GET /api/think/sessions`` (a plain REST call
    through the same auth).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import server as srv  # noqa: E402

from tests.fake_model import FakeModel  # noqa: E402
from think_kernel.config import ThinkConfig  # noqa: E402
from think_kernel.runtime import Runtime  # noqa: E402

SERVER = ROOT / "tests" / "mcp" / "mcp_server.py"
ENTRY = {"test": {"command": sys.executable, "args": [str(SERVER)]}}


def ms(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:9.1f} ms"


async def first_request(tmp: Path, fm: FakeModel, servers: dict[str, Any], store: str) -> float:
    """Seconds from a new runtime's first request to its last event."""
    cfg = ThinkConfig(base_url=fm.url, api_key="k", mcp_servers=servers, store_path=store)
    ws = tmp / "ws"
    ws.mkdir(exist_ok=True)
    rt = Runtime(cfg, ws, extensions=[])
    await rt.start()
    fm.reply(text="hello")
    t0 = time.perf_counter()
    async for _ in rt.run("hi"):
        pass
    took = time.perf_counter() - t0
    await rt.close()
    return took


async def bench_cold(tmp: Path, fm: FakeModel, n: int) -> None:
    cold, cached, none = [], [], []
    for i in range(n):
        store = str(tmp / f"store-{i}" / "think.db")
        cold.append(await first_request(tmp, fm, ENTRY, store))  # nothing cached yet
        cached.append(await first_request(tmp, fm, ENTRY, store))  # the same store: cached
        none.append(await first_request(tmp, fm, {}, str(tmp / f"plain-{i}" / "think.db")))
    print(f"(a) first request, MCP server not yet listed     {ms(cold)}")
    print(f"    first request, its tool list cached            {ms(cached)}")
    print(f"    baseline: first request, no MCP server         {ms(none)}")


async def bench_call(tmp: Path, fm: FakeModel, n: int) -> None:
    cfg = ThinkConfig(base_url=fm.url, api_key="k", mcp_servers=ENTRY,
                      store_path=str(tmp / "call" / "think.db"))  # fmt: skip
    ws = tmp / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "a.txt").write_text("hello\n")
    rt = Runtime(cfg, ws, extensions=[])
    await rt.start()
    await rt.mcp.discover()
    mcp, core = [], []
    for i in range(n):
        ctx = rt.make_context("m", f"c{i}")
        ctx.read_paths.clear()
        t0 = time.perf_counter()
        out = await rt.tools.call("test__echo", {"text": "x"}, ctx)
        t1 = time.perf_counter()
        await rt.tools.call("read_file", {"path": "a.txt"}, ctx)
        t2 = time.perf_counter()
        assert out.output.ok, out.output.text
        mcp.append(t1 - t0)
        core.append(t2 - t1)
    await rt.close()
    print(f"(b) MCP tool call (stdio round trip)              {ms(mcp)}")
    print(f"    baseline: core read_file call                  {ms(core)}")


async def bench_endpoint(tmp: Path, n: int) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp_types import Implementation

    root = tmp / "root"
    root.mkdir()
    (root / "a.txt").write_text("x")
    proc, port = srv.start_server(root, tmp, extension=True)
    try:
        srv.wait_up(port, "api/think/sessions", timeout=120)
        headers = {"Authorization": f"Bearer {srv.TOKEN}"}
        url = f"http://127.0.0.1:{port}/api/think/mcp"
        first, steady, rest = 0.0, [], []
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=300)) as h:
            info = Implementation(name="bench", version="1")
            transport = streamable_http_client(url, http_client=h)
            async with Client(transport, client_info=info, mode="legacy", cache=None) as client:
                t0 = time.perf_counter()
                await client.call_tool("list_files", {})
                first = time.perf_counter() - t0
                for _ in range(n):
                    t0 = time.perf_counter()
                    res = await client.call_tool("list_files", {})
                    steady.append(time.perf_counter() - t0)
                    assert not res.is_error
                    t0 = time.perf_counter()
                    await asyncio.to_thread(srv.call, port, "GET", "api/think/sessions")
                    rest.append(time.perf_counter() - t0)
        print(f"(c) endpoint tools/call, first (starts a kernel) {first * 1000:9.1f} ms")
        print(f"    endpoint tools/call list_files, steady         {ms(steady)}")
        print(f"    baseline: GET /api/think/sessions              {ms(rest)}")
    finally:
        proc.terminate()
        proc.wait(30)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts")
    args = parser.parse_args()
    fm = FakeModel().start()
    try:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            # Only the servers configured here: not the mcp.json of whoever runs this.
            (tmp / "config").mkdir()
            os.environ["JUPYTER_CONFIG_DIR"] = str(tmp / "config")
            await bench_cold(tmp, fm, 3 if args.quick else 7)
            await bench_call(tmp, fm, 50 if args.quick else 300)
            await bench_endpoint(tmp, 20 if args.quick else 100)
    finally:
        fm.stop()


if __name__ == "__main__":
    asyncio.run(main())
