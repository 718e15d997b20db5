"""The kernel's side of a sandboxed run's hold: with a server that said no room
is open, the hold starts with an unanswered item under a lease the kernel makes; otherwise
(a room is open, or nothing is known) the kernel asks for a flush. The server's side is
tested end to end in test_files_e2e.py and tests/server/test_link.py."""

from __future__ import annotations

from typing import Any

from think_kernel.collab.linked import PrefixedLink
from think_kernel.collab.workspace import CollabWorkspace


class Recording:
    """A link stand-in that records what the workspace sends."""

    def __init__(self, rooms_open: bool | None) -> None:
        self.rooms_open = rooms_open
        self.pushed: list[dict[str, Any]] = []
        self.asked: list[tuple[str, dict[str, Any]]] = []

    def push(self, item: dict[str, Any]) -> None:
        self.pushed.append(item)

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append((method, params))
        return {"saved": [], "lease": "from-server", "merged": []}


async def test_a_hold_asks_for_a_flush_only_when_a_room_may_be_open(tmp_path):
    for known, hold in ((False, 40.0), (True, 40.0), (None, 40.0), (False, 0.0)):
        inner = Recording(known)
        link = PrefixedLink(inner, "sub")
        assert link.rooms_open is known
        ws = CollabWorkspace(tmp_path, link)
        lease = await ws.flush_rooms(hold)
        if known is False and hold:
            assert inner.asked == []
            assert lease is not None and lease.startswith("k") and len(lease) == 33
            assert inner.pushed == [
                {"kind": "doc.hold", "lease": lease, "path": "sub/.", "hold": hold}
            ]
        else:
            assert inner.asked == [("doc.flush", {"path": "sub/.", "hold": hold})]
            assert lease == "from-server" and inner.pushed == []
        # A run that changed nothing gives the lease back unanswered, either way.
        assert await ws.sync_rooms([], lease) == []
        assert inner.pushed[-1] == {"kind": "doc.release", "lease": lease}


async def test_a_link_without_news_of_rooms_always_flushes(tmp_path):
    class Plain:
        def __init__(self) -> None:
            self.asked: list[str] = []

        async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
            self.asked.append(method)
            return {"lease": "L", "merged": []}

    plain = Plain()
    ws = CollabWorkspace(tmp_path, PrefixedLink(plain, ""))
    assert await ws.flush_rooms(40) == "L"
    assert await ws.sync_rooms([], "L") == []
    assert plain.asked == ["doc.flush", "doc.sync"]  # no push: the release is a request
