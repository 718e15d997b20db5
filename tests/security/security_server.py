"""A real Jupyter server with Think, jupyter-collaboration and file ids, for the attack suite.

Import the fixtures into a test module with ``from security_server import *``. The server
root is outside pytest's basetemp (see ``workspace`` in conftest.py), so a sandbox on it can
plant files there on every tier.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403  (the jp_* fixtures)

from tests.collab.peers import Peer

# pytest-jupyter runs coroutine tests on a loop of its own, pytest-asyncio on another; keep
# pytest-asyncio's and make the server fixtures use that same loop (as tests/server does).
for _hook in ("pytest_pycollect_makeitem", "pytest_pyfunc_call"):
    globals().pop(_hook, None)


@pytest.fixture
async def jp_asyncio_loop() -> AsyncIterator[asyncio.AbstractEventLoop]:
    """The loop the test runs on (the server and the clients share it)."""
    yield asyncio.get_running_loop()


@pytest.fixture
def jp_root_dir() -> Iterator[Path]:
    """The server root, where sandboxed code may write (outside pytest's basetemp)."""
    root = Path(tempfile.mkdtemp(prefix="think-sec-root-"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def jp_server_config(jp_root_dir: Path, jp_data_dir: Path) -> dict[str, Any]:  # noqa: F811
    """Think enabled (it installs its contents manager), with collaboration and file ids."""
    return {
        "ServerApp": {
            "jpserver_extensions": {
                "jupyter_ext": True,
                "jupyter_server_ydoc": True,
                "jupyter_server_fileid": True,
            },
            # the stand-in tabs (tests/collab/peers.py) send no token, as in tests/collab
            "token": "",
            "password": "",
            "allow_root": True,
            "disable_check_xsrf": True,
        },
        "YDocExtension": {
            "document_save_delay": 0.2,
            "ystore_class": "jupyter_ext.collab.rooms.ThinkYStore",
        },
        "BaseFileIdManager": {
            "root_dir": str(jp_root_dir),
            "db_path": str(jp_data_dir / "fileid.db"),
            "db_journal_mode": "OFF",
        },
        # No chat kernels here (and no spare: tests/server/test_kernel_pool.py tests the pool).
        "ThinkExtension": {
            "kernel_name": "no-such-kernel",
            "retry_delays": [],
            "kernel_pool_size": 0,
        },
    }


@pytest.fixture
async def think(jp_serverapp: Any, http_server_client: Any) -> Any:  # noqa: F811
    """The running ThinkExtension (listening: http_server_client binds the port)."""
    ext = jp_serverapp.extension_manager.extension_points["jupyter_ext"].app
    await ext.ensure_started()
    return ext


@pytest.fixture
def base_url(jp_http_port: int, jp_base_url: str) -> str:  # noqa: F811
    """``http://127.0.0.1:<port><base>``."""
    return f"http://127.0.0.1:{jp_http_port}{jp_base_url}"


@pytest.fixture
def peers(base_url: str, think: Any, jp_asyncio_loop: Any) -> Iterator[Callable[..., Any]]:
    """Stand-in JupyterLab tabs: ``tab = await peers("a.py")`` (a real pycrdt client)."""
    opened: list[Peer] = []

    async def open_peer(path: str, name: str = "human") -> Peer:
        peer = Peer(base_url, path, name)
        await peer.connect()
        opened.append(peer)
        return peer

    yield open_peer
    for peer in opened:
        if not jp_asyncio_loop.is_closed():
            jp_asyncio_loop.run_until_complete(peer.close())


class InProcessLink:
    """The kernel's link, short-circuited to the RPC handlers the extension registered."""

    def __init__(self, think: Any, root_dir: Path) -> None:
        self.links = think.services.links
        self.root_dir = str(root_dir)

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Call an RPC as a linked kernel would."""
        return dict(await self.links._rpc[method]({"kernel_id": "agent"}, params))
