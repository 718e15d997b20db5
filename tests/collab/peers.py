"""A stand-in JupyterLab tab: a real pycrdt document synced over the real room websocket."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx
from jupyter_ydoc import YNotebook, YUnicode
from pycrdt import (
    Assoc,
    Awareness,
    Provider,
    StickyIndex,
    Text,
    YMessageType,
    create_awareness_message,
    read_message,
)
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed


class WsChannel:
    """pycrdt ``Channel`` over a ``websockets`` connection."""

    def __init__(self, ws: ClientConnection, path: str, awareness: Awareness) -> None:
        self._ws = ws
        self._path = path
        self._awareness = awareness

    @property
    def path(self) -> str:
        return self._path

    def __aiter__(self) -> WsChannel:
        return self

    async def __anext__(self) -> bytes:
        try:
            return await self.recv()
        except ConnectionClosed:
            raise StopAsyncIteration() from None

    async def send(self, message: bytes) -> None:
        with contextlib.suppress(ConnectionClosed):
            await self._ws.send(message)

    async def recv(self) -> bytes:
        while True:
            msg = await self._ws.recv()
            msg = msg if isinstance(msg, bytes) else msg.encode()
            if msg and msg[0] == YMessageType.AWARENESS:
                # The provider only syncs the document; awareness is ours to read.
                self._awareness.apply_awareness_update(read_message(msg[1:]), "remote")
                continue
            return msg


class Peer:
    """One collaborator: ``await peer.connect()``, edit ``peer.doc``, ``await peer.close()``."""

    def __init__(self, base_url: str, path: str, name: str = "human", token: str = "") -> None:
        self.base_url = base_url
        self.path = path
        self.name = name
        self.token = token  # the server's token, when it has one
        self.notebook = path.endswith(".ipynb")
        self.doc: Any = YNotebook() if self.notebook else YUnicode()
        self.changed = asyncio.Event()
        self.origins: list[Any] = []
        self.doc.ydoc.observe(self._on_update)
        self.awareness = Awareness(self.doc.ydoc)
        self._ws: ClientConnection | None = None
        self._provider: Provider | None = None
        self._task: asyncio.Task[None] | None = None
        self.room = ""

    def _on_update(self, event: Any) -> None:
        self.changed.set()

    async def connect(self) -> None:
        """PUT the collaboration session, then join the room websocket and sync."""
        fmt, kind = ("json", "notebook") if self.notebook else ("text", "file")
        auth = {"Authorization": f"token {self.token}"} if self.token else {}
        async with httpx.AsyncClient(headers=auth) as http:
            r = await http.put(
                f"{self.base_url}api/collaboration/session/{self.path}",
                json={"format": fmt, "type": kind},
            )
            r.raise_for_status()
            data = r.json()
        self.room = f"{data['format']}:{data['type']}:{data['fileId']}"
        url = self.base_url.replace("http://", "ws://")
        url = f"{url}api/collaboration/room/{self.room}?sessionId={data['sessionId']}"
        if self.token:
            url += f"&token={self.token}"
        self._ws = await connect(url, max_size=None)
        self._provider = Provider(self.doc.ydoc, WsChannel(self._ws, self.room, self.awareness))
        self._task = asyncio.create_task(self._provider.start())
        await asyncio.wait_for(self._provider.synced.wait(), 10)

    async def close(self) -> None:
        """Drop the connection (the document is kept, as a tab that lost its network)."""
        if self._provider is not None:
            with contextlib.suppress(Exception):
                await self._provider.stop()
        if self._ws is not None:
            await self._ws.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        self._ws = self._provider = self._task = None

    # ----------------------------------------------------------------- views and typing

    def text(self) -> Text:
        """The shared text of a file peer."""
        return self.doc.ydoc.get("source", type=Text)

    def cell_text(self, cell_id: str) -> Text:
        """The shared source of one cell."""
        for c in self.doc.ycells:
            if c.get("id") == cell_id:
                return c["source"]
        raise KeyError(cell_id)

    def type_at(self, text: Text, char_index: int, s: str) -> None:
        """Type ``s`` at a character position (converted to pycrdt's UTF-8 byte index)."""
        cur = str(text)
        with self.doc.ydoc.transaction(origin=self.name):
            text.insert(len(cur[:char_index].encode()), s)

    async def move_cursor(self, text: Text, char_index: int) -> None:
        """Put this tab's cursor at a character of ``text`` and tell the room (Yjs awareness,
        JupyterLab's ``cursors`` field: relative positions that stick to the characters)."""
        index = len(str(text)[:char_index].encode())
        head = StickyIndex.new(text, index, Assoc.AFTER).to_json()
        state = {
            "user": {"name": self.name, "username": self.name},
            "cursors": [{"anchor": head, "head": head, "primary": True, "empty": True}],
        }
        self.awareness.set_local_state(state)
        update = self.awareness.encode_awareness_update([self.awareness.client_id])
        assert self._ws is not None
        await self._ws.send(create_awareness_message(update))

    def users(self) -> list[str]:
        """Names of the collaborators this tab sees in the room's awareness."""
        return [s["user"]["name"] for s in self.awareness.states.values() if s and "user" in s]


async def wait_change(peer: Peer, cond: Any, timeout: float = 10.0) -> None:
    """Wait, on the peer's update events, until ``cond()`` holds."""

    async def loop() -> None:
        while not cond():
            peer.changed.clear()
            if cond():
                return
            await peer.changed.wait()

    await asyncio.wait_for(loop(), timeout)
