"""A real Jupyter server with jupyter-collaboration, and real pycrdt peers (stand-in tabs)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403  (the jp_* fixtures)

from jupyter_ext.collab.documents import DocumentService
from jupyter_ext.collab.rooms import enable_room_nodelay
from think_kernel.collab.history import VersionLog

from .peers import Peer

# pytest-jupyter runs coroutine tests on a loop of its own, pytest-asyncio on another; keep
# pytest-asyncio's (the repo default) and make the server fixtures use that same loop.
for _hook in ("pytest_pycollect_makeitem", "pytest_pyfunc_call"):
    globals().pop(_hook, None)


@pytest.fixture
async def jp_asyncio_loop():
    """The loop the test runs on (the server and the peers must share it)."""
    yield asyncio.get_running_loop()


@pytest.fixture
def cleanup_delay() -> float:
    """Seconds a room outlives its last client (60 in production)."""
    return 60


@pytest.fixture
def jp_server_config(jp_root_dir, jp_data_dir, cleanup_delay):  # noqa: F811
    return {
        "ServerApp": {
            "jpserver_extensions": {"jupyter_server_ydoc": True, "jupyter_server_fileid": True},
            "token": "",
            "password": "",
            "disable_check_xsrf": True,
            "allow_root": True,
        },
        "YDocExtension": {
            "document_save_delay": 0.2,
            "document_cleanup_delay": cleanup_delay,
            "ystore_class": "jupyter_ext.collab.rooms.ThinkYStore",
        },
        "ThinkYStore": {"db_path": str(jp_data_dir / "think" / "ystore.db")},
        "BaseFileIdManager": {
            "root_dir": str(jp_root_dir),
            "db_path": str(jp_data_dir / "fileid.db"),
            "db_journal_mode": "OFF",
        },
    }


@pytest.fixture
def model_env(fake_model, monkeypatch):
    """Kernels started by the server talk to the scripted model."""
    monkeypatch.setenv("OPENAI_BASE_URL", fake_model.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    return fake_model


@pytest.fixture
def service(jp_serverapp, jp_data_dir) -> DocumentService:
    """The document service, as register_document_rpcs builds it, in the server process."""
    enable_room_nodelay(jp_serverapp.web_app)
    return DocumentService(jp_serverapp, VersionLog(jp_data_dir / "history.db"))


@pytest.fixture
def peers(
    jp_serverapp, http_server_client, jp_http_port, jp_base_url, jp_asyncio_loop
) -> Iterator[Callable[..., Any]]:
    """Open stand-in JupyterLab tabs: ``peer = await peers("nb.ipynb")``."""
    opened: list[Peer] = []

    async def open_peer(path: str, name: str = "human") -> Peer:
        peer = Peer(f"http://127.0.0.1:{jp_http_port}{jp_base_url}", path, name)
        await peer.connect()
        opened.append(peer)
        return peer

    # A sync fixture: pytest-jupyter runs the test and the server on its own loop.
    yield open_peer
    for peer in opened:
        if not jp_asyncio_loop.is_closed():
            jp_asyncio_loop.run_until_complete(peer.close())


def disk_text(root, path: str) -> str:
    """The file as saved on disk."""
    return (root / path).read_text()


def disk_notebook(root, path: str) -> dict[str, Any]:
    """The notebook as saved on disk."""
    return json.loads((root / path).read_text())


async def until_live(
    service, path: str, pred: Callable[[str], bool], timeout: float = 10.0
) -> None:
    """Wait until the room's live text of ``path`` satisfies ``pred``."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not pred((await service.read_text(path))["content"]):
        if loop.time() > end:
            raise AssertionError(f"timed out waiting on the live text of {path}")
        await asyncio.sleep(0.005)
