"""Undo one agent action over REST.

    POST /api/think/sessions/{id}/actions/{action_id}/undo
        -> {"undo_id", "restored", "deleted", "conflicts"}

The files the action's tool call changed are reverted through the collaboration rooms, as
attributed edits a person with the file open sees live, by the three-way rule of
``think_kernel.checkpoints.undo``: a person's typing and the agent's later changes that do
not overlap stay; an overlapping change of a person stands and is reported. The undo is an
action-log row of its own (tool ``undo``), which can be undone the same way.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from think_kernel.checkpoints.undo import NotUndoable, undo_action
from think_kernel.safefs import SafeReader

from .base import ThinkHandler
from .rewind import DocumentFiles


class UndoActionHandler(ThinkHandler):
    """``POST``: undo the file changes of one action-log row of the session."""

    @authorized
    async def post(self, session_id: str, action_id: str) -> None:
        """Revert that call's changes alone; 404 for an unknown row, 409 for a row that
        changed no file or was undone already."""
        await self.session_or_404(session_id)
        documents = self.settings.get("think_documents")
        if documents is None:
            raise web.HTTPError(409, "files are restored through the collaboration rooms")
        root = self.settings.get("server_root_dir") or self.serverapp.root_dir
        files = DocumentFiles(documents, SafeReader(root), root)
        try:
            out = await undo_action(self.svc.store, files, session_id, action_id)
        except NotUndoable as e:
            raise web.HTTPError(e.status, str(e)) from None
        self.send(out)


def undo_routes(s: str, id_pattern: str) -> list[tuple[str, Any]]:
    """The route under a session's URL ``s`` (action ids match ``id_pattern``)."""
    return [(f"{s}/actions/(?P<action_id>{id_pattern})/undo", UndoActionHandler)]
