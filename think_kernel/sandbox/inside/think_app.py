"""Serve a live app (``serve_app``) on the socket its kernel hands it (stdlib only).

An app never opens a port: sandboxed code may not call ``socket()`` or ``bind()``, so the
kernel makes a listening unix socket in a folder only the Jupyter server can reach and
passes it to the app as file descriptor ``$THINK_APP_FD``; the app only accepts on it. The
Jupyter server proxies ``/api/think/sessions/{id}/apps/{name}/`` to it.

    python -m think_app [DIR]                 # static files of DIR, as `python -m http.server`

    import think_app, http.server             # your own handler
    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self): ...
    think_app.serve(Hello)

Other servers take the descriptor as it is: ``uvicorn app:app --fd $THINK_APP_FD``,
``gunicorn --bind fd://$THINK_APP_FD app:app``, ``hypercorn --bind fd://$THINK_APP_FD``,
aiohttp's ``web.run_app(app, sock=think_app.listener())``.
"""

from __future__ import annotations

import functools
import http.server
import os
import socket
import socketserver
import sys
from typing import Any

__all__ = ["AppServer", "listener", "serve"]


def listener() -> socket.socket:
    """The listening socket the kernel handed this app (``$THINK_APP_FD``)."""
    fd = os.environ.get("THINK_APP_FD")
    if not fd:
        raise RuntimeError("no $THINK_APP_FD: start this with serve_app (or %think_serve)")
    return socket.socket(fileno=int(fd))


class AppServer(http.server.ThreadingHTTPServer):
    """``http.server``'s threading server on the app's socket instead of a port."""

    def __init__(self, handler: Any, sock: socket.socket | None = None) -> None:
        """Serve ``handler`` on ``sock`` (default: :func:`listener`)."""
        # The base class would make and bind a socket of its own: sandboxed code may not.
        socketserver.BaseServer.__init__(self, ("app", 0), handler)
        self.socket = sock if sock is not None else listener()
        self.server_name, self.server_port = "app", 0

    def get_request(self) -> tuple[socket.socket, Any]:
        """A connection, with a client address http.server can log (a unix peer has none)."""
        conn, _ = self.socket.accept()
        return conn, ("app", 0)


def serve(handler: Any = http.server.SimpleHTTPRequestHandler) -> None:
    """Serve ``handler`` on the app's socket until the process is stopped."""
    with AppServer(handler) as server:
        server.serve_forever()


def main(argv: list[str]) -> None:
    """``python -m think_app [DIR]``: the files of DIR (default: the current folder)."""
    directory = argv[1] if len(argv) > 1 else os.getcwd()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=directory)
    print(f"serving {directory} on the app socket", flush=True)
    serve(handler)


if __name__ == "__main__":
    main(sys.argv)
