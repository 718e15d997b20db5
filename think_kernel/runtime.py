"""One agent session, wired: config, store, workspace, tools, model, agent loop.

The kernel, the ``%think`` magics and the server link all drive a :class:`Runtime`:

    rt = Runtime(ThinkConfig(), workspace_root=Path.cwd())
    await rt.start()
    async for event in rt.run("create hello.py that prints hi"):
        ...
    await rt.close()

Customisation layers (Project Think): the core prompt and core tools are always there; a
subclass (``instructions``, ``extra_tools``, ``models``) or an ``AgentExtension`` published
under the ``think_kernel.extensions`` entry-point group adds to them; per-session props
(``%think_model``, ``%think_instructions``) add on top at run time and are stored with the
session.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, ClassVar

from .agent.calls import ModelCaller
from .agent.events import Chat, ErrorEvent, Event, StatusEvent, ToolCall
from .agent.loop import Agent
from .agent.model import ModelClient
from .agent.modelaccess import ModelAccess
from .agent.titles import Titler
from .agents import UnknownAgentType, limited, open_agents
from .approvals import ApprovalGate, Policy
from .approvals.session import SessionApprovals
from .apps import Apps, AppsConfig
from .checkpoints import CheckpointConfig, Checkpoints
from .collab import local_access
from .collab.filesync import FileSync
from .config import HOW_TO_CONFIGURE_CHAT, NotConfigured, ThinkConfig, chat_error
from .endpoint import Endpoint
from .hooks import RunEnd
from .hooks.session import open_hooks
from .jobs import Jobs, JobsConfig
from .layers import AgentExtension, Layers, load_extensions
from .layers.core import CORE_TOOLS
from .mcp import McpServers
from .memory import MemoryConfig, MemoryFile
from .proposals import before_request, in_review, news_for_step
from .proposals.sandboxview import ProposalSource
from .sandbox import Sandbox, SandboxConfig
from .sandbox.asuser import ActingAs
from .sandbox.lifecycle import SessionSandbox
from .selftools import open_selftools, step_hook
from .skills.tools import offer_skill_tools
from .skills.wiring import open_skills, relative_session_path
from .store import Store, location, new_id
from .subagents import Subagents
from .subagents.session import SessionSubagents
from .tasks import TasksConfig
from .tools.base import ToolContext, ToolFunc, ToolRegistry
from .tools.sandboxcalls import call_from_sandbox
from .tools.services import ToolServices
from .tools.warm import ToolWarmer
from .tools.workspace import Workspace
from .web import ModelVision, WebConfig, WebServices

__all__ = ["CORE_TOOLS", "AgentExtension", "Runtime", "load_extensions"]

log = logging.getLogger(__name__)
Sink = Callable[[Event], Any]


class Runtime:
    """An agent session bound to a workspace and a store. Subclass to add layers."""

    instructions: ClassVar[str] = ""
    extra_tools: ClassVar[list[ToolFunc]] = []
    models: ClassVar[dict[str, str]] = {}

    def __init__(
        self,
        config: ThinkConfig | None = None,
        workspace_root: str | os.PathLike[str] | None = None,
        *,
        session_id: str | None = None,
        store: Store | None = None,
        workspace: Workspace | None = None,
        model: ModelClient | None = None,
        extensions: list[Any] | None = None,
        kind: str = "notebook",
        session_path: str = "",
    ) -> None:
        self.config = config or ThinkConfig()
        # What a new session is recorded as (the sidebar groups sessions by kind and shows
        # the notebook a session belongs to, by its path in the workspace: Jupyter names a
        # kernel's notebook by its absolute path).
        self.kind = kind
        root = Path(workspace_root or os.getcwd()).resolve()
        self.session_path = relative_session_path(root, session_path)
        # Outside the workspace: sandboxed code can write anywhere in it.
        self.store_dir = location.store_dir(root, self.config.store_path)
        self._notebooks: Any = None
        if workspace is None:
            # Standalone (no server link): local files through a local Yjs document store with
            # versions; the kernel passes a room-backed workspace when it is linked.
            workspace, self._notebooks = local_access(root, self.store_dir)
        self.workspace: Workspace = workspace
        self.session_id = session_id or new_id("s_")
        self.store = store
        self._own_store = store is None
        self.layers = Layers(
            self.config,
            instructions=self.instructions,
            tools=self.extra_tools,
            models=self.models,
            extensions=load_extensions() if extensions is None else extensions,
        )
        # Extensions' lifecycle hooks, around model and tool calls; a failing one is skipped.
        self.hooks = open_hooks(
            self.layers.hooks(), self.config.config, lambda: self.store, str(root)
        )
        # The endpoint in force, its client and the roles' models.
        self.model_access = ModelAccess(self.config, named=self.layers.named_model, injected=model)
        self.clients, self.roles = self.model_access.clients, self.model_access.roles
        self.sinks: list[Sink] = []
        self.read_paths: set[str] = set()
        self.current_message_id = ""
        # Disk and rooms agree around every sandboxed run (flush before, merge after).
        self.files = FileSync(self.workspace)
        # A checkpoint per user message: files are copied before the turn changes them.
        self.checkpoints = Checkpoints(
            self.workspace, config=CheckpointConfig(config=self.config.config)
        )
        self.files.observer = self.checkpoints
        self.box = SessionSandbox(
            self.workspace.root,
            SandboxConfig(config=self.config.config),
            loopback=functools.partial(call_from_sandbox, self),
            before_ready=self.files.start,
            review=ProposalSource(self),
        )
        self.web = WebServices(WebConfig(config=self.config.config), vision=self._vision())
        # AGENTS.md files and skills, read again at each request.
        self.skills = open_skills(root, self.config.config, self.session_path)
        # Agent types (the session's ``agent`` option; a subagent's own): read at each request.
        self.agents = open_agents(root, self.config.config)
        self.services: ToolServices = ToolServices.for_session(
            self.config.config,
            skills=self.skills,
            files=self.files,
            sandbox=self.ensure_sandbox,
            notebooks=self._notebooks,
            web=self.web,
            checkpoints=self.checkpoints,
            memory=MemoryFile(MemoryConfig(config=self.config.config)),
        )
        # A root kernel gives each session's sandbox a uid: its tool calls and loopback calls
        # then touch files with that uid's rights, not root's.
        self.acting: ActingAs | None = None
        if os.geteuid() == 0:
            self.acting = self.services.acting = ActingAs(
                lambda: self.box.identity(self.session_id)
            )
        self.tools = self.layers.tools(CORE_TOOLS)
        # The tools each running agent may call (its agent type's), by task id ("": the
        # session's own run): calls back from its sandboxed code are held to them.
        self.running_tools: dict[str, ToolRegistry] = {}
        self.warmer = ToolWarmer(self.tools)
        self.approvals = SessionApprovals(
            self.config, self.tools, self, agent_policy=self.agents.policy_of
        )
        # MCP servers' tools: from the cache now; servers start on first use.
        self.mcp = McpServers.from_config(self.config, self.store_dir, root)
        self.mcp.attach(self.tools)
        # Tools the agent wrote in .think/tools: loaded before each step once approved.
        self.selftools = open_selftools(root, self.config, self.tools)
        # The attachments waiting for the next request.
        self.pending_attachments: list[dict[str, Any]] = []
        self.titler = Titler()
        self.gate: ApprovalGate | None = None  # made with the store (start)
        # Tasks and subagents, made with the store; ``linked``: a server watches
        # this kernel's subagents through durable schedules (the kernel sets it).
        self.linked = False
        self.delegation = SessionSubagents(
            self,
            TasksConfig(config=self.config.config),
            emit=self.emit,
            durable=lambda: self.linked,
        )
        # One run at a time: a reminder fired by a standalone kernel waits for the cell's run.
        self.run_lock = asyncio.Lock()
        # Background jobs: in the session's sandbox, past the step and the turn.
        self.jobs = self.services.jobs = Jobs(
            JobsConfig(config=self.config.config), self.ensure_sandbox
        )
        # Live apps: in the session's sandbox, reachable through the server's proxy.
        self.apps = self.services.apps = Apps(
            AppsConfig(config=self.config.config), self.ensure_sandbox
        )

    # -- lifecycle ---------------------------------------------------------------------------

    async def open_store(self) -> None:
        """Open the store (``start`` does it too; a chat kernel does it ahead of a session)."""
        if self.store is None:
            path = location.store_file(self.workspace.root, self.config.store_path)
            self.store = await Store.open(path)
            self.checkpoints.store = self.store

    def prewarm_model(self) -> None:
        """Build the default model client now, and load what its first request needs (call
        it on the event loop)."""
        self.model_access.prewarm()

    def prewarm_tools(self) -> None:
        """Build every tool's argument validator now (otherwise the first call does)."""
        self.warmer.build_all()

    def warm_when_idle(self, delay: float = 1.0) -> None:
        """Build the validators once no run has been active for ``delay`` s."""
        self.warmer.when_idle(delay)

    async def start(self) -> None:
        """Open the store, make sure the session exists, read the saved endpoint."""
        await self.open_store()
        await self._ensure_session()
        await self.refresh_endpoint()
        self._make_gate()
        self._start_tasks()
        assert self.store is not None
        await self.jobs.recover(self.store, self.session_id)  # a dead kernel's jobs: lost

    async def _ensure_session(self) -> dict[str, Any]:
        assert self.store is not None
        before = time.time()
        session = await self.store.ensure_session(
            self.session_id, path=self.session_path or str(self.workspace.root), kind=self.kind
        )
        if float(session.get("created_at") or 0) >= before:
            self.delegation.fresh(self.session_id)
        return session

    async def refresh_endpoint(self) -> Endpoint:
        """Re-read the endpoint saved from the setup card (cheap: one indexed row)."""
        return await self.model_access.refresh(self.store)

    @property
    def endpoint(self) -> Endpoint:
        """The endpoint in force (config and environment, or the setup card's)."""
        return self.model_access.endpoint

    def ensure_gate(self) -> ApprovalGate:
        """The approval gate (made with the store; ``start`` first)."""
        if self.gate is None:
            self._make_gate()
        assert self.gate is not None
        return self.gate

    def _make_gate(self) -> None:
        assert self.store is not None
        self.gate = self.approvals.make_gate(self.store)

    @property
    def subagents(self) -> Subagents | None:
        """The task board's subagents (made with the store)."""
        return self.delegation.manager

    def _start_tasks(self) -> None:
        assert self.store is not None
        self.services.subagents = self.delegation.start(self.store)

    async def recover_subagents(self) -> None:
        """Once per session, at its first request: end what a dead kernel left running."""
        self._start_tasks()
        await self.delegation.recover(self.session_id)

    # -- approvals -------------------------------------------------------------------------

    async def policy(self) -> Policy:
        """The approval policy in force: config, then the session's ``approval`` prop."""
        return await self.approvals.policy()

    async def resolve_approval(self, approval_id: Any, frame: dict[str, Any]) -> bool:
        """A decision from the link or the cell's buttons (see ``SessionApprovals.resolve``)."""
        return await self.approvals.resolve(self.gate, approval_id, frame)

    async def close(self) -> None:
        """Close what this runtime opened."""
        self.warmer.cancel()
        await self.delegation.close()  # before the sandbox: their workers close first
        await self.titler.close()
        await self.jobs.close()  # before the sandbox: each job's end is recorded
        await self.apps.close()  # the same for each app
        await self.box.close()
        await self.web.aclose()  # browser, its driver and the egress proxy
        await self.mcp.close()  # no MCP server outlives its kernel
        self.files.close()
        if self.acting is not None:
            self.acting.close()
        if self._notebooks is not None:
            await self._notebooks.aclose()
            self._notebooks = None
        await self.model_access.aclose()
        if self.store is not None and self._own_store:
            await self.store.close()
            self.store = None

    # -- sandbox -----------------------------------------------------------------------------

    @property
    def sandbox(self) -> Sandbox | None:
        """The session sandbox once it has started."""
        return self.box.sandbox

    @property
    def sandbox_config(self) -> SandboxConfig:
        """The sandbox's settings (tier, timeouts, limits)."""
        return self.box.config

    def prepare_sandbox(self) -> None:
        """Take the sandbox's uid, cgroup and workspace access ahead, with no process yet
        (the kernel does this at start; the processes start at first need)."""
        self.box.prepare(self.session_id)

    def prewarm_sandbox(self) -> None:
        """Start the session sandbox in the background (a request is under way)."""
        self.box.prewarm(self.session_id)

    async def wait_sandbox(self) -> None:
        """Wait until the prewarmed sandbox has started (or failed: first use says why)."""
        await self.box.wait()

    async def ensure_sandbox(self) -> Sandbox:
        """The session sandbox, started on first use; ToolError says why when it cannot run."""
        return await self.box.ensure(self.session_id)

    def add_sink(self, sink: Sink) -> None:
        """Call ``sink(event)`` for every event of every run (sync or async callables)."""
        self.sinks.append(sink)

    def remove_sink(self, sink: Sink) -> None:
        """Stop calling a sink added with :meth:`add_sink`."""
        if sink in self.sinks:
            self.sinks.remove(sink)

    # -- layers ------------------------------------------------------------------------------

    async def props(self) -> dict[str, Any]:
        """Per-session options: model, instructions (the "props" layer)."""
        assert self.store is not None
        return await self.store.session_options(self.session_id)

    async def set_props(self, **changes: Any) -> dict[str, Any]:
        """Change per-session options; a value of None removes it."""
        assert self.store is not None
        return await self.store.change_session_options(self.session_id, changes)

    def model_name(self, props: dict[str, Any], role: str = "primary") -> str:
        """The model of a role (see ``ModelRoles.model_name``)."""
        return self.roles.model_name(props, role)

    def role_models(self, props: dict[str, Any]) -> dict[str, str]:
        """Every role's model for this session."""
        return self.roles.role_models(props)

    def context_window(self, model: str) -> int:
        """The context window (tokens) of a model (see ``ModelRoles.context_window``)."""
        return self.roles.context_window(model)

    def _vision(self) -> ModelVision:
        """The ``vision`` role for tools that ask about images (screenshots)."""

        async def resolve(session_id: str) -> ModelCaller:
            props = await self.props()
            assert self.store is not None  # tools run only after start()
            sid = session_id or self.session_id
            return await self.model_access.caller(self.store, sid, props)

        return ModelVision(resolve)

    def system_prompt(self, props: dict[str, Any]) -> str:
        """Core prompt + class + extensions + config + session instructions + skills + the
        state of the agent's own tools + the session's agent type."""
        skills = self.skills.prompt()
        offer_skill_tools(self.tools, bool(self.skills.last_scan.skills))
        memory = self.services.memory.prompt() if self.services.memory else ""
        try:
            kind = self.agents.prompt(self.agents.of(props), self.skills)
        except UnknownAgentType:
            kind = ""  # a request fails before its prompt is used (make_agent says why)
        return self.layers.system_prompt(props, skills, memory, self.selftools.prompt(), kind)

    # -- sessions ----------------------------------------------------------------------------

    async def switch_session(self, session_id: str | None = None) -> dict[str, Any]:
        """Resume a stored session (or start a new one when ``session_id`` is None)."""
        assert self.store is not None
        if session_id is not None and await self.store.get_session(session_id) is None:
            raise KeyError(f"no session {session_id!r}; %think_sessions lists them")
        self.session_id = session_id or new_id("s_")
        self.read_paths = set()
        session = await self._ensure_session()
        if self.subagents is not None:
            await self.recover_subagents()  # what a dead kernel left running in it
        return session

    # -- running -----------------------------------------------------------------------------

    def _model_client(self, props: dict[str, Any]) -> ModelClient:
        """The model client of the endpoint in force (see ``ModelAccess.client``)."""
        return self.model_access.client(props)

    def make_context(self, message_id: str, call_id: str) -> ToolContext:
        """The ToolContext for one tool call of this session."""
        ctx = ToolContext(
            session_id=self.session_id,
            workspace=self.workspace,
            message_id=message_id,
            call_id=call_id,
            store=self.store,
            sandbox=self.sandbox,
            read_paths=self.read_paths,
            services=self.services,
        )
        # Edits carry the call's id; a write that waits for a person says so in the call.
        ctx.workspace = self.workspace.for_call(call_id, ctx.send)
        in_review(self, ctx)  # in review mode, edits go to the session's proposal
        return ctx

    async def emit(self, event: Event) -> None:
        """Hand an event to every sink; a failing sink is logged, never fatal."""
        for sink in self.sinks:
            try:
                res = sink(event)
                if inspect.isawaitable(res):
                    await res
            except Exception:
                log.exception("event sink failed")

    async def run(
        self,
        request: str,
        *,
        context: str = "",
        user_message_id: str | None = None,
        attachments: list[dict[str, Any]] | None = None,
    ) -> AsyncIterator[Event]:
        """Run one request; yields every event (and hands each to the sinks). Attachments
        added with ``%think_attach`` go with it (stored on the user message)."""
        if self.store is None:
            await self.start()
        assert self.store is not None
        # No sandbox start here: it starts at its first need (a code tool, a cell, a job, an
        # app), so a chat that only talks holds no sandbox process.
        if self.gate is None:
            self._make_gate()
        await self.recover_subagents()
        props = await self.props()
        await self.refresh_endpoint()
        try:
            model = self._model_client(props)
        except NotConfigured as e:
            # Say what to do where the user is: the sidebar has the setup card.
            text = HOW_TO_CONFIGURE_CHAT if self.kind == "chat" else str(e)
            final: list[Event] = [ErrorEvent(text, code="not_configured"), StatusEvent("idle")]
            for ev in final:
                await self.emit(ev)
                yield ev
            return
        unlisted = [c.spec.name for c in self.mcp.unlisted() if c.state == "stopped"]
        if unlisted:
            # MCP servers never listed start now, so the model knows their tools (once).
            starting = StatusEvent("thinking", f"starting MCP servers: {', '.join(unlisted)}")
            await self.emit(starting)
            yield starting
            await self.mcp.discover()
        # Whether a person approved the workspace skills that changed (the catalog's trust).
        await self.skills.check_trust(self.store)
        await self.agents.check_trust(self.store)
        try:
            agent = self.make_agent(props, model=model)
        except UnknownAgentType as e:
            # Never another type instead: a chat chosen read-only must not get more tools.
            for ev in (ErrorEvent(str(e), code="agent_type"), StatusEvent("idle")):
                await self.emit(ev)
                yield ev
            return
        self.running_tools[""] = agent.tools
        agent.step_notes = functools.partial(news_for_step, self)
        text = self.skills.expand(request)[0]  # "/name ..." attaches that skill
        context = await before_request(self, props, user_message_id, context)  # review mode
        stopped = self.apps.take_stopped_news(self.session_id)  # a Stop ended its apps
        context = f"{stopped}\n{context}".strip() if stopped else context
        text = f"{text}\n\n<context>\n{context}\n</context>" if context else text
        attachments = [*self.pending_attachments, *(attachments or [])]
        self.pending_attachments = []
        answered = False
        ending = RunEnd(self.session_id, "failed")
        # The request's id is known before it is stored: its root task refers to it.
        message_id = user_message_id or new_id("m_")
        assert self.subagents is not None
        fresh = user_message_id is None  # a new message: no root task to look for
        await self.checkpoints.begin(self.session_id, message_id)
        async with (
            self.warmer.running(),
            self.subagents.request(self.session_id, request, message_id, fresh) as tracker,
        ):
            async for event in agent.run(
                self.session_id,
                text,
                self.make_context,
                user_message_id=message_id,
                attachments=attachments or None,
            ):
                tracker.see(event)  # its tasks end as it ends, its subagents stop with it
                if isinstance(event, ToolCall):
                    self.current_message_id = event.message_id
                elif isinstance(event, ErrorEvent) and self.kind == "chat":
                    said = chat_error(event.code, event.message)
                    if said != event.message:
                        await self.store.reword_error(self.session_id, event.message, said)
                        event = dataclasses.replace(event, message=said)
                answered = answered or isinstance(event, Chat)
                if isinstance(event, Chat):
                    ending = RunEnd(self.session_id, "complete", event.content)
                elif isinstance(event, ErrorEvent):
                    status = "stopped" if event.code == "step_limit" else "failed"
                    ending = RunEnd(self.session_id, status, error=event.message)
                await self.emit(event)
                yield event
        await self.checkpoints.end()
        # numpy & co, now that nothing waits on it, only if this turn (or an earlier one)
        # started the sandbox: a chat that never ran code never pays for the preload.
        self.box.preload_soon()
        await self.hooks.run_end(ending)
        if answered and self.config.auto_title:
            await self._title_later(agent, request)

    def make_agent(self, props: dict[str, Any], **overrides: Any) -> Agent:
        """The agent loop of this session (its model, tools, store, prompt, limits); a
        subagent replaces some of them (``store``, ``tools``, ``system``, ``step_role``...).
        The agent type ``props`` choose limits the tools and may name the model
        (``UnknownAgentType`` when it is not usable)."""
        kind = self.agents.of(props)
        model = overrides.pop("model", None) or self._model_client(props)
        tools = limited(overrides.pop("tools", self.tools), kind)
        store = overrides.pop("store", self.store)
        assert store is not None
        settings: dict[str, Any] = {
            **self.roles.agent_settings(props),
            "system": self.system_prompt(props),
            "max_steps": int(props.get("max_steps") or self.config.max_steps),
            "retry_delays": self.config.retry_delays,
            "compact_at": self.config.compact_at,
            "compact_keep": self.config.compact_keep,
            "summarize_outputs": self.config.summarize_outputs,
            "gate": self.gate,
            "before_step": step_hook(self.selftools, self),
            "hooks": self.hooks,
        }
        return Agent(model, tools, store, **self.agents.apply(kind, {**settings, **overrides}))

    async def _title_later(self, agent: Agent, request: str) -> None:
        """Name an untitled session with the fast model, in the background."""
        assert self.store is not None
        caller = agent.caller(self.session_id)
        self.titler.later(self.store, self.session_id, caller, request)
