"""Live apps on the server: what each session's kernel says of its apps, the tabs' ``apps``
frame, ``GET .../apps`` and ``POST .../apps`` (``{"action": "stop"|"restart", "name"?}``: a
person's Stop, Stop all, Restart).

    watch = AppsWatch(hub); links.item_listeners.append(watch.on_item)
    watch.socket_of("s_1", "site")      # the app's private socket, for the proxy
    await watch.changed("s_1", lambda rows: ...)   # until the kernel's next record says so

A kernel sends each change of its apps as an ``apps`` link item (``think_kernel/apps``) and
keeps them in the store (``apps.<session id>``). The rows carry each app's socket path,
which stays on the server: the tabs and the REST API never see it. Stop and restart go to
the session's kernel as an ``apps`` link frame. The controls sit on the list's own path, not
below an app's (``.../apps/{name}/...`` is the app's own path space, all of it proxied: an
app's own ``POST /stop`` reaches the app).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from think_kernel.apps import setting_key
from think_kernel.apps.app import NAME
from think_kernel.schedules.scheduler import Firing, pid_alive
from think_kernel.waits import wait_for
from think_kernel.wire.link import AppsFrame

from .appproxy import AppClients, open_path
from .base import ThinkHandler, field

if TYPE_CHECKING:
    from .hub import Hub
    from .link import KernelInfo
    from .services import Services

#: How long a stop or a restart asked of the kernel may take to show in its record (s).
ANSWER_TIMEOUT = 60.0
ALIVE = ("starting", "running")


def public(row: dict[str, Any], session_id: str = "", secret: bytes = b"") -> dict[str, Any]:
    """An app's row as the tabs and the REST API see it: no socket path; with the server's
    cookie secret, ``open_url``, the capability path a browser opens it at."""
    out = {k: v for k, v in row.items() if k != "socket"}
    name = str(row.get("name") or "")
    if secret and session_id and name:
        out["open_url"] = open_path(secret, session_id, name)
    return out


class AppsWatch:
    """What each session's kernel last said of its apps."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self._rows: dict[str, list[dict[str, Any]]] = {}  # session -> its apps' rows
        self._kernels: dict[str, str] = {}  # session -> the kernel that told of them
        self._changed: dict[str, asyncio.Event] = {}
        #: The proxy's HTTP clients, one per app socket.
        self.clients = AppClients()
        #: The server's cookie secret: the key of each app's capability path.
        self.secret = b""

    def on_item(self, info: KernelInfo, item: dict[str, Any]) -> None:
        """An ``apps`` item: keep the rows, send them (without sockets) to the tabs."""
        if item.get("kind") != "apps":
            return
        sid = str(item.get("session_id") or "")
        record = item.get("record")
        rows = record.get("apps") if isinstance(record, dict) else None
        if not sid or not isinstance(rows, list):
            return
        self._rows[sid] = [r for r in rows if isinstance(r, dict)]
        self._kernels[sid] = info.kernel_id
        alive = {str(r.get("socket")) for rs in self._rows.values() for r in rs
                 if r.get("state") in ALIVE}  # fmt: skip
        self.clients.forget(alive)
        event = self._changed.pop(sid, None)
        if event is not None:
            event.set()
        self.hub.publish(sid, {"type": "apps", "session_id": sid,
                               "apps": [public(r, sid, self.secret)
                                        for r in self._rows[sid]]})  # fmt: skip

    def busy(self, session_id: str) -> bool:
        """Whether an app of the session runs (its kernel must not be culled)."""
        return any(r.get("state") in ALIVE for r in self._rows.get(session_id, []))

    def kernel_of(self, session_id: str) -> str | None:
        """The kernel that last told of the session's apps."""
        return self._kernels.get(session_id)

    def row(self, session_id: str, name: str) -> dict[str, Any] | None:
        """The app's last row (its socket included), if a kernel told of it."""
        return next((r for r in self._rows.get(session_id, []) if r.get("name") == name), None)

    def rows(self, session_id: str) -> list[dict[str, Any]]:
        """The session's apps' last rows (sockets included)."""
        return list(self._rows.get(session_id, []))

    def remember(self, session_id: str, rows: list[dict[str, Any]]) -> None:
        """Rows read from the store (a server that started after the kernel told of them)."""
        self._rows.setdefault(session_id, rows)

    async def changed(
        self, session_id: str, done: Callable[[dict[str, Any] | None], bool], name: str
    ) -> dict[str, Any] | None:
        """Wait until the app's row satisfies ``done`` (TimeoutError past ANSWER_TIMEOUT)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ANSWER_TIMEOUT
        while not done(self.row(session_id, name)):
            event = self._changed.setdefault(session_id, asyncio.Event())
            await wait_for(event.wait(), max(0.0, deadline - loop.time()))
        return self.row(session_id, name)


def crash_text(row: dict[str, Any]) -> str:
    """What the chat (and the model) read when an app crashed."""
    name = str(row.get("name", ""))
    code = row.get("exit_code")
    how = f"exit code {code}" if code is not None else str(row.get("error") or "it ended")
    tail = str(row.get("log_tail") or "").strip() or "(no output)"
    return (f"The live app {name!r} crashed ({how}). Its last output:\n{tail}\n\n"
            f"app_logs({name!r}) shows more; serve_app starts it again.")  # fmt: skip


class AppCrashFiring:
    """The ``app_crash`` handler of the server's scheduler: the crash, once, in its chat."""

    def __init__(self, services: Services) -> None:
        self.svc = services

    async def fire(self, payload: dict[str, Any], firing: Firing) -> dict[str, Any]:
        """Post the crash into its session (a message that starts a run)."""
        sid = firing.session_id or ""
        if await self.svc.store.get_session(sid) is None:
            return {"skipped": "the session no longer exists"}
        key = "m_app_" + hashlib.sha256(firing.key.encode()).hexdigest()[:24]
        message, run = await self.svc.chats.send(sid, crash_text(payload), message_id=key)
        return {"message_id": message["id"], "run_id": run["id"]}


