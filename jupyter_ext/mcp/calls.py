"""Calls of MCP clients, run by the think kernel of each client's session.

    calls = KernelCalls(store, chats, links)
    output = await calls.call("claude-code", "insert_cell", {"path": ..., "source": ...})
    # {"text", "ok", "error", "display"}; CallFailed when no kernel could run it

Each client (``clientInfo.name``) gets one session of kind ``mcp``, titled with its name and
kept across connections (``mcp_clients``, migration m011): every call it makes is in that
session's history and action log, and its approvals show in that session. The session's
kernel comes from the chat-kernel pool, like a chat's; the call travels as a ``tool`` link
frame and comes back as a ``tool_result`` item, stored after the call's events. The kernel
dedups a resent frame; a kernel that restarts or dies mid-call fails the call (it may or may
not have run: the client decides whether to call again).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from think_kernel.store import new_id
from think_kernel.waits import wait_for
from think_kernel.wire.link import ToolCancelFrame, ToolFrame

if TYPE_CHECKING:
    from think_kernel.store import Store

    from ..link import KernelInfo, KernelLinks
    from ..runs import ChatSessions

log = logging.getLogger(__name__)
ALIVE_CHECK = 2.0  # seconds between checks that the kernel of a pending call still runs
MAX_CLIENT_NAME = 100


class CallFailed(Exception):
    """The call could not be run (no kernel, the kernel stopped); the message says why."""


@dataclass
class _Pending:
    future: asyncio.Future[dict[str, Any]]
    kernel_id: str
    epoch: str | None
    frame: ToolFrame


def client_title(name: str) -> str:
    """A client's name as a session title (printable, bounded)."""
    clean = "".join(ch for ch in name if ch.isprintable()).strip()
    return clean[:MAX_CLIENT_NAME] or "MCP client"


class KernelCalls:
    """Routes MCP calls to session kernels and waits for their results."""

    def __init__(
        self, store: Store, chats: ChatSessions, links: KernelLinks, start_timeout: float = 60.0
    ) -> None:
        self.store = store
        self.chats = chats
        self.links = links
        self.start_timeout = start_timeout
        self.pending: dict[str, _Pending] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        links.item_listeners.append(self._on_item)
        links.connect_listeners.append(self._on_connect)

    async def session_for(self, client: str) -> str:
        """The session of a client, created (kind ``mcp``, titled with its name) on first use
        or after the user deleted it."""
        name = client_title(client)
        lock = self._locks.setdefault(name, asyncio.Lock())
        async with lock:
            sid = await self.store.mcp_client_session(name)
            if sid is None:
                session = await self.store.create_session(title=name, kind="mcp")
                sid = str(session["id"])
                await self.store.bind_mcp_client(name, sid)
            return sid

    async def call(self, client: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run one call in the client's session kernel; its output (CallFailed if it cannot)."""
        sid = await self.session_for(client)
        with self.chats.hold(sid):
            try:
                kid = await self.chats.ensure_kernel(sid)
                await wait_for(self.links.wait(kid), self.start_timeout)
            except TimeoutError:
                raise CallFailed("the think kernel did not connect in time") from None
            except Exception as e:
                raise CallFailed(f"could not start a think kernel: {e}") from None
            cid = new_id("mcp_")
            frame = ToolFrame(
                call_id=cid,
                name=tool,
                arguments=arguments,
                session_id=sid,
                client=client_title(client),
            )
            fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            self.pending[cid] = _Pending(fut, kid, self.links.epochs.get(kid), frame)
            try:
                self.links.send(kid, frame)  # if the link is down, its reconnect resends it
                while True:
                    done, _ = await asyncio.wait({fut}, timeout=ALIVE_CHECK)
                    if done:
                        return fut.result()
                    if not await self.chats.kernel_alive(kid):
                        raise CallFailed("the think kernel stopped during the call")
            except asyncio.CancelledError:
                # The client cancelled (or went away): stop the call in the kernel too.
                self.links.send(kid, ToolCancelFrame(cid))
                raise
            finally:
                self.pending.pop(cid, None)

    def _on_item(self, info: KernelInfo, item: dict[str, Any]) -> None:
        if item.get("kind") != "tool_result":
            return
        pending = self.pending.get(str(item.get("call_id") or ""))
        if pending is None or pending.future.done():
            return
        output = item.get("output")
        pending.future.set_result(output if isinstance(output, dict) else {})

    def _on_connect(self, info: KernelInfo, new_process: bool) -> None:
        for pending in list(self.pending.values()):
            if pending.kernel_id != info.kernel_id or pending.future.done():
                continue
            if pending.epoch is not None and pending.epoch != info.epoch:
                pending.future.set_exception(
                    CallFailed("the think kernel restarted during the call; it may not have run")
                )
            else:
                pending.epoch = info.epoch
                self.links.send(info.kernel_id, pending.frame)  # dropped if it has it
