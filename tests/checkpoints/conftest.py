"""A real server with the rooms and the Think extension, pycrdt peers, and the REST calls of
the rewind tests."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403  (the jp_* fixtures)

from tests.waiting import until

from ..collab.conftest import (  # noqa: F401  (fixtures)
    jp_asyncio_loop,
    model_env,
    peers,
)
from ..server.conftest import write_kernelspec

# pytest-jupyter runs coroutine tests on a loop of its own, pytest-asyncio on another; keep
# pytest-asyncio's (the repo default) and make the server fixtures use that same loop.
for _hook in ("pytest_pycollect_makeitem", "pytest_pyfunc_call"):
    globals().pop(_hook, None)


@pytest.fixture
def jp_server_config(jp_root_dir, jp_data_dir):  # noqa: F811
    """The collaboration server of tests/collab, plus the Think extension and kernelspec."""
    write_kernelspec(jp_data_dir)
    return {
        "ServerApp": {
            "jpserver_extensions": {
                "jupyter_server_ydoc": True,
                "jupyter_server_fileid": True,
                "jupyter_ext": True,
            },
            "token": "",
            "password": "",
            "disable_check_xsrf": True,
            "allow_root": True,
        },
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
        "ThinkExtension": {"heartbeat_interval": 0.2, "retry_delays": [0.2]},
    }


@pytest.fixture
def api(jp_fetch, jp_serverapp):  # noqa: F811
    """``status, body = await api("POST", "sessions", {...})`` (4xx answered, not raised)."""

    async def call(method: str, path: str, body: Any = None, **params: Any) -> tuple[int, Any]:
        ext = jp_serverapp.extension_manager.extension_points["jupyter_ext"].app
        await ext.ensure_started()
        kw: dict[str, Any] = {"method": method, "raise_error": False}
        if body is not None:
            kw["body"] = json.dumps(body)
        elif method == "POST":
            kw["body"] = ""
        if params:
            kw["params"] = params
        resp = await jp_fetch("api", "think", *path.split("/"), **kw)
        text = resp.body.decode() if resp.body else ""
        return resp.code, (json.loads(text) if text else None)

    return call


async def turn(api: Any, sid: str, content: str, done: str) -> str:
    """Send a message, wait for the reply that ends its run; the user message's id."""
    code, sent = await api("POST", f"sessions/{sid}/messages", {"content": content})
    assert code == 201, sent

    async def answered() -> bool:
        _, got = await api("GET", f"sessions/{sid}/messages")
        if not any(m["role"] == "assistant" and m["content"] == done for m in got["messages"]):
            return False
        return not (await api("GET", f"sessions/{sid}"))[1].get("run")

    await until(answered, 90, f"the reply {done!r}", every=0.05)
    return str(sent["message"]["id"])
