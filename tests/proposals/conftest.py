"""A real server with the rooms and the Think extension, pycrdt peers, the REST helper and
the scripted model: the fixtures of the rewind tests."""

from __future__ import annotations

from pytest_jupyter.jupyter_server import *  # noqa: F403  (the jp_* fixtures)

from ..checkpoints.conftest import api, jp_server_config  # noqa: F401  (fixtures)
from ..collab.conftest import (  # noqa: F401  (fixtures)
    jp_asyncio_loop,
    model_env,
    peers,
)

# pytest-jupyter runs coroutine tests on a loop of its own, pytest-asyncio on another; keep
# pytest-asyncio's (the repo default) and make the server fixtures use that same loop.
for _hook in ("pytest_pycollect_makeitem", "pytest_pyfunc_call"):
    globals().pop(_hook, None)
