"""No way home: a page cannot make the browser reach this machine, its network or Jupyter.

An allowlisted page (the only site the browser may reach) fires every request it can think
of at a recorder standing in for the user's services (every hit recorded), and at a real,
unauthenticated ``jupyter server`` (its debug log records every request): fetch, XHR, images,
iframes, stylesheets, scripts, media, objects, a form POST, beacons, EventSource, WebSocket,
a service worker, redirects through the allowed site itself, WebRTC; addressed as
127.0.0.1, localhost, this machine's name, [::1], IPv4-mapped IPv6, decimal, octal and hex
forms and 0.0.0.0. Each test checks that the attempts were made (the proxy refused each one,
so the test cannot pass because a request never fired) and that nothing arrived.
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import pytest_asyncio

from think_kernel.web import WebServices
from think_kernel.web.egress import Egress, PolicySource, system_resolve
from think_kernel.web.netpolicy import parse_allow

from .conftest import Tools, web_config
from .servers import Request, Server, page, site_routes

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(180)]

# Paths every target gets; each must show up as refused by the proxy.
HTTP_VECTORS = [
    "img", "img2", "iframe", "css", "script.js", "video", "object", "fetch", "fetch-nocors",
    "xhr", "beacon", "form", "sse", "via-redirect", "fetch-redirect", "preflight",
]  # fmt: skip

ATTACK_JS = """
const targets = %(targets)s;
const seen = [];
function add(tag, attrs) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  document.body.appendChild(el);
}
targets.forEach((t, i) => {
  const T = t + '/t' + i;
  add('img', {src: T + '/img'});
  add('iframe', {src: T + '/iframe'});
  add('link', {rel: 'stylesheet', href: T + '/css'});
  add('script', {src: T + '/script.js'});
  add('video', {src: T + '/video'});
  add('object', {data: T + '/object'});
  new Image().src = T + '/img2';
  fetch(T + '/fetch').catch(e => seen.push('fetch ' + i));
  fetch(T + '/fetch-nocors', {mode: 'no-cors'}).catch(e => seen.push('nocors ' + i));
  fetch(T + '/preflight', {method: 'PUT', body: '{}',
        headers: {'Content-Type': 'application/json'}}).catch(e => seen.push('put ' + i));
  const x = new XMLHttpRequest(); x.open('GET', T + '/xhr'); x.send();
  navigator.sendBeacon(T + '/beacon', 'x');
  try { new EventSource(T + '/sse'); } catch (e) {}
  try { new WebSocket(T.replace(/^http/, 'ws') + '/ws'); } catch (e) {}
  new Image().src = '/redirect?to=' + encodeURIComponent(T + '/via-redirect');
  fetch('/redirect?to=' + encodeURIComponent(T + '/fetch-redirect')).catch(() => {});
  const frame = 'sink' + i;
  add('iframe', {name: frame});
  const f = document.createElement('form');
  f.method = 'POST'; f.action = T + '/form'; f.target = frame;
  document.body.appendChild(f); f.submit();
});
if (navigator.serviceWorker) {
  navigator.serviceWorker.register('/sw.js').then(() => seen.push('sw registered'),
    e => seen.push('sw failed ' + e));
}
const candidates = [];
try {
  const pc = new RTCPeerConnection({iceServers: [{urls: 'stun:127.0.0.1:%(udp)d'}]});
  pc.onicecandidate = e => { if (e.candidate) candidates.push(e.candidate.candidate); };
  pc.createDataChannel('x');
  pc.createOffer().then(o => pc.setLocalDescription(o));
} catch (e) { candidates.push('error ' + e); }
setTimeout(() => {
  const out = document.createElement('pre');
  out.id = 'finished';
  out.textContent = JSON.stringify({seen, candidates});
  document.body.appendChild(out);
}, 2500);
"""


def attack_routes(targets: list[str], udp_port: int, sw_target: str) -> dict[str, Any]:
    """The allowlisted attacker: the test site plus /attack and a service worker."""
    routes: dict[str, Any] = site_routes()

    def attack(req: Request) -> tuple[int, dict[str, str], bytes]:
        js = ATTACK_JS % {"targets": json.dumps(targets), "udp": udp_port}
        return page(
            "attack", "<h1>attack</h1>", head=f"<script>window.onload = () => {{{js}}}</script>"
        )

    def worker(req: Request) -> tuple[int, dict[str, str], bytes]:
        js = (
            f"self.addEventListener('install', e => e.waitUntil("
            f"fetch('{sw_target}/sw-install').catch(() => null)));"
            "self.addEventListener('activate', e => e.waitUntil(self.clients.claim()));"
        )
        return 200, {"Content-Type": "text/javascript"}, js.encode()

    routes["/attack"] = attack
    routes["/sw.js"] = worker
    return routes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A real jupyter server with NO token (the worst case), logging every request."""
    tmp = tmp_path_factory.mktemp("jupyter")
    runtime = tmp / "runtime"
    port = _free_port()
    log = tmp / "server.log"
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(runtime)}
    # The policy finds running servers through the runtime dir, as it does in a kernel.
    old = os.environ.get("JUPYTER_RUNTIME_DIR")
    os.environ["JUPYTER_RUNTIME_DIR"] = str(runtime)
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root",
             f"--port={port}", "--ServerApp.port_retries=0", "--IdentityProvider.token=",
             "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True",
             "--ServerApp.log_level=DEBUG", f"--ServerApp.root_dir={tmp}",
             # No spare chat kernel: its link connecting mid-test would be a request here.
             "--ThinkExtension.kernel_pool_size=0"],
            stdout=out, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/api/status?control=1", timeout=2)
                if r.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.2)  # polling a starting process; nothing to wait on
        # The server logs a request after it has answered: wait for the control line.
        while not any("control=1" in line for line in jupyter_requests(log)):
            assert time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.05)
        yield {"port": port, "origin": f"http://127.0.0.1:{port}", "log": log, "root": tmp}
    finally:
        proc.terminate()
        proc.wait(20)
        if old is None:
            os.environ.pop("JUPYTER_RUNTIME_DIR", None)
        else:
            os.environ["JUPYTER_RUNTIME_DIR"] = old


