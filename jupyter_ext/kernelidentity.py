"""Kernel messages from a browser carry the person jupyter_server authenticated.

JupyterLab sends ``header.username`` empty (its kernel connections are made without one) and
jupyter_server passes the header through untouched, so a kernel cannot tell who clicked an
ipywidgets button. This connection class stamps every message a tab sends to a kernel with
the WebSocket's authenticated user: ``header.username`` is the identity's username and
``header.display_name`` its display name, whatever the client wrote there. The approval
card in a cell (think_kernel/approvals/widget.py) names its decider from them.

    install(extension.settings)   # in initialize_settings
"""

from __future__ import annotations

import json
from typing import Any

from jupyter_server.services.kernels.connection.base import (
    deserialize_binary_message,
    deserialize_msg_from_ws_v1,
    serialize_binary_message,
    serialize_msg_to_ws_v1,
)
from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection

V1 = "v1.kernel.websocket.jupyter.org"


def identity(user: Any) -> tuple[str, str]:
    """``(username, display name)`` of jupyter_server's user object (or a plain name)."""
    if isinstance(user, str):
        return user, user
    username = str(getattr(user, "username", "") or "")
    name = getattr(user, "display_name", "") or getattr(user, "name", "") or username
    return username, str(name)


def stamp_header(header: dict[str, Any], user: Any) -> dict[str, Any]:
    """The header with the authenticated person in place of what the client claimed."""
    username, name = identity(user)
    return {**header, "username": username[:200], "display_name": name[:200]}


class IdentityStampingConnection(ZMQChannelsWebsocketConnection):
    """jupyter_server's kernel WebSocket connection, stamping the sender's identity."""

    def handle_incoming_message(self, incoming_msg: Any) -> None:
        """Stamp the header, then forward as jupyter_server does; a frame that does not
        parse goes on unchanged (jupyter_server reports it as before)."""
        try:
            incoming_msg = self._stamped(incoming_msg)
        except Exception:  # malformed frames are jupyter_server's to refuse
            self.log.debug("Think: kernel frame not stamped", exc_info=True)
        super().handle_incoming_message(incoming_msg)

    def _stamped(self, ws_msg: Any) -> Any:
        user = self.websocket_handler.current_user
        if self.subprotocol == V1:
            channel, parts = deserialize_msg_from_ws_v1(ws_msg)
            header = stamp_header(self.session.unpack(parts[0]), user)
            return serialize_msg_to_ws_v1([self.session.pack(header), *parts[1:]], channel)
        if isinstance(ws_msg, bytes):
            msg = deserialize_binary_message(ws_msg)
            msg["header"] = stamp_header(msg["header"], user)
            return serialize_binary_message(msg)
        msg = json.loads(ws_msg)
        msg["header"] = stamp_header(msg["header"], user)
        return json.dumps(msg, default=str)


def install(settings: dict[str, Any]) -> bool:
    """Use the stamping connection for kernel WebSockets in these web app ``settings`` (an
    extension's, which jupyter_server copies into its own), unless the server was configured
    with another class (a gateway, another extension's): then tabs' clicks stay unnamed."""
    if settings.get("kernel_websocket_connection_class") is not ZMQChannelsWebsocketConnection:
        return False
    settings["kernel_websocket_connection_class"] = IdentityStampingConnection
    return True
