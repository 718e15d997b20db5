"""Forward a live app's socket to the port the app binds itself (stdlib only).

``serve_app(command, port=N)`` on tier 1 starts this beside the app, in the same sandbox and
process group: it accepts on the listening socket the kernel handed (``$THINK_APP_FD``) and
connects each connection to ``127.0.0.1:N`` (or ``[::1]:N``) in the sandbox's own network
namespace, then pipes bytes both ways until either side closes (an HTTP request, a
WebSocket after its upgrade: it never reads what it carries).

    python -m think_app_port 8000
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading

_CHUNK = 65536


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    """Copy ``src`` to ``dst`` until ``src`` ends, then end ``dst``'s writing side."""
    try:
        while chunk := src.recv(_CHUNK):
            dst.sendall(chunk)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


def _connect(port: int) -> socket.socket | None:
    """A connection to the app's port (IPv4 loopback, else IPv6); None while it listens on
    neither (it is starting: the client sees its connection closed and tries again)."""
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            sock = socket.socket(family, socket.SOCK_STREAM)
        except OSError:  # no inet sockets here (not under serve_app's port): the app says why
            continue
        try:
            sock.connect((host, port))
            return sock
        except OSError:
            sock.close()
    return None


def _serve_one(client: socket.socket, port: int) -> None:
    """Pipe one connection to the app's port and back."""
    with client:
        upstream = _connect(port)
        if upstream is None:
            return
        with upstream:
            back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
            back.start()
            _pipe(client, upstream)
            back.join()


def forward(port: int, listener: socket.socket) -> None:
    """Accept on ``listener`` forever; each connection goes to ``port`` on loopback."""
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_serve_one, args=(client, port), daemon=True).start()


def main() -> None:
    """``python -m think_app_port PORT``: forward ``$THINK_APP_FD`` to ``PORT``."""
    fd = os.environ.get("THINK_APP_FD")
    if len(sys.argv) != 2 or not sys.argv[1].isdigit() or not fd:
        sys.exit("usage: python -m think_app_port PORT (with $THINK_APP_FD, under serve_app)")
    forward(int(sys.argv[1]), socket.socket(fileno=int(fd)))


if __name__ == "__main__":
    main()