def jupyter_requests(log: Path) -> list[str]:
    """Request lines in the server's log, e.g. ``200 GET /api/status (127.0.0.1) 1ms``."""
    out = []
    for line in log.read_text().splitlines():
        for verb in (" GET /", " POST /", " PUT /", " OPTIONS /", " HEAD /", " DELETE /"):
            if verb in line:
                out.append(line)
    return out


@pytest.fixture(scope="module")
def recorder6() -> Iterator[Server]:
    """A recorder on IPv6 loopback."""
    s = Server({"*": lambda req: (200, {"Content-Type": "text/plain"}, b"SECRET6")}, host="::1")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def udp() -> Iterator[socket.socket]:
    """A UDP socket a STUN request would reach."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.setblocking(False)
    yield s
    s.close()


def targets_for(recorder: Server, recorder6: Server, jupyter: dict[str, Any]) -> list[str]:
    r, j = recorder.port, jupyter["port"]
    try:  # this machine's own name, where it resolves (it usually does, to one of its addresses)
        socket.getaddrinfo(socket.gethostname(), r)
        own_name = [f"http://{socket.gethostname()}:{r}"]
    except OSError:
        own_name = []
    return [
        f"http://127.0.0.1:{r}",
        f"http://localhost:{r}",
        *own_name,
        f"http://[::1]:{recorder6.port}",
        f"http://[::ffff:127.0.0.1]:{r}",
        f"http://2130706433:{r}",  # decimal
        f"http://0177.0.0.1:{r}",  # octal
        f"http://0x7f.1:{r}",  # hex, short form
        f"http://127.1:{r}",
        f"http://0.0.0.0:{r}",
        "http://169.254.169.254",  # cloud metadata
        f"http://127.0.0.1:{j}",
        f"http://localhost:{j}",
    ]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def attack(
    recorder: Server, recorder6: Server, jupyter: dict[str, Any], udp: socket.socket, brave: Server
) -> AsyncIterator[dict[str, Any]]:
    """The attacker's site (allowlisted) and the web services that allow only it."""
    targets = targets_for(recorder, recorder6, jupyter)
    site = Server(attack_routes(targets, udp.getsockname()[1], f"http://127.0.0.1:{recorder.port}"))
    # The real policy (this machine's addresses, running Jupyter servers), with room to keep
    # every refusal of the attack for the checks.
    egress = Egress(PolicySource(parse_allow(site.authority)), keep_blocked=10_000)
    web = WebServices(web_config(site, brave, allow=[site.authority]), egress=egress)
    yield {"site": site, "web": web, "targets": targets, "tools": Tools(web, None)}
    await web.aclose()
    site.stop()


