"""The app the own-app tests serve: a page that says a marker and talks to its own WebSocket,
a redirect and a page that loads from an address it is given (stdlib only, on the app's
socket)."""

from __future__ import annotations

from tests.apps.app_source import ECHO

#: ``own_app.py``: ``/`` is an HTML page saying MARKER, whose script opens the app's own
#: WebSocket (``ws``, relative) and writes its echo into the page; ``/redirect?to=URL``
#: answers 302 to URL; ``/leak?src=URL`` is a page with an image and a fetch of URL;
#: ``/headers`` echoes the request's headers as JSON; ``/ws`` is a WebSocket echo.
_HEAD = r"""
import base64, hashlib, http.server, json, struct, urllib.parse
import think_app

MARKER = "MARKER_TEXT"
PAGE = '''<!doctype html><html><head><title>Own app</title></head><body>
<h1>Own app</h1><p id="marker">%s</p><p id="echo">no echo yet</p>
<script>
const ws = new WebSocket(location.href.replace(/^http/, 'ws').replace(/[^/]*$/, '') + 'ws');
ws.onopen = () => ws.send('ping');
ws.onmessage = (e) => { document.getElementById('echo').textContent = e.data; };
</script></body></html>'''
LEAK = '''<!doctype html><html><head><title>Leak</title></head><body><p>leak page</p>
<img src="%s"><script>fetch(%s).catch(() => 0)</script></body></html>'''


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        if self.headers.get("Upgrade", "").lower() == "websocket":
            return self.echo()
        if url.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", q["to"])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if url.path == "/leak":
            body, kind = LEAK % (q["src"], json.dumps(q["src"])), "text/html"
        elif url.path == "/headers":
            body, kind = json.dumps(dict(self.headers.items())), "application/json"
        else:
            body, kind = PAGE % MARKER, "text/html"
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

"""

SOURCE = (
    _HEAD
    + ECHO
    + r"""

think_app.serve(Handler)
"""
)


def own_app(marker: str) -> str:
    """The app's source, its page saying ``marker``."""
    return SOURCE.replace("MARKER_TEXT", marker)
