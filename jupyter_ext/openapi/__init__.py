"""The OpenAPI 3.0 document of the REST routes (served at ``/api/think/openapi.json``).

The routes are described in :mod:`.server`, :mod:`.sessions` and :mod:`.questions`, the REST
answers in :mod:`.schemas`; the schemas of the agent events and of the socket and kernel-link
frames come from their one declaration, :mod:`think_kernel.wire` (never copied here).
"""

from __future__ import annotations

from typing import Any

from think_kernel.wire.schema import components

from .agents import AGENT_PATHS
from .apps import APP_PATHS
from .jobs import JOB_PATHS
from .parts import ERR
from .proposals import PROPOSAL_PATHS
from .questions import QUESTION_PATHS
from .rewind import REWIND_PATHS
from .schemas import REST_SCHEMAS
from .search import MEMORY_PATHS, SEARCH_PATHS
from .server import SERVER_PATHS
from .sessions import SESSION_PATHS
from .variables import VARIABLE_PATHS

OPENAPI: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Think for Jupyter", "version": "1"},
    "servers": [{"url": "/api/think"}],
    "components": {"schemas": {**REST_SCHEMAS, **components()}},
    "paths": {**SERVER_PATHS, **SESSION_PATHS, **QUESTION_PATHS, **REWIND_PATHS},
}
OPENAPI["paths"].update(VARIABLE_PATHS)
OPENAPI["paths"].update(JOB_PATHS)
OPENAPI["paths"].update(APP_PATHS)
OPENAPI["paths"].update(AGENT_PATHS)
OPENAPI["paths"].update(SEARCH_PATHS)
OPENAPI["paths"].update(MEMORY_PATHS)
OPENAPI["paths"].update(PROPOSAL_PATHS)
for _path in OPENAPI["paths"].values():
    for _method, _operation in _path.items():
        if _method in ("post", "patch", "delete"):
            _operation["responses"]["409"] = ERR

__all__ = ["OPENAPI"]