async def _run_attack(attack: dict[str, Any], session: str) -> dict[str, Any]:
    tools: Tools = attack["tools"]
    site: Server = attack["site"]
    out = await tools("browse_url", session_id=session, url=site.origin + "/attack")
    assert out.ok, out.text
    done = await tools(
        "interact_with_page", session_id=session, action="wait", selector="#finished"
    )
    assert done.ok, done.text
    data = await tools("scrape_page", session_id=session, selectors={"r": "#finished"})
    return json.loads(json.loads(data.text.split(":\n", 1)[1])["r"][0])


async def test_a_page_cannot_reach_this_machine_or_jupyter(
    attack: dict[str, Any],
    recorder: Server,
    recorder6: Server,
    jupyter: dict[str, Any],
    udp: socket.socket,
) -> None:
    web: WebServices = attack["web"]
    targets: list[str] = attack["targets"]
    seen_before = len(jupyter_requests(jupyter["log"]))
    assert seen_before >= 1  # the control request: the log does record requests
    mark = web.egress.blocked_count
    page = await _run_attack(attack, "s_attack")
    refused = web.egress.blocked_since(mark)
    whats = [b.what for b in refused]

    # Every vector of every target that Chromium sent out was made, and refused by the proxy.
    missing = [
        f"t{i}/{v}"
        for i in range(len(targets))
        for v in HTTP_VECTORS
        if not any(f"/t{i}/{v}" in w for w in whats)
    ]
    assert not missing, f"attempts never seen by the proxy: {missing}\n{whats}"
    assert any(w.startswith("CONNECT") and f":{recorder.port}" in w for w in whats)  # sockets
    assert any(f":{jupyter['port']}" in w and w.startswith("CONNECT") for w in whats)
    assert any("/sw-install" in w for w in whats), page["seen"]  # the service worker's fetch
    assert any(b.host == "169.254.169.254" for b in refused)

    # ... and nothing arrived anywhere.
    assert recorder.hits == [] and recorder6.hits == []
    assert jupyter_requests(jupyter["log"])[seen_before:] == []
    assert not (jupyter["root"] / "pwned.txt").exists()
    # WebRTC: no UDP candidate, no datagram
    assert not [c for c in page["candidates"] if " udp " in c.lower()], page["candidates"]
    with pytest.raises(BlockingIOError):
        udp.recv(2048)


async def test_the_tools_cannot_be_pointed_at_home_either(
    attack: dict[str, Any], recorder: Server, jupyter: dict[str, Any]
) -> None:
    tools: Tools = attack["tools"]
    site: Server = attack["site"]
    seen_before = len(jupyter_requests(jupyter["log"]))
    via_redirect = f"{site.origin}/redirect?to={quote(jupyter['origin'])}/api/contents"
    calls = [("browse_url", {"url": url}) for url in [*attack["targets"], via_redirect]]
    for url in (jupyter["origin"] + "/api/contents", via_redirect):
        calls += [
            ("screenshot", {"url": url}),
            ("scrape_page", {"url": url, "selectors": {"b": "body"}}),
            ("interact_with_page", {"action": "navigate", "value": url}),
        ]
    for tool, args in calls:
        out = await tools(tool, session_id="s_direct", **args)
        assert not out.ok, (tool, args, out.text)
        assert "Blocked by the network guard" in out.text, (tool, args, out.text)
    assert recorder.hits == []
    assert jupyter_requests(jupyter["log"])[seen_before:] == []