class _AppsHandler(ThinkHandler):
    """What the apps routes share: the session's rows, and the way to its kernel."""

    async def rows(self, session_id: str) -> list[dict[str, Any]]:
        """The session's apps (with sockets); those of a dead kernel are stopped."""
        watch = self.svc.apps
        if watch.kernel_of(session_id) is None:
            saved = await self.svc.store.get_setting(setting_key(session_id))
            rows = saved.get("apps") if isinstance(saved, dict) else None
            if isinstance(rows, list):
                pid = saved.get("pid")
                gone = isinstance(pid, int) and pid != os.getpid() and not pid_alive(pid)
                why = "its kernel stopped"
                kept = [{**r, "state": "stopped", "error": why}
                        if gone and r.get("state") in ALIVE else r
                        for r in rows if isinstance(r, dict)]  # fmt: skip
                watch.remember(session_id, kept)
        return watch.rows(session_id)

    async def ask_kernel(self, session_id: str, name: str, action: str) -> None:
        """Send ``action`` for the app to the session's kernel (409 when none runs it)."""
        kernel = self.svc.apps.kernel_of(session_id) or self.svc.chats.pool.kernels.get(session_id)
        if kernel is None or not await self.svc.chats.kernel_alive(kernel):
            raise web.HTTPError(409, "no kernel runs this session now, so none of its apps runs")
        self.svc.links.send(kernel, AppsFrame(session_id=session_id, name=name, action=action))


class AppsHandler(_AppsHandler):
    """``GET``: a session's live apps. ``POST {"action", "name"?}``: a person's Stop or
    Restart of one of them, or Stop of every one that runs (no ``name``)."""

    @authorized
    async def get(self, session_id: str) -> None:
        """Its apps, oldest first: name, url, state, command, exit code, last lines."""
        await self.session_or_404(session_id)
        secret = self.settings.get("cookie_secret") or b""
        self.send({"apps": [public(r, session_id, secret) for r in await self.rows(session_id)]})

    @authorized
    async def post(self, session_id: str) -> None:
        """``stop``: answered once the kernel stopped them, ``{"stopped": [names], "apps":
        [rows]}``; ``restart`` (a name): its row once it runs, or failed. 409 without a
        kernel."""
        await self.session_or_404(session_id)
        body = self.body()
        action = field(body, "action", str, required=True)
        name = field(body, "name", str) or ""
        if action not in ("stop", "restart"):
            raise web.HTTPError(400, "action is 'stop' or 'restart'")
        if name and not NAME.match(name):
            raise web.HTTPError(400, f"{name!r} is not an app's name")
        rows = await self.rows(session_id)
        row = next((r for r in rows if r.get("name") == name), None)
        if name and row is None:
            raise web.HTTPError(404, f"no app {name!r} in this session")
        if action == "restart":
            if row is None:
                raise web.HTTPError(400, "restart needs the app's name")
            await self._restart(session_id, row)
            return
        names = [str(r.get("name")) for r in ([row] if row is not None else rows)
                 if r.get("state") in ALIVE]  # fmt: skip
        await self._stop(session_id, names)

    async def _stop(self, session_id: str, names: list[str]) -> None:
        """Ask the kernel to stop the apps, and answer once their rows say so."""
        for name in names:
            await self.ask_kernel(session_id, name, "stop")

        def ended(r: dict[str, Any] | None) -> bool:
            return r is None or r.get("state") not in ALIVE

        try:
            await asyncio.gather(*(self.svc.apps.changed(session_id, ended, n) for n in names))
        except TimeoutError:
            raise web.HTTPError(504, "the kernel did not stop the apps in time") from None
        secret = self.settings.get("cookie_secret") or b""
        apps = [public(r, session_id, secret) for r in self.svc.apps.rows(session_id)]
        self.send({"stopped": names, "apps": apps})

    async def _restart(self, session_id: str, row: dict[str, Any]) -> None:
        """Ask the kernel to restart the app; answer with its row once it runs (or failed)."""
        name = str(row.get("name"))
        before = float(row.get("started_at") or 0)
        await self.ask_kernel(session_id, name, "restart")

        def restarted(r: dict[str, Any] | None) -> bool:
            return (r is not None and float(r.get("started_at") or 0) > before
                    and r.get("state") != "starting")  # fmt: skip

        try:
            new = await self.svc.apps.changed(session_id, restarted, name)
        except TimeoutError:
            raise web.HTTPError(504, "the kernel did not restart the app in time") from None
        self.send(public(new or {}, session_id, self.settings.get("cookie_secret") or b""))


def app_routes(s: str) -> list[tuple[str, type[ThinkHandler]]]:
    """The REST routes under the session prefix ``s`` (every path below ``.../apps/{name}``
    is the app's, :func:`~.appproxy.proxy_routes`)."""
    return [(f"{s}/apps", AppsHandler)]
