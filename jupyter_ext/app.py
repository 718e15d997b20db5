"""``ThinkExtension``: the server side of Think for Jupyter.

Builds every collaborator once (store, hub, event pipeline, kernel links, chat sessions,
scheduler, recovery) and hands them to the handlers through ``initialize()``. Other server
code extends the kernel link with RPC methods:

    ext = serverapp.extension_manager.extension_apps["jupyter_ext"]  # a set; or keep a ref
    ext.register_rpc("doc.edit", handler)   # async handler(kernel_info, params) -> dict
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
from pathlib import Path
from typing import Any

from jupyter_server.extension.application import ExtensionApp
from traitlets import Bool, Float, Int, List, Unicode, observe

from think_kernel.apps import APP_CRASH
from think_kernel.kernel.host import SESSIONS_ENV
from think_kernel.schedules import ScheduleConfig
from think_kernel.store import Store, location, new_id

from . import identity, kernelidentity
from .agents import agent_routes
from .appproxy import AppProxy, proxy_routes
from .apps import AppCrashFiring, AppsWatch, app_routes
from .collab import wiring
from .completion import Completer, completion_routes
from .handlers import routes
from .hub import Hub
from .jobs import JOB_END, JobEndFiring, JobsWatch
from .kernelnames import COMPLETION_NAMES_INTERVAL, KernelNames
from .link import KernelLinks, LinkHandler, RpcHandler
from .mcp import DEFAULT_TOOLS, SERVABLE, KernelCalls, McpEndpoint, McpHandler
from .memory import memory_routes
from .modelsetup import model_routes
from .pipeline import EventPipeline
from .proposals import ProposalWatch
from .questions import question_routes
from .reminders import NotificationsSocket, Notifier, ReminderFiring, wake_rpc
from .rewind import finish_rewinds
from .runs import ChatSessions, Recovery, RetryPolicy
from .runs.budget import MemoryBudget, derived_limit_mb
from .runs.earlykernel import (
    DEFAULT_POOL_SIZE,
    keep_preloaded,
    preload_first_kernel,
    start_early_spare,
)
from .scheduler import Scheduler
from .search import search_routes
from .services import Limits, Services, Startup
from .subagents import KIND as SUBAGENT_CHECK
from .subagents import SubagentChecks
from .variables import VariableInspector, register_variable_rpc, variables_routes
from .websocket import SessionSocket

__all__ = ["ThinkExtension", "preload_first_kernel"]

log = logging.getLogger(__name__)


class ThinkExtension(ExtensionApp):
    """Durable chat sessions routed to think kernels, over REST and WebSocket."""

    name = "jupyter_ext"
    load_other_extensions = True

    store_path = Unicode(
        "",
        config=True,
        help="SQLite file of the store (a path); blobs and history go next to it. Default: "
        "<jupyter data dir>/think/<root folder name>-<hash of root_dir>/think.db, outside the "
        "workspace (sandboxed code can write the workspace).",
    )
    retention_days = Float(
        0.0,
        config=True,
        help="Days to keep events and action-log rows (messages are kept). 0 keeps all. "
        "Default: 0.",
    )
    max_body_size = Int(
        1_048_576, config=True, help="Largest accepted request body, in bytes. Default: 1 MiB."
    )
    max_ws_frame = Int(
        65_536,
        config=True,
        help="Largest accepted WebSocket frame from a browser, in bytes. Default: 64 KiB.",
    )
    history_limit = Int(
        50, config=True, help="Messages sent in the WebSocket 'history' frame. Default: 50."
    )
    blob_threshold = Int(
        50_000,
        config=True,
        help="Message content over this many bytes goes to the blob folder. Default: 50000.",
    )
    heartbeat_interval = Float(
        5.0,
        config=True,
        help="Seconds between heartbeats of running requests (and recovery passes). Default: 5.",
    )
    stale_timeout = Float(
        30.0,
        config=True,
        help="Seconds without a heartbeat (or kernel link) before a running request is "
        "treated as interrupted and retried or failed. Default: 30.",
    )
    retry_delays = List(
        Float(),
        default_value=[2.0, 4.0, 8.0],
        config=True,
        help="Seconds to wait before each retry of an interrupted request; its length is the "
        "number of retries. Default: [2, 4, 8].",
    )
    kernel_name = Unicode(
        "think", config=True, help="Kernel spec started for chat sessions. Default: think."
    )
    kernel_start_timeout = Float(
        60.0,
        config=True,
        help="Seconds to wait for a new kernel's link before the request is retried. Default: 60.",
    )
    kernel_pool_size = Int(
        DEFAULT_POOL_SIZE,
        config=True,
        help="Think kernels kept started ahead of need, so a new chat answers at once; each "
        "costs the memory of an idle kernel (about 100 MB) and holds no session, sandbox or "
        "uid until a chat takes it. 0 starts a kernel per new chat on demand. Default: 1.",
    )
    hibernate_after = Float(
        300.0,
        config=True,
        help="Seconds a chat may stay idle (no run, so no pending approval) before it "
        "hibernates: it gives back its kernel and sandbox, keeps everything in the store, "
        "and wakes on a spare kernel at its next message (its Python worker restarted, "
        "which the chat and the model are told). Spares of the pool are not counted. "
        "0 never hibernates. Default: 300 (5 minutes).",
    )
    sessions_per_kernel = Int(
        10,
        config=True,
        help="Sidebar chats one think kernel may serve at once, each with its own runtime, "
        "sandbox (uid and limits), runs and store rows. Above 1, a new or waking chat joins "
        "a kernel with room instead of taking a spare (no kernel start, no process added), "
        "and an idle chat hibernates alone. Think notebooks keep a kernel each. 1 gives "
        "each chat a kernel of its own. Default: 10.",
    )
    memory_budget_mb = Float(
        0.0,
        config=True,
        help="MB of memory (PSS) the server and every process under it (chat kernels, "
        "sandboxes) may take. Past it, no spare kernel starts and idle chats hibernate, "
        "least recently used first, until the tree is under it again. 0 takes 80% of the "
        "memory cgroup's limit when the server runs under one, else no budget; a negative "
        "value sets none. Default: 0.",
    )
    kernel_idle_timeout = Float(
        300.0,
        config=True,
        help="The former name of hibernate_after (setting it sets that). Default: 300.",
    )

    @observe("kernel_idle_timeout")
    def _idle_timeout_is_hibernate_after(self, change: Any) -> None:
        self.hibernate_after = change["new"]

    completion_timeout = Float(
        4.0,
        config=True,
        help="Seconds an inline completion may wait on the fast model before the ghost text "
        "is given up (the person types on meanwhile). Default: 4.",
    )
    completion_max_tokens = Int(
        96,
        config=True,
        help="Most tokens the fast model may write for one inline completion. Default: 96.",
    )
    cancel_timeout = Float(
        1.0,
        config=True,
        help="Seconds to wait for the kernel to confirm a cancel before the request is "
        "marked cancelled anyway. Default: 1.",
    )
    link_hello_timeout = Float(
        3.0,
        config=True,
        help="Seconds a kernel-link connection may take to authenticate before it is closed. "
        "Default: 3.",
    )
    max_pending_links = Int(
        64,
        config=True,
        help="Kernel-link connections allowed at once before they authenticate; more are "
        "refused with 429. Default: 64.",
    )
    scheduler_poll = Float(
        5.0,
        config=True,
        help="Longest sleep of the scheduler between looks at the schedules table, in "
        "seconds. Default: 5.",
    )
    schedule_lease = Float(
        30.0,
        config=True,
        help="Seconds a claim on a due schedule lasts without renewal (renewed every third of "
        "it while the work runs); a claim of a server that died is taken over when it ends, "
        "or at once when its process is gone. Default: 30.",
    )
    schedule_max_attempts = Int(
        5,
        config=True,
        help="Attempts at one firing of a schedule (a reminder, a run retry) before it is "
        "marked failed. Default: 5.",
    )
    schedule_backoff = List(
        Float(),
        default_value=[2.0, 300.0],
        config=True,
        help="Backoff between attempts of a failed firing, in seconds: [first delay, longest "
        "delay]; each retry waits twice the one before. Default: [2, 300].",
    )

    mcp_endpoint = Bool(
        True,
        config=True,
        help="Serve Think's tools to other agents (Claude Code, Codex, ...) over MCP at "
        "/api/think/mcp (streamable HTTP, the server's token or cookie). Default: True.",
    )
    mcp_tools = List(
        Unicode(),
        default_value=list(DEFAULT_TOOLS),
        config=True,
        help="Tools the MCP endpoint serves, among "
        + ", ".join(SERVABLE)
        + ". Each call runs in the client's session with the approval policy. Default: all "
        "but execute_cell (it runs code in the notebook's kernel, outside the sandbox).",
    )
    mcp_session_idle_timeout = Float(
        1800.0,
        config=True,
        help="Seconds an MCP session of the endpoint may stay idle before it is closed (the "
        "client then starts another; its Think session stays). 0 never closes. Default: 1800.",
    )

    def initialize_settings(self) -> None:
        """Build the collaborators (the store opens when the server's loop runs)."""
        self.owner = new_id("srv_")
        self.startup = Startup(self.ensure_started)
        # What kernels and tabs may reach before the store opens: a kernel of the pool
        # connects while the server loads (its frames wait in the pipeline's queue).
        self.hub = Hub()
        self.notifier = Notifier()
        self.pipeline = EventPipeline(self.hub)
        km = self.serverapp.kernel_manager  # type: ignore[union-attr]
        self.links = KernelLinks(
            km,
            self.pipeline,
            self.resolved_store_path(),
            self._session_of,
            root_dir=os.path.abspath(os.path.expanduser(self.serverapp.root_dir))
            if self.serverapp is not None
            else "",
            hello_timeout=self.link_hello_timeout,
            max_pending=self.max_pending_links,
        )
        self._tasks: list[asyncio.Task[Any]] = []
        self._starting: asyncio.Future[None] | None = None
        # Set as soon as the services exist, to close them even if the start fails later.
        self._stoppable: Services | None = None
        unknown = [t for t in self.mcp_tools if t not in SERVABLE]
        if unknown:
            self.log.warning("Think: mcp_tools names tools it cannot serve: %s", unknown)
        self.mcp: McpEndpoint | None = None
        if self.mcp_endpoint:
            self.mcp = McpEndpoint(
                self.startup,
                list(self.mcp_tools),
                max_body=self.max_body_size,
                idle_timeout=self.mcp_session_idle_timeout,
            )
        self._register_documents()
        # The variables of notebooks' kernels (inspect_variables, the sidebar's @name chips).
        self.variables = VariableInspector(self.serverapp)
        register_variable_rpc(self, self.variables)
        self._check_contents_manager()
        # A kernel stored a schedule (a reminder) in the shared store: look now, not at the
        # next poll.
        startup = self.startup
        self.register_rpc("schedules.wake", lambda info, params: wake_rpc(startup, info, params))
        self._early_spare = self._start_early_spare()
        # A click on a cell's approval card names the person the server authenticated.
        if not kernelidentity.install(self.settings):
            self.log.warning("Think: a custom kernel WebSocket class; cell cards name no one")

    def _register_documents(self) -> None:
        # The agent's file and notebook edits go through the collaboration rooms, served to
        # kernels as doc.* RPC methods (jupyter_ext/collab/documents.py).
        try:
            from .collab.docrpc import register_document_rpcs
        except ImportError as e:  # jupyter-collaboration missing: files fall back to disk
            self.log.warning("Think: document RPCs unavailable (%s)", e)
            return
        register_document_rpcs(self)

    def initialize_handlers(self) -> None:
        """Register the REST, WebSocket and link routes."""
        kw = {"name": self.name, "startup": self.startup}
        self.handlers.extend((pattern, cls, kw) for pattern, cls in routes())
        self.handlers.extend((pattern, cls, kw) for pattern, cls in model_routes())
        self.handlers.extend((pattern, cls, kw) for pattern, cls in question_routes())
        self.handlers.extend((pattern, cls, kw) for pattern, cls in agent_routes())
        self.handlers.extend((pattern, cls, kw) for pattern, cls in search_routes())
        self.handlers.extend((pattern, cls, kw) for pattern, cls in memory_routes())
        inspecting = {**kw, "inspector": self.variables}
        self.handlers.extend((pattern, cls, inspecting) for pattern, cls in variables_routes())
        self.completer = Completer(
            timeout=self.completion_timeout,
            max_tokens=self.completion_max_tokens,
            names=KernelNames(self.variables, min_interval=COMPLETION_NAMES_INTERVAL),
        )
        completing = {**kw, "completer": self.completer}
        self.handlers.extend((pattern, cls, completing) for pattern, cls in completion_routes())
        self.handlers.append(
            (r"/api/think/sessions/(?P<session_id>[A-Za-z0-9_.\-]{1,128})/ws", SessionSocket, kw)
        )
        self.handlers.append((r"/api/think/notifications", NotificationsSocket, kw))
        session = r"/api/think/sessions/(?P<session_id>[A-Za-z0-9_.\-]{1,128})"
        self.handlers.extend((pattern, cls, kw) for pattern, cls in app_routes(session))
        # The list, Stop and Restart at .../apps; every path below .../apps/NAME is the app's.
        self.handlers.extend((pattern, AppProxy, kw) for pattern in proxy_routes(session))
        self.handlers.append((r"/api/think/link", LinkHandler, {"links": self.links}))
        if self.mcp is not None:
            self.handlers.append((r"/api/think/mcp", McpHandler, {**kw, "endpoint": self.mcp}))

    def resolved_store_path(self) -> str:
        """The store file in use (its folder is created, and a legacy ``.think/`` moved in)."""
        return str(location.store_file(self._root(), self.store_path))

    def store_dir(self) -> Path:
        """The folder of the store: think.db, blobs, the agent's edit history."""
        return location.store_dir(self._root(), self.store_path)

    def _root(self) -> str:
        root = self.serverapp.root_dir if self.serverapp else os.getcwd()  # type: ignore[union-attr]
        return os.path.abspath(os.path.expanduser(root))

    def _link_jupyter_server_extension(self, serverapp: Any) -> None:
        """Install the link-safe contents manager and the identity provider (unless others
        are configured) and keep jupyter-collaboration's files out of the workspace
        (:mod:`.collab.wiring`, :mod:`.identity`)."""
        super()._link_jupyter_server_extension(serverapp)
        keep_preloaded(serverapp, self.kernel_pool_size)
        wiring.install(serverapp, self.store_dir(), self._root())
        # A browser keeps its name and initials when the server comes back on another port.
        identity.install(serverapp)

    def _check_contents_manager(self) -> None:
        """Warn when saves may follow links planted by sandboxed code."""
        assert self.serverapp is not None
        wiring.check(self.serverapp, self.store_dir(), self.log)

    def register_rpc(self, name: str, handler: RpcHandler) -> None:
        """Serve ``await link.request(name, params)`` from kernels: ``handler(info, params)``."""
        self.links.register_rpc(name, handler)

    def server_url(self) -> str:
        """The URL kernels use to reach this server (no token in it)."""
        app = self.serverapp
        assert app is not None
        ip = app.ip if app.ip not in ("", "0.0.0.0", "localhost", "*") else "127.0.0.1"
        if ip == "::":
            ip = "::1"
        host = f"[{ip}]" if ":" in ip else ip
        scheme = "https" if app.certfile else "http"
        return f"{scheme}://{host}:{app.port}{app.base_url}"

    @property
    def services(self) -> Services:
        """The collaborators of the started extension (``StartFailed`` before)."""
        return self.startup.services

    def _session_of(self, kernel_id: str) -> str | None:
        startup = self.startup
        if not startup.ready.is_set() or startup.error is not None:
            return None  # not started: no kernel has a session yet
        return startup.services.chats.session_of(kernel_id)

    def _start_early_spare(self) -> tuple[str, dict[str, str]] | None:
        """Start the pool's first spare kernel while the server still loads
        (:mod:`.runs.earlykernel`). Returns (kernel id, the environment it got)."""
        app = self.serverapp
        return start_early_spare(app, self.kernel_pool_size, self.kernel_name, self._kernel_env)

    def _kernel_env(self) -> dict[str, str]:
        # Only where to find the server: never a credential, and no session (a kernel of the
        # pool learns its session from its first chat frame). The kernel authenticates with
        # its own connection key (see link.py).
        env = {
            "THINK_SERVER_URL": self.server_url(),
            "THINK_STORE_PATH": self.resolved_store_path(),
            "THINK_CHAT_KERNEL": "1",
        }
        if self.sessions_per_kernel > 1:  # the kernel hosts several chats
            env[SESSIONS_ENV] = str(self.sessions_per_kernel)
        return env

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        """Open the store, then start the pipeline, scheduler and recovery loops."""
        _stop_cleanly_on_sigint(serverapp, self.log)
        await self.ensure_started()

    async def ensure_started(self) -> None:
        """Start once: on the server's start hook, or on the first request if a host (such
        as pytest-jupyter) never calls that hook."""
        if self._starting is None:
            self._starting = asyncio.ensure_future(self._start())
        await asyncio.shield(self._starting)

    async def _start(self) -> None:
        serverapp = self.serverapp
        assert serverapp is not None
        try:
            store = await Store.open(self.resolved_store_path(), blob_threshold=self.blob_threshold)
        except Exception as e:
            self.log.error("Think store %s failed to open: %s", self.resolved_store_path(), e)
            self.startup.fail(e)
            return
        base, cap = (list(self.schedule_backoff) + [2.0, 300.0])[:2]
        scheduler = Scheduler(
            store,
            poll=self.scheduler_poll,
            owner=self.owner,
            lease=self.schedule_lease,
            max_attempts=self.schedule_max_attempts,
            backoff_base=base,
            backoff_cap=cap,
        )
        chats = ChatSessions(
            store,
            serverapp.kernel_manager,
            self.links,
            self.pipeline,
            self.hub,
            owner=self.owner,
            policy=RetryPolicy(list(self.retry_delays)),
            kernel_name=self.kernel_name,
            kernel_env=self._kernel_env,
            start_timeout=self.kernel_start_timeout,
            cancel_timeout=self.cancel_timeout,
            pool_size=self.kernel_pool_size,
            idle_timeout=self.hibernate_after,
            session_manager=getattr(serverapp, "session_manager", None),
            sessions_per_kernel=self.sessions_per_kernel,
            budget=MemoryBudget(
                self.memory_budget_mb if self.memory_budget_mb else derived_limit_mb()
            ),
        )
        chats.wake_scheduler = scheduler.wake
        jobs_watch = JobsWatch(self.hub)
        self.links.item_listeners.append(jobs_watch.on_item)
        # Review mode: the tabs refetch the proposal when the agent changes it.
        self.links.item_listeners.append(ProposalWatch(self.hub, store).on_item)
        apps_watch = AppsWatch(self.hub)
        if self.serverapp is not None:  # the key of the apps' capability paths
            apps_watch.secret = self.serverapp.cookie_secret
        self.links.item_listeners.append(apps_watch.on_item)
        # A chat whose jobs or apps run is in use: hibernating would end them with its kernel.
        in_use = chats.pool.busy
        chats.pool.busy = lambda sid: in_use(sid) or jobs_watch.busy(sid) or apps_watch.busy(sid)
        svc = Services(
            limits=Limits(self.max_body_size, self.max_ws_frame, self.history_limit),
            store=store,
            hub=self.hub,
            pipeline=self.pipeline,
            links=self.links,
            chats=chats,
            scheduler=scheduler,
            notifier=self.notifier,
            mcp_calls=KernelCalls(
                store, chats, self.links, start_timeout=self.kernel_start_timeout
            ),
            jobs=jobs_watch,
            apps=apps_watch,
        )
        self._stoppable = svc
        early, self._early_spare = self._early_spare, None
        if early is not None:
            if early[1] == self._kernel_env():
                chats.pool.adopt(early[0])
            else:  # the server's URL changed (port taken): that kernel cannot find us
                self.log.info("Think: the early spare kernel had another URL; replacing it")
                with contextlib.suppress(Exception):
                    await serverapp.kernel_manager.shutdown_kernel(early[0], now=True)
        if self.mcp is not None:
            self.mcp.start()
        scheduler.register("run_retry", self._retry)
        checks = SubagentChecks(store, self.pipeline, wake=scheduler.wake)
        scheduler.register(SUBAGENT_CHECK, checks)
        reminder_gate = ScheduleConfig(parent=self)  # c.ScheduleConfig, as kernels read it
        scheduler.register("reminder", ReminderFiring(svc, reminder_gate).fire)
        scheduler.register(JOB_END, JobEndFiring(svc).fire)
        scheduler.register(APP_CRASH, AppCrashFiring(svc).fire)
        recovery = Recovery(
            store,
            chats,
            self.links,
            self.hub,
            interval=self.heartbeat_interval,
            stale_timeout=self.stale_timeout,
            retention=self.retention_days * 86400,
        )
        for coro in (self.pipeline.run(store), scheduler.run(), recovery.run()):
            self._tasks.append(asyncio.create_task(coro))
        chats.pool.start()
        # A rewind a crash cut short is finished from its stored plan.
        root = self.settings.get("server_root_dir") or serverapp.root_dir
        self._tasks.append(
            asyncio.create_task(finish_rewinds(store, self.settings.get("think_documents"), root))
        )
        self.startup.finish(svc)
        self.log.info("Think store: %s", self.resolved_store_path())

    async def _retry(self, payload: dict[str, Any]) -> None:
        run_id = payload.get("run_id")
        if isinstance(run_id, str):
            await self.services.chats.retry(run_id)

    async def stop_extension(self) -> None:
        """Stop the loops, close links and the store."""
        if self.mcp is not None:
            await self.mcp.close()
        await self.completer.aclose()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        svc = self._stoppable
        if svc is not None:
            await svc.chats.close()
            await svc.scheduler.close()
        await self.links.close()
        documents = self.settings.get("think_documents")
        if documents is not None and documents.files is not None:
            documents.files.close()
        if svc is not None:
            await svc.store.close()


def _stop_cleanly_on_sigint(serverapp: Any, log: logging.Logger) -> None:
    """Make SIGINT stop the server as SIGTERM does, when jupyter_server left it to Python."""
    # With a terminal, jupyter_server asks "Shut down?" on ^C. Without one (JupyterHub's
    # spawners, systemd, `kill -INT`) it leaves SIGINT to Python: a KeyboardInterrupt ends the
    # event loop with no cleanup, kernels are orphaned, and the store's SQLite thread then
    # keeps the process alive until SIGKILL (a hub stops a user's server with SIGINT first).
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return

    def stop(signum: int, frame: Any) -> None:
        log.info("SIGINT: stopping the server and shutting its kernels down")
        serverapp.stop(from_signal=True)

    signal.signal(signal.SIGINT, stop)