async def test_a_broad_allow_entry_still_leaves_jupyter_alone(
    recorder: Server, jupyter: dict[str, Any], brave: Server
) -> None:
    site = Server(site_routes())
    web = WebServices(web_config(site, brave, allow=["127.0.0.0/8"]))
    try:
        call = Tools(web, None)
        seen_before = len(jupyter_requests(jupyter["log"]))
        ok = await call("browse_url", url=f"{recorder.origin}/allowed")
        assert ok.ok and "SECRET" in ok.text  # the user allowed loopback: that works
        assert "/allowed" in recorder.paths()
        for url in (f"{jupyter['origin']}/api/contents", f"http://localhost:{jupyter['port']}/"):
            out = await call("browse_url", url=url)
            assert not out.ok and "Jupyter server" in out.text, out.text
        assert jupyter_requests(jupyter["log"])[seen_before:] == []
    finally:
        await web.aclose()
        site.stop()
        recorder.hits.clear()


def _outside_page(req: Request) -> tuple[int, dict[str, str], bytes]:
    return page(
        "rebind",
        "<p>outside</p><script>setTimeout(() => { fetch('/secret').catch(() => 0);"
        "new Image().src = '/img'; }, 100); setTimeout(() => document.body"
        ".insertAdjacentHTML('beforeend', '<i id=finished>x</i>'), 1500)</script>",
    )


def _same_port_pair(inside_hits: list[str]) -> tuple[Server, Any]:
    """An 'outside' server on 127.0.0.2 and a private one on 127.0.0.1, on the same port."""
    for _ in range(50):
        outside = Server({"/": _outside_page}, host="127.0.0.2")
        inside = _bind_same_port(outside.port, inside_hits)
        if inside is not None:
            return outside, inside
        outside.stop()
    raise RuntimeError("no port free on both 127.0.0.1 and 127.0.0.2")


async def test_dns_rebinding_cannot_turn_an_allowed_name_into_loopback(brave: Server) -> None:
    inside_hits: list[str] = []
    outside, inside = _same_port_pair(inside_hits)
    port = outside.port
    answers: list[str] = []

    async def rebinding(host: str, p: int) -> list[Any]:
        if host != "rebind.test":
            return await system_resolve(host, p)
        answers.append("127.0.0.2" if not answers else "127.0.0.1")  # then it rebinds
        return [ipaddress.ip_address(answers[-1])]

    egress = Egress(
        PolicySource(parse_allow("127.0.0.2"), addresses=lambda: [], ports=lambda: []),
        resolver=rebinding,
    )
    web = WebServices(web_config(outside, brave, allow=["127.0.0.2"]), egress=egress)
    try:
        call = Tools(web, None)
        out = await call("browse_url", url=f"http://rebind.test:{port}/")
        assert out.ok and "outside" in out.text, out.text
        done = await call("interact_with_page", action="wait", selector="#finished")
        assert done.ok, done.text
        assert len(answers) >= 3  # the page, then the fetch and the image, each resolved anew
        assert outside.paths()[0] == "/"
        assert inside_hits == []
        refused = {b.what for b in egress.blocked if b.host == "rebind.test"}
        assert {
            f"GET http://rebind.test:{port}/secret",
            f"GET http://rebind.test:{port}/img",
        } <= refused
    finally:
        await web.aclose()
        outside.stop()
        inside.shutdown()
        inside.server_close()


def _bind_same_port(port: int, hits: list[str]) -> Any:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "6")
            self.end_headers()
            self.wfile.write(b"SECRET")

        def log_message(self, *args: Any) -> None:
            pass

    try:
        httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    except OSError:
        return None
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd
