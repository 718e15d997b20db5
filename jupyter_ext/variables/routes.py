"""The two ways in to a notebook kernel's variables: a REST route and a kernel-link RPC.

    GET /api/think/variables?path=analysis.ipynb&names=df,arr     (the sidebar's @name chips)
    await link.request("vars.inspect", {"path": ..., "names": [...]})   (inspect_variables)

Both answer the :class:`~.inspector.VariableInspector` answer plus ``text``, the summary as
the model reads it (and each variable its own ``text``, what an ``@name`` chip attaches).
The route is authorised on ``think`` (read) and, since it runs a request in a kernel, on
``kernels`` (execute), like JupyterLab's own kernel routes.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from think_kernel.tools.variables import render_variable, render_variables

from ..base import ThinkHandler
from ..collab.doccheck import DocumentError, check_path
from .inspector import InspectError, VariableInspector

RPC = "vars.inspect"


async def inspect_answer(
    inspector: VariableInspector, path: Any, names: Any, caller_kernel_id: str = ""
) -> dict[str, Any]:
    """The answer with its ``text``; InspectError for a bad path or names."""
    try:
        checked = check_path(path if isinstance(path, str) else "")
    except DocumentError as e:
        raise InspectError(str(e)) from None
    if names is not None and not isinstance(names, list):
        raise InspectError("names must be a list of variable names")
    answer = await inspector.inspect(checked, names or None, caller_kernel_id)
    answer["text"] = render_variables(answer)
    for variable in answer["variables"]:
        variable["text"] = render_variable(variable)
    return answer


def register_variable_rpc(ext: Any, inspector: VariableInspector) -> None:
    """Serve ``vars.inspect`` to kernels (the ``inspect_variables`` tool)."""

    async def handler(kernel_info: Any, params: dict[str, Any]) -> dict[str, Any]:
        caller = kernel_info.get("kernel_id") if isinstance(kernel_info, dict) else None
        caller = caller or getattr(kernel_info, "kernel_id", "") or ""
        params = params or {}
        try:
            return await inspect_answer(inspector, params.get("path"), params.get("names"), caller)
        except InspectError as e:
            return {"error": str(e), "code": "BAD_INPUT"}

    ext.register_rpc(RPC, handler)


class VariablesHandler(ThinkHandler):
    """``GET ?path=NB&names=a,b``: the variables of the notebook's kernel (all without
    ``names``); 200 with ``status`` busy, no_kernel, not_supported or timeout when they
    cannot be read, 400 for a path outside the root or a name that is not one."""

    def initialize(self, name: str, startup: Any, inspector: VariableInspector) -> None:  # type: ignore[override]
        """Receive the start handle and the inspector the extension built."""
        super().initialize(name, startup)
        self.inspector = inspector

    @authorized
    async def get(self) -> None:
        """The inspection."""
        user = self.current_user
        if not self.authorizer.is_authorized(self, user, "execute", "kernels"):
            raise web.HTTPError(403, "reading a kernel's variables needs the right to use kernels")
        path = self.get_query_argument("path", "")
        raw = self.get_query_argument("names", "")
        names = [n.strip() for n in raw.split(",") if n.strip()] if raw else None
        try:
            answer = await inspect_answer(self.inspector, path, names)
        except InspectError as e:
            raise web.HTTPError(400, str(e)) from None
        self.send(answer)


def variables_routes(base: str = "/api/think") -> list[tuple[str, type[ThinkHandler]]]:
    """The URL pattern of the route (its handler takes ``inspector`` too)."""
    return [(f"{base}/variables", VariablesHandler)]
