"""A real Jupyter server with the think extension (in process, pytest-jupyter), real kernels."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403  (the jp_* fixtures)
from tornado.httpclient import HTTPClientError

from tests.waiting import until

TOKEN = "test-token-0123456789"
REPO = Path(__file__).resolve().parents[2]
KERNEL_MODULE = "think_kernel"

# pytest-jupyter runs coroutine tests on a loop of its own, pytest-asyncio on another; keep
# pytest-asyncio's (the repo default) and make the server fixtures use that same loop.
for _hook in ("pytest_pycollect_makeitem", "pytest_pyfunc_call"):
    globals().pop(_hook, None)


@pytest.fixture
async def jp_asyncio_loop():
    """The loop the test runs on (the server and the clients share it)."""
    yield asyncio.get_running_loop()


@pytest.fixture
def model_env(fake_model, monkeypatch):
    """Point kernels started by the server at the scripted model."""
    monkeypatch.setenv("OPENAI_BASE_URL", fake_model.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("THINK_MODEL", "fake-model")
    return fake_model


@pytest.fixture
def think_config() -> dict[str, Any]:
    """ThinkExtension settings for a test (override in a module to change them)."""
    # No spare kernels unless a test asks (tests/server/test_kernel_pool.py): each would be
    # one more kernel starting on 2 shared cores in every test.
    return {
        "heartbeat_interval": 0.2,
        "stale_timeout": 3.0,
        "retry_delays": [0.2, 0.4],
        "kernel_pool_size": 0,
    }


@pytest.fixture
def jp_server_config(jp_data_dir, think_config):  # noqa: F811
    write_kernelspec(jp_data_dir)
    return {
        "ServerApp": {
            "jpserver_extensions": {"jupyter_ext": True},
            "token": TOKEN,
            "allow_root": True,
        },
        "IdentityProvider": {"token": TOKEN},
        "ThinkExtension": think_config,
    }


def write_kernelspec(data_dir: Path) -> None:
    """The ``think`` kernelspec, pointing at this checkout (tests patch Jupyter's paths)."""
    spec = data_dir / "kernels" / "think"
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", KERNEL_MODULE, "-f", "{connection_file}"],
                "display_name": "Think",
                "language": "markdown",
                "env": {"PYTHONPATH": str(REPO)},
                # As the installed kernelspec: the provisioner that uses a preloaded process.
                "metadata": {"kernel_provisioner": {"provisioner_name": "think-provisioner"}},
            }
        )
    )


@pytest.fixture
async def think(jp_serverapp):  # noqa: F811
    """The running ThinkExtension (started: pytest-jupyter never runs the start hook)."""
    ext = jp_serverapp.extension_manager.extension_points["jupyter_ext"].app
    await ext.ensure_started()
    return ext


@pytest.fixture
def api(jp_fetch, think):  # noqa: F811
    """``status, body = await api("POST", "sessions", {"title": "x"})`` (never raises on 4xx)."""

    async def call(method: str, path: str, body: Any = None, **params: Any) -> tuple[int, Any]:
        await think.ensure_started()
        kw: dict[str, Any] = {"method": method, "raise_error": False}
        if body is not None:
            kw["body"] = body if isinstance(body, (str, bytes)) else json.dumps(body)
        elif method in ("POST", "PATCH", "PUT"):
            kw["body"] = ""
        if params:
            kw["params"] = params
        try:
            resp = await jp_fetch("api", "think", *path.split("/"), **kw)
        except HTTPClientError as e:  # raise_error=False still raises for some codes
            assert e.response is not None
            resp = e.response
        text = resp.body.decode() if resp.body else ""
        return resp.code, (json.loads(text) if text else None)

    return call


class WSClient:
    """A stand-in tab: collects every frame of one session's WebSocket."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.frames: list[dict[str, Any]] = []
        self._task = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        while True:
            msg = await self.conn.read_message()
            if msg is None:
                return
            self.frames.append(json.loads(msg))

    def of(self, kind: str) -> list[dict[str, Any]]:
        """Frames of one type."""
        return [f for f in self.frames if f.get("type") == kind]

    async def send(self, frame: dict[str, Any]) -> None:
        """Send a frame."""
        await self.conn.write_message(json.dumps(frame))

    async def close(self) -> None:
        """Close the socket."""
        self.conn.close()
        await asyncio.wait_for(self._task, 5)


@pytest.fixture
async def ws(jp_ws_fetch, think):  # noqa: F811
    """``tab = await ws(session_id)``: an open session WebSocket."""
    opened: list[WSClient] = []

    async def connect(session_id: str) -> WSClient:
        conn = await jp_ws_fetch("api", "think", "sessions", session_id, "ws")
        client = WSClient(conn)
        opened.append(client)
        # connect() returns at the handshake; the tab is subscribed once its first frames
        # (sync, history) are out, so tests start emitting only then.
        await until(lambda: client.of("history"), 10, "the tab's history frame")
        return client

    yield connect
    for client in opened:
        client.conn.close()
