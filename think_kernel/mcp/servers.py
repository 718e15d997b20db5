"""The MCP servers of one runtime: their tools in the registry, started on first use.

    mcp = McpServers.from_config(config, store_dir, workspace_root)
    mcp.attach(runtime.tools)    # tools known from the cache: registered, nothing started
    await mcp.discover()         # before a request: servers never listed start now
    await mcp.close()            # the kernel stops: every server stops

The model must know a server's tools before it can call one, and listing them means starting
the server. So the tool list of each server is cached in the store folder (keyed by a hash of
its command/URL, arguments, environment and headers). A server whose list is cached starts on
its first call (and its list is refreshed then); one never listed (new or changed) is started
by the first request of the kernel, before the model is asked: the one-time cost of that cold
path is the server's start-up, bounded by ``mcp_start_timeout``. A server that fails to start
contributes no tools; ``%think_mcp`` says why.

Tools are named ``server__tool`` (:mod:`.names`); ``readOnlyHint`` makes one read-only (no
approval by default), ``destructiveHint`` makes it ask even when "always" allowed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..tools.base import SchemaTool, ToolContext, ToolError, ToolOutput, ToolRegistry
from .config import Problem, ServerSpec, config_files, load_servers
from .connection import ServerConnection
from .names import tool_name
from .results import to_output

log = logging.getLogger(__name__)
CACHE_FILE = "mcp-tools.json"


def tool_record(tool: Any) -> dict[str, Any]:
    """What the cache keeps of an ``mcp_types.Tool``."""
    notes = getattr(tool, "annotations", None)
    return {
        "name": str(tool.name),
        "description": str(getattr(tool, "description", None) or ""),
        "input_schema": dict(getattr(tool, "input_schema", None) or {"type": "object"}),
        "read_only": bool(getattr(notes, "read_only_hint", None)),
        "destructive": bool(getattr(notes, "destructive_hint", None)),
    }


class McpServers:
    """Every configured MCP server of a runtime, and their tools in its registry."""

    def __init__(
        self,
        specs: list[ServerSpec],
        problems: list[Problem],
        *,
        cwd: Path,
        state_dir: Path,
        start_timeout: float = 30.0,
        call_timeout: float = 300.0,
    ) -> None:
        self.problems = problems
        self.cache_path = state_dir / CACHE_FILE
        self.servers = {
            s.name: ServerConnection(
                s,
                cwd=cwd,
                log_dir=state_dir / "mcp",
                start_timeout=start_timeout,
                call_timeout=call_timeout,
            )
            for s in specs
        }
        self.names: dict[str, dict[str, str]] = {}  # server -> {MCP tool name: model name}
        self._registry: ToolRegistry | None = None
        self._discovery: asyncio.Future[None] | None = None

    @classmethod
    def from_config(
        cls,
        config: Any,
        state_dir: Path,
        cwd: Path,
        environ: Mapping[str, str] | None = None,
    ) -> McpServers:
        """From ``c.ThinkConfig`` (``mcp_servers``, timeouts) and the ``mcp.json`` files."""
        specs, problems = load_servers(
            config.mcp_servers, config_files(), os.environ if environ is None else environ
        )
        return cls(
            specs,
            problems,
            cwd=cwd,
            state_dir=state_dir,
            start_timeout=float(config.mcp_start_timeout),
            call_timeout=float(config.mcp_call_timeout),
        )

    # -- tools -------------------------------------------------------------------------------

    def attach(self, registry: ToolRegistry) -> None:
        """Register the tools of every server whose list is cached (nothing starts)."""
        self._registry = registry
        cache = self._read_cache()
        for conn in self.servers.values():
            listed = cache.get(conn.spec.fingerprint())
            if isinstance(listed, list):
                self._register(conn, listed)

    def unlisted(self) -> list[ServerConnection]:
        """Servers whose tools the model does not know yet (never listed, or failed)."""
        return [c for c in self.servers.values() if c.spec.name not in self.names]

    async def discover(self) -> None:
        """Start the servers never listed and register their tools (once per runtime, and
        concurrently: the cost is the slowest start, within ``mcp_start_timeout``)."""
        if self._discovery is None:
            self._discovery = asyncio.ensure_future(self._discover())
        await asyncio.shield(self._discovery)

    async def _discover(self) -> None:
        todo = [c for c in self.unlisted() if c.state == "stopped"]
        results = await asyncio.gather(*(c.start() for c in todo), return_exceptions=True)
        for conn, res in zip(todo, results, strict=True):
            if isinstance(res, BaseException):
                log.warning("MCP server %s: %s", conn.spec.name, conn.error or res)
            else:
                self._listed(conn, res)

    def _listed(self, conn: ServerConnection, tools: list[Any]) -> None:
        records = [tool_record(t) for t in tools]
        self._register(conn, records)
        cache = self._read_cache()
        cache[conn.spec.fingerprint()] = records
        try:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.cache_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(cache), encoding="utf-8")
            tmp.replace(self.cache_path)
        except OSError:  # a cache: the next kernel lists them again
            log.warning("cannot write %s", self.cache_path, exc_info=True)

    def _read_cache(self) -> dict[str, Any]:
        try:
            data = json.loads(self.cache_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _register(self, conn: ServerConnection, records: list[dict[str, Any]]) -> None:
        registry = self._registry
        if registry is None:
            return
        server = conn.spec.name
        for old in self.names.pop(server, {}).values():
            registry.remove(old)
        taken = set(registry.tools)
        names: dict[str, str] = {}
        for rec in records:
            if not isinstance(rec, dict) or not isinstance(rec.get("name"), str):
                continue
            name = tool_name(server, rec["name"], taken)
            names[rec["name"]] = name
            description = rec.get("description") or f"{rec['name']} (MCP server {server})"
            registry.add(
                SchemaTool(
                    name,
                    f"[MCP {server}] {description}",
                    rec.get("input_schema") or {"type": "object"},
                    self._caller(server, rec["name"]),
                    read_only=bool(rec.get("read_only")),
                    destructive=bool(rec.get("destructive")),
                )
            )
        self.names[server] = names

    def _caller(self, server: str, tool: str) -> Any:
        async def call(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
            files = ctx.services.files
            conn = self.servers.get(server)
            if files is None or conn is None:
                return await self.call(server, tool, args)
            # A server on this machine may write the workspace: the watch of sandboxed runs
            # records what it changed in the turn's checkpoint and merges it into open rooms.
            async with files.run(hold=conn.call_timeout + 5) as run:
                out = await self.call(server, tool, args)
            for kind, paths in (
                ("created", run.changes.created),
                ("modified", run.changes.modified),
                ("deleted", run.changes.deleted),
            ):
                for path in paths:
                    await ctx.file_changed(path, kind)
            return out

        return call

    async def call(self, server: str, tool: str, args: dict[str, Any]) -> ToolOutput:
        """Call one tool of one server (started if needed); ToolError on any failure."""
        conn = self.servers.get(server)
        if conn is None:
            raise ToolError(f"no MCP server {server!r} is configured", "MCP_UNKNOWN")
        was_running = conn.running
        result = await conn.call(tool, args)
        if not was_running:  # it (re)started: what it lists now is what the next request sees
            self._listed(conn, conn.tools)
        return to_output(result, server, tool)

    # -- status and lifecycle ----------------------------------------------------------------

    def status(self) -> list[dict[str, Any]]:
        """One row per server (and per problem) for ``%think_mcp`` and ``%think_status``."""
        rows: list[dict[str, Any]] = []
        for name, conn in self.servers.items():
            registry = self._registry
            marks: list[tuple[str, str]] = []  # (model name, "read-only" | "destructive" | "")
            for model_name in self.names.get(name, {}).values():
                tool = registry.tools.get(model_name) if registry is not None else None
                mark = ""
                if tool is not None and tool.read_only:
                    mark = "read-only"
                elif tool is not None and tool.destructive:
                    mark = "destructive"
                marks.append((model_name, mark))
            rows.append(
                {
                    "name": name,
                    "transport": conn.spec.transport,
                    "target": conn.spec.describe(),
                    "state": conn.state,
                    "error": conn.error,
                    "calls": conn.calls,
                    "tools": marks,
                    "source": conn.spec.source,
                }
            )
        for p in self.problems:
            rows.append({"name": p.name, "state": "invalid", "error": p.message, "source": p.source,
                         "tools": [], "transport": "", "target": "", "calls": 0})  # fmt: skip
        return rows

    async def restart(self) -> None:
        """Stop every server and list them all again (``%think_mcp refresh``)."""
        await self.close()
        for conn in self.servers.values():
            conn.state = "stopped"
        registry = self._registry
        for names in self.names.values():
            for name in names.values():
                if registry is not None:
                    registry.remove(name)
        self.names.clear()
        self._discovery = None
        await self.discover()

    async def close(self) -> None:
        """Stop every server that runs (the kernel is shutting down)."""
        await asyncio.gather(*(c.close() for c in self.servers.values()), return_exceptions=True)
