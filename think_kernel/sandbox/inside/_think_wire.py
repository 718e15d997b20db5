"""The line protocol between the kernel, the zygote and its children: one JSON object per
line, file descriptors passed alongside with SCM_RIGHTS (stdlib only)."""

from __future__ import annotations

import array
import json
import socket


def recv_line(sock: socket.socket, buf: bytearray, fds: list[int]) -> bytes | None:
    """Read one newline-terminated message, collecting any passed fds into ``fds``."""
    while b"\n" not in buf:
        data, anc, _flags, _addr = sock.recvmsg(65536, socket.CMSG_SPACE(16 * 4))
        for level, typ, cdata in anc:
            if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                a = array.array("i")
                a.frombytes(cdata[: len(cdata) - (len(cdata) % a.itemsize)])
                fds.extend(a)
        if not data:
            return None
        buf += data
    line, _, rest = bytes(buf).partition(b"\n")
    buf[:] = rest
    return line


def send_msg(sock: socket.socket, obj: dict) -> None:
    """Send one JSON line (blocking)."""
    sock.sendall(json.dumps(obj).encode() + b"\n")


def send_with_fds(sock: socket.socket, line: bytes, fds: list[int]) -> None:
    """Send one whole line with ``fds`` attached (blocking). ``sendmsg`` may send a part only
    (a long line, a signal such as SIGCHLD meanwhile): the rest follows, or the reader would
    take a cut line (and the next one's start) for a request."""
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
    sent = sock.sendmsg([line], anc)
    if sent < len(line):
        sock.sendall(line[sent:])
