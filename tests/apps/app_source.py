"""The app the tests have the agent write: plain ``http.server`` on the app's socket, a
hand-rolled WebSocket echo, and probes of what the app can reach (stdlib only)."""

from __future__ import annotations

from think_kernel.apps import Apps, AppsConfig
from think_kernel.sandbox import Sandbox

#: ``app.py``: GET / says MESSAGE and echoes what it was sent; /reach?host=H&port=P tries a
#: TCP connection; /ws is a WebSocket echo.
_HEAD = r"""
import base64, hashlib, http.server, json, socket, struct, urllib.parse
import think_app

MESSAGE = "MESSAGE_TEXT"


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if self.headers.get("Upgrade", "").lower() == "websocket":
            return self.echo()
        if url.path.endswith("/reach"):
            q = dict(urllib.parse.parse_qsl(url.query))
            try:
                socket.create_connection((q["host"], int(q["port"])), timeout=3).close()
                body = "reached"
            except OSError as e:
                body = f"blocked: {e}"
        else:
            body = json.dumps({"message": MESSAGE, "path": self.path,
                               "headers": dict(self.headers.items())})
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

"""

#: A WebSocket handshake and echo (hand-rolled RFC 6455 frames) and a log line per request:
#: methods of the apps' ``http.server`` handlers.
ECHO = r"""
    def handshake(self):
        key = self.headers["Sec-WebSocket-Key"]
        accept = base64.b64encode(hashlib.sha1(
            (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()

    def echo(self):
        self.handshake()
        while True:
            head = self.rfile.read(2)
            if len(head) < 2:
                return
            opcode, n = head[0] & 0x0F, head[1] & 0x7F
            if n == 126:
                n = struct.unpack(">H", self.rfile.read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self.rfile.read(8))[0]
            mask = self.rfile.read(4) if head[1] & 0x80 else b"\0\0\0\0"
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(n)))
            if opcode == 8:
                self.wfile.write(b"\x88\x00")
                return
            reply = ("echo: " + data.decode()).encode()
            self.wfile.write(bytes([0x81, len(reply)]) + reply)
            self.wfile.flush()

    def log_message(self, fmt, *args):
        print("request", fmt % args, flush=True)
"""

APP = (
    _HEAD
    + ECHO
    + r"""

print("app starting", flush=True)
think_app.serve(Handler)
"""
)


def app_source(message: str) -> str:
    """The app's source, saying ``message``."""
    return APP.replace("MESSAGE_TEXT", message)


def apps_in(sandbox: Sandbox, config: AppsConfig | None = None) -> Apps:
    """An app registry whose every session runs in ``sandbox`` (a kernel's runtime hands it
    each session's own)."""

    async def the_sandbox() -> Sandbox:
        return sandbox

    return Apps(config or AppsConfig(), the_sandbox)
