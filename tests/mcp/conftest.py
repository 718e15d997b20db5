"""MCP servers for the tests: ``mcp_server.py`` (the official SDK) over stdio or streamable
HTTP, a private Jupyter config directory for ``mcp.json``, runtimes that use them, and a real
Jupyter server (collaboration, the Think extension, a token) for Think's own endpoint."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403  (the jp_* fixtures)

from think_kernel.config import ThinkConfig
from think_kernel.runtime import Runtime

from ..fake_model import FakeModel
from ..layers import starts_processes
from ..server.conftest import write_kernelspec

# pytest-jupyter runs coroutine tests on a loop of its own, pytest-asyncio on another; keep
# pytest-asyncio's (the repo default) and make the server fixtures use that same loop.
for _hook in ("pytest_pycollect_makeitem", "pytest_pyfunc_call"):
    globals().pop(_hook, None)

SERVER = Path(__file__).with_name("mcp_server.py")
TOKEN = "mcp-test-token-0123456789"


@pytest.fixture
async def jp_asyncio_loop():
    """The loop the test runs on (the server, the peers and the clients share it)."""
    yield asyncio.get_running_loop()


@pytest.fixture
def jp_server_config(jp_root_dir, jp_data_dir):  # noqa: F811
    """jupyter-collaboration (as tests/collab runs it), the Think extension, a token."""
    write_kernelspec(jp_data_dir)
    return {
        "ServerApp": {
            "jpserver_extensions": {
                "jupyter_server_ydoc": True,
                "jupyter_server_fileid": True,
                "jupyter_ext": True,
            },
            "token": TOKEN,
            "allow_root": True,
        },
        "IdentityProvider": {"token": TOKEN},
        "YDocExtension": {
            "document_save_delay": 0.2,
            "document_cleanup_delay": 60,
            "ystore_class": "jupyter_ext.collab.rooms.ThinkYStore",
        },
        "ThinkYStore": {"db_path": str(jp_data_dir / "think" / "ystore.db")},
        "BaseFileIdManager": {
            "root_dir": str(jp_root_dir),
            "db_path": str(jp_data_dir / "fileid.db"),
            "db_journal_mode": "OFF",
        },
        "ThinkExtension": {"heartbeat_interval": 0.2, "kernel_pool_size": 0},
    }


@pytest.fixture
async def think(jp_serverapp):  # noqa: F811
    """The running Think extension."""
    ext = jp_serverapp.extension_manager.extension_points["jupyter_ext"].app
    await ext.ensure_started()
    return ext


@pytest.fixture
def base(http_server_client, jp_http_port, jp_base_url) -> str:  # noqa: F811
    """The server's base URL (``http://127.0.0.1:PORT/...``), listening."""
    return f"http://127.0.0.1:{jp_http_port}{jp_base_url}"


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
async def make_runtime(tmp_path: Path, fake_model: FakeModel) -> AsyncIterator[Callable[..., Any]]:
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
@starts_processes
def http_mcp_server(tmp_path: Path) -> Iterator[str]:
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
