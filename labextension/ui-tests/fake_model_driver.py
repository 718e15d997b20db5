"""Run ``tests/fake_model.py`` for the browser tests and let Node script it over HTTP.

Prints one JSON line ``{"model_url": ..., "control_url": ...}`` and serves until stdin
closes. ``POST {control_url}/script`` with ``[{reply kwargs}, ...]`` appends replies
(``tool_calls`` as ``[[name, args], ...]``; ``"conversation": key`` puts a reply in the script
of the conversation whose first user message contains ``key``, as a subagent's);
``POST {control_url}/answer`` with ``{"purpose": ..., reply kwargs}`` gives every internal call
of that purpose a standing reply (inline completions: ``"purpose": "complete"``);
``GET {control_url}/requests`` returns what the model was sent (``internal_requests`` too).
Used by harness.mjs when THINK_E2E_BACKEND=real.
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fake_model import FakeModel  # noqa: E402

fm = FakeModel().start()


class Control(BaseHTTPRequestHandler):
    """The control endpoint."""

    def do_POST(self) -> None:  # noqa: N802
        """Append scripted replies, or set a purpose's standing answer."""
        body: Any = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/answer":
            fm.answer(body.pop("purpose"), **body)
            self._answer({"answers": sorted(fm.answers)})
            return
        for kw in body:
            kw["tool_calls"] = [tuple(tc) for tc in kw.get("tool_calls", [])]
            key = kw.pop("conversation", "")
            if key:
                fm.reply_for(key, **kw)
            else:
                fm.reply(**kw)
        self._answer({"queued": len(fm.script)})

    def do_GET(self) -> None:  # noqa: N802
        """Return the requests the model received."""
        self._answer(
            {
                "requests": fm.requests,
                "internal_requests": fm.internal_requests,
                "first_token_at": fm.first_token_at,
            }
        )

    def _answer(self, data: dict[str, Any]) -> None:
        raw = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        """Quiet."""


server = ThreadingHTTPServer(("127.0.0.1", 0), Control)
threading.Thread(target=server.serve_forever, daemon=True).start()
print(
    json.dumps({"model_url": fm.url, "control_url": f"http://127.0.0.1:{server.server_port}"}),
    flush=True,
)
sys.stdin.read()
server.shutdown()
fm.stop()
