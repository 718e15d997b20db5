"""MCP servers for the tests: ``mcp_server.py`` (the official SDK) over stdio or streamable
HTTP, a private Jupyter config directory for ``mcp.json``, and runtimes that use them."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from think_kernel.config import ThinkConfig
from think_kernel.runtime import Runtime

from ..fake_model import FakeModel

SERVER = Path(__file__).with_name("mcp_server.py")


def stdio_entry(notes: Path | None = None, **extra: Any) -> dict[str, Any]:
    """A stdio ``mcpServers`` entry running the test server with this Python."""
    entry: dict[str, Any] = {"command": sys.executable, "args": [str(SERVER)]}
    if notes is not None:
        entry["env"] = {"NOTES": str(notes)}
    entry.update(extra)
    return entry


def write_mcp_json(folder: Path, servers: dict[str, Any]) -> Path:
    """``mcp.json`` in the common form, in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Jupyter config directory of this test (``JUPYTER_CONFIG_DIR``)."""
    folder = tmp_path / "jupyter-config"
    folder.mkdir()
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(folder))
    return folder


@pytest.fixture
async def make_runtime(
    tmp_path: Path, fake_model: FakeModel
) -> AsyncIterator[Callable[..., Any]]:
    """``rt = await make_runtime(mcp_servers={...})``: a started Runtime on the fake model."""
    made: list[Runtime] = []

    async def make(**settings: Any) -> Runtime:
        cfg = ThinkConfig(base_url=fake_model.url, api_key="test-key", retry_delays=[0.01])
        for key, value in settings.items():
            setattr(cfg, key, value)
        ws = tmp_path / "ws"
        ws.mkdir(exist_ok=True)
        rt = Runtime(cfg, ws, extensions=[])
        made.append(rt)
        await rt.start()
        assert rt.gate is not None
        rt.gate.poll = 0.05
        return rt

    yield make
    for rt in made:
        await rt.close()


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    """The test server over streamable HTTP (its own process); yields its URL."""
    port = free_port()
    log = open(tmp_path / "http-server.log", "w")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--http", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={"NOTES": str(tmp_path / "http-notes.txt"), "PATH": "/usr/bin:/bin"},
    )
    try:
        deadline = time.monotonic() + 60
        while True:  # wait until it listens (not a fixed sleep)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, (tmp_path / "http-server.log").read_text()
                assert time.monotonic() < deadline, "the HTTP MCP server did not listen"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


def pid_alive(pid: int) -> bool:
    """Whether a process exists (and is not a zombie)."""
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
