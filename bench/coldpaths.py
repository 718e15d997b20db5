"""The cold paths of chat sessions, through a real Jupyter server, kernels and sandbox.

    python bench/coldpaths.py [--quick] [--pool N]

With an instant scripted model (tests/fake_model.py), medians of the trials:

1. first message after server start: POST /messages -> the request at the model
2. first message of a new chat, warm server (the pool has had time to refill)
3. message in a warm chat (the baseline, same run)
4. first one-``bash`` turn in a new chat, outside the model: the first model reply (a ``bash``
   call of ``echo``) is complete -> the second model request arrives
5. a 200-token burst: WebSocket frames carrying it, and stream end -> the whole text at a
   second (WebSocket) client; first token -> first text at the client, in the burst and in
   a stream paced like a real model's (a token every 2 ms)
6. resident memory (RSS, kernel + its sandbox processes) of an idle chat and of a spare kernel
7. a five-``bash`` turn in a chat that ran bash before: per model call, the time outside the
   model (the loop and the sandboxed ``echo``), the peer study's measure; with a bash
   started ahead of each command and without (the baseline), two servers interleaved; and
   the CPU time the kernel, its sandbox, the server and the model use per call

Waits on the model are blocking calls into its process, not polls: on 2 cores a poll every
2 ms took CPU from the processes measured.

``--pool 0`` measures without pre-started kernels (the baseline of 1 and 2).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import tests.fake_model as fake  # noqa: E402

TOKEN = "bench-token"


class TimedModel(fake.FakeModel):
    """The scripted model, noting when each main-loop request arrived (``time.time()``)."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived: list[float] = []
        self.ended: list[float] = []
        self.changed = threading.Condition()

    def record(self, body: dict[str, Any], internal: bool = False) -> None:
        """Note the arrival time of main-loop requests."""
        if not internal:
            with self.changed:
                self.arrived.append(time.time())
                self.changed.notify_all()
        super().record(body, internal)

    def wait(self, name: str, count: int, timeout: float) -> bool:
        """Block until ``name`` (``arrived`` or ``ended``) holds ``count`` times."""
        with self.changed:
            return self.changed.wait_for(lambda: len(getattr(self, name)) >= count, timeout)


_orig_stream = fake._Handler._stream


async def _timed_stream(self: Any, model: str, r: Any, prompt: int | None) -> None:
    await _orig_stream(self, model, r, prompt)
    if isinstance(self.fm, TimedModel):
        with self.fm.changed:
            self.fm.ended.append(time.time())
            self.fm.changed.notify_all()


fake._Handler._stream = _timed_stream  # type: ignore[method-assign]


def _serve_model(conn: Any) -> None:
    """In a child process: a TimedModel, scripted and read through ``conn``."""
    fm = TimedModel().start()
    conn.send(fm.url)
    while True:
        op, arg = conn.recv()
        if op == "reply":
            fm.reply(**arg)
            conn.send(None)
        elif op == "get":
            conn.send(list(getattr(fm, arg)))
        elif op == "wait":
            conn.send(fm.wait(*arg))
        else:
            fm.stop()
            conn.send(None)
            return


class ModelProcess:
    """A TimedModel in a process of its own, with the same attributes (read over a pipe).

    In the process of the clients that measure it, the model's streaming thread and the
    client's reads compete for one GIL: a client waited up to the 5 ms switch interval for
    each frame, which no real (remote) model causes.
    """

    def __init__(self) -> None:
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve_model, args=(child,), daemon=True)
        self.url = ""

    def start(self) -> ModelProcess:
        """Start the child; returns self once it serves."""
        self._proc.start()
        self.url = self._conn.recv()
        return self

    @property
    def pid(self) -> int:
        """The child's pid."""
        return int(self._proc.pid or 0)

    def _get(self, name: str) -> list[Any]:
        self._conn.send(("get", name))
        return list(self._conn.recv())

    @property
    def arrived(self) -> list[float]:
        """When each main-loop request arrived (``time.time()``)."""
        return self._get("arrived")

    @property
    def ended(self) -> list[float]:
        """When each stream ended."""
        return self._get("ended")

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The bodies of the main-loop requests, in order."""
        return self._get("requests")

    @property
    def first_token_at(self) -> list[float]:
        """When each stream's first token was sent."""
        return self._get("first_token_at")

    def wait(self, name: str, count: int, timeout: float = 60.0) -> None:
        """Until ``name`` (``arrived`` or ``ended``) holds ``count`` times, without polling:
        a poll every few ms would take CPU from the processes measured (2 cores)."""
        self._conn.send(("wait", (name, count, timeout)))
        if not self._conn.recv():
            raise TimeoutError(f"{name} did not reach {count} in {timeout} s")

    def reply(self, **kwargs: Any) -> None:
        """Script the next reply (see tests/fake_model.Reply)."""
        self._conn.send(("reply", kwargs))
        self._conn.recv()

    def stop(self) -> None:
        """Stop the child."""
        try:
            self._conn.send(("stop", None))
            self._conn.recv()
        except (OSError, EOFError):
            pass
        self._proc.join(10)


def ensure_bytecode() -> None:
    """Compile our packages' bytecode, as installing a wheel does. A checkout installed in
    development mode, in an environment with ``PYTHONDONTWRITEBYTECODE`` set, otherwise
    compiles every module from source in every new kernel (~0.4 s of each cold path on
    2 cores): not what a user's installation does."""
    import compileall

    for pkg in ("think_kernel", "jupyter_ext"):
        compileall.compile_dir(str(REPO / pkg), quiet=1, force=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A jupyter_server subprocess with the extension, its kernels on the scripted model."""

    def __init__(
        self, tmp: Path, model_url: str, pool: int, prime: int = 1, kernel_config: str = ""
    ) -> None:
        self.tmp = tmp
        self.root = tmp / "root"
        self.root.mkdir(exist_ok=True)
        self.port = free_port()
        config = tmp / "config"  # the kernels' think_kernel_config.py
        config.mkdir(exist_ok=True)
        (config / "think_kernel_config.py").write_text(
            f"c.SandboxConfig.prime_bash = {prime}\n{kernel_config}"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "THINK_"))}
        env.update(
            JUPYTER_CONFIG_DIR=str(config),
            JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
            JUPYTER_DATA_DIR=str(tmp / "data"),
            PYTHONPATH=str(REPO),
            OPENAI_BASE_URL=model_url,
            OPENAI_API_KEY="k",
            THINK_MODEL="fake",
        )
        self.log = open(tmp / f"server-{self.port}.log", "wb")  # noqa: SIM115
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            [
                sys.executable, "-m", "jupyter_server", "--allow-root", "--no-browser",
                f"--port={self.port}", "--ServerApp.port_retries=0", "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.token={TOKEN}", f"--ServerApp.root_dir={self.root}",
                "--ServerApp.jpserver_extensions", "jupyter_ext=True",
                f"--ThinkExtension.kernel_pool_size={pool}",
            ],
            env=env, stdout=subprocess.DEVNULL, stderr=self.log,
        )  # fmt: skip

    def call(self, method: str, path: str, body: Any = None) -> Any:
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {TOKEN}"},
        )
        with urllib.request.urlopen(req, timeout=60) as resp:
            text = resp.read().decode()
        return json.loads(text) if text else None

    def wait_up(self, timeout: float = 180) -> None:
        while time.perf_counter() - self.t0 < timeout:
            try:
                self.call("GET", "api/think/sessions")
                return
            except OSError:
                time.sleep(0.01)
        raise TimeoutError("server did not start")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def wait_for(cond: Any, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError("condition not met")
        time.sleep(0.002)


def post_to_model(srv: Server, fm: ModelProcess, sid: str, text: str) -> float:
    """ms from POST to the model request's arrival; waits for the run to end."""
    n = len(fm.arrived)
    t0 = time.time()
    srv.call("POST", f"api/think/sessions/{sid}/messages", {"content": text})
    fm.wait("arrived", n + 1)
    ms = (fm.arrived[n] - t0) * 1000
    wait_idle(srv, sid)
    return ms


def wait_idle(srv: Server, sid: str) -> None:
    wait_for(lambda: srv.call("GET", f"api/think/sessions/{sid}")["status"] == "idle", 60)


def spares(srv: Server) -> int:
    """Spares whose runtime, store, sandbox and model client are ready."""
    kernels = srv.call("GET", "api/think/kernels")["kernels"]
    return sum(1 for k in kernels if k["session_id"] is None and k.get("prepared"))


def rss_mb(pids: list[int]) -> float:
    """Proportional set size (MB) of these processes: pages shared between them (the
    sandbox's forked worker and its zygote) are counted once, not once per process."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def tree(pid: int) -> list[int]:
    """pid and every descendant (through /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


async def burst(
    srv: Server, fm: ModelProcess, sid: str, tokens: int, delay: float = 0.0
) -> dict[str, float]:
    """Frames and timings of a ``tokens``-token answer at a WebSocket client."""
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    req = HTTPRequest(
        f"ws://127.0.0.1:{srv.port}/api/think/sessions/{sid}/ws",
        headers={"Authorization": f"token {TOKEN}"},
    )
    ws = await websocket_connect(req)
    words = [f"w{i} " for i in range(tokens)]
    fm.reply(tokens=words, delay=delay)
    expected = "".join(words)
    got, frames, first_at, last_at = "", 0, 0.0, 0.0
    ends = len(fm.ended)
    await asyncio.to_thread(
        srv.call, "POST", f"api/think/sessions/{sid}/messages", {"content": "x"}
    )
    kinds: list[str] = []
    while True:
        try:
            raw = await asyncio.wait_for(ws.read_message(), 30)
        except TimeoutError:
            # Say what was seen (how the queued-message race, fixed since, showed itself).
            rows = srv.call("GET", f"api/think/sessions/{sid}/messages")
            rows = rows.get("messages", rows) if isinstance(rows, dict) else rows
            last = [(m.get("role"), m.get("status"), len(m.get("content") or ""),
                     m.get("error")) for m in rows[-3:]]  # fmt: skip
            raise TimeoutError(
                f"no frame for 30 s: {frames} text frames, {len(got)} of {len(expected)} "
                f"characters (a prefix: {expected.startswith(got)}), last frames {kinds[-5:]}, "
                f"model requests {len(fm.arrived)}, last messages {last}"
            ) from None
        assert isinstance(raw, str)
        frame = json.loads(raw)
        kinds.append(str(frame.get("type")))
        if frame.get("type") == "text_delta":
            frames += 1
            got += frame.get("text", "") or frame.get("delta", "")
            first_at = first_at or time.time()
            if got == expected:
                last_at = time.time()
                break
    ws.close()
    fm.wait("ended", ends + 1, 10)
    return {
        "frames": frames,
        "end_ms": (last_at - fm.ended[ends]) * 1000,
        "first_ms": (first_at - fm.first_token_at[-1]) * 1000,
    }


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def cpu_s(pids: list[int]) -> float:
    """CPU seconds these processes used, with their children already reaped (a sandbox's
    runs are reaped by its fork servers)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return total / os.sysconf("SC_CLK_TCK")


def chat_kernel(srv: Server, sid: str) -> int:
    """The pid of the kernel serving chat ``sid``."""
    kernels = srv.call("GET", "api/think/kernels")["kernels"]
    return int(next(k["pid"] for k in kernels if k.get("session_id") == sid))


def five_bash_turns(turns: int, tmp: Path) -> dict[str, Any]:
    """Median ms outside the model per model call of a five-``bash`` turn (``echo``), in a
    chat that ran bash before, with a bash started ahead of each command (``prime_bash``
    1) and without (0): two servers (no pool: nothing starts beside the turns), their
    turns interleaved. Also the CPU time each part used per bash call and its next model
    request (``cpu1``/``cpu0``: the kernel, its sandbox, the server; the scripted model's
    for both together) and the wall time of a whole call, the model's part included
    (``wall1``/``wall0``): on 2 cores it cannot be less than half their sum."""
    fm = ModelProcess().start()
    servers: dict[int, tuple[Server, str]] = {}
    steps: dict[int, list[float]] = {1: [], 0: []}
    cpu: dict[int, dict[str, float]] = {1: {}, 0: {}}
    wall = {1: 0.0, 0: 0.0}
    parts: dict[int, dict[str, list[int]]] = {}
    try:
        for prime in steps:
            d = tmp / f"five{prime}"
            d.mkdir()
            srv = Server(d, fm.url, 0, prime)
            servers[prime] = (srv, "")
            srv.wait_up()
            sid = srv.call("POST", "api/think/sessions", {"title": "five"})["id"]
            servers[prime] = (srv, sid)
            fm.reply(tool_calls=[("bash", {"command": "echo warm"})])
            fm.reply(text="warm")
            n = len(fm.arrived)
            srv.call("POST", f"api/think/sessions/{sid}/messages", {"content": "warm"})
            fm.wait("arrived", n + 2, 120)
            wait_idle(srv, sid)
            kernel = chat_kernel(srv, sid)
            sandbox = [p for p in tree(kernel) if p != kernel]
            parts[prime] = {"kernel": [kernel], "sandbox": sandbox, "server": [srv.proc.pid]}
        model = [fm.pid]
        model_cpu = 0.0
        for _ in range(turns):
            for prime, (srv, sid) in servers.items():
                for i in range(5):
                    fm.reply(tool_calls=[("bash", {"command": f"echo step{i}"})])
                fm.reply(text="done")
                n, ends = len(fm.arrived), len(fm.ended)
                before = {k: cpu_s(v) for k, v in parts[prime].items()}
                before_model = cpu_s(model)
                t0 = time.perf_counter()
                srv.call("POST", f"api/think/sessions/{sid}/messages", {"content": "five"})
                fm.wait("arrived", n + 6)
                wall[prime] += time.perf_counter() - t0
                # From the post to the sixth request: five bash calls and their requests
                # (not the polls of wait_idle below, which cost the server CPU).
                for k, v in parts[prime].items():
                    cpu[prime][k] = cpu[prime].get(k, 0.0) + cpu_s(v) - before[k]
                model_cpu += cpu_s(model) - before_model
                wait_idle(srv, sid)
                arrived, ended = fm.arrived, fm.ended
                steps[prime] += [(arrived[n + k + 1] - ended[ends + k]) * 1000 for k in range(5)]
    finally:
        for srv, _ in servers.values():
            srv.stop()
        fm.stop()
    calls = turns * 5
    out: dict[str, Any] = {f"prime{p}": median(v) for p, v in steps.items()}
    for p, used in cpu.items():
        out[f"cpu{p}"] = {k: v * 1000 / calls for k, v in used.items()}
    out["cpu_model"] = model_cpu * 1000 / (2 * calls)
    out["wall1"], out["wall0"] = (wall[p] * 1000 / calls for p in (1, 0))
    return out


def run(pool: int, trials: int, tmp: Path) -> dict[str, Any]:
    """Every measure with ``pool`` spare kernels."""
    fm = ModelProcess().start()
    out: dict[str, Any] = {"pool": pool}
    starts: list[float] = []
    srv = None
    try:
        for i in range(max(3, trials // 2)):  # server start -> first message
            d = tmp / f"start{pool}-{i}"
            d.mkdir()
            srv = Server(d, fm.url, pool)
            srv.wait_up()
            sid = srv.call("POST", "api/think/sessions", {"title": "b"})["id"]
            fm.reply(text="hi")
            starts.append(post_to_model(srv, fm, sid, "hello"))
            srv.stop()
            srv = None
        out["after_start_ms"] = median(starts)
        d = tmp / f"warm{pool}"
        d.mkdir()
        srv = Server(d, fm.url, pool)
        srv.wait_up()
        new_chat, warm, bash_turn = [], [], []
        sids = []
        for i in range(trials):
            if pool:
                wait_for(lambda: spares(srv) >= 1, 60)  # type: ignore[union-attr]
            sid = srv.call("POST", "api/think/sessions", {"title": f"c{i}"})["id"]
            sids.append(sid)
            fm.reply(text="hi")
            new_chat.append(post_to_model(srv, fm, sid, "hello"))
            fm.reply(text="again")
            warm.append(post_to_model(srv, fm, sid, "again"))
        out["new_chat_ms"], out["warm_ms"] = median(new_chat), median(warm)
        for _ in range(trials):
            if pool:
                wait_for(lambda: spares(srv) >= 1, 60)  # type: ignore[union-attr]
            sid = srv.call("POST", "api/think/sessions", {"title": "bash"})["id"]
            sids.append(sid)
            fm.reply(tool_calls=[("bash", {"command": "echo hi"})])
            fm.reply(text="done")
            n = len(fm.arrived)
            ends = len(fm.ended)
            srv.call("POST", f"api/think/sessions/{sid}/messages", {"content": "run"})
            fm.wait("arrived", n + 2)
            bash_turn.append((fm.arrived[n + 1] - fm.ended[ends]) * 1000)
            wait_idle(srv, sid)
        out["first_bash_ms"] = median(bash_turn)
        # Right after the last new chat took the spare, its successor is starting (a kernel
        # and its sandbox: most of a core for a while). Shown apart from the figures
        # below, which are measured once the pool is full again, as the other measures are.
        during = [asyncio.run(burst(srv, fm, sids[0], 200)) for _ in range(trials)]
        out["burst_end_refill_ms"] = median([b["end_ms"] for b in during])
        out["first_token_refill_ms"] = median([b["first_ms"] for b in during])
        if pool:
            wait_for(lambda: spares(srv) >= 1, 120)  # type: ignore[union-attr]
            time.sleep(1.0)  # and its sandbox, started once the kernel is ready
        # At least 15: on 2 cores the model, the kernel, the server and the client all want
        # one during a burst, and these figures scatter with the scheduler.
        many = max(trials, 15)
        bursts = [asyncio.run(burst(srv, fm, sids[0], 200)) for _ in range(many)]
        out["burst_frames"] = median([b["frames"] for b in bursts])
        out["burst_end_ms"] = median([b["end_ms"] for b in bursts])
        out["first_token_ms"] = median([b["first_ms"] for b in bursts])
        # The same path when the model streams at a real model's pace (2 ms a token): in a
        # burst, the model and the kernel each keep one of two cores busy, and the server and
        # the client wait for the scheduler.
        paced = [asyncio.run(burst(srv, fm, sids[0], 20, 0.002)) for _ in range(many)]
        out["first_token_paced_ms"] = median([b["first_ms"] for b in paced])
        if pool:
            wait_for(lambda: spares(srv) >= 1, 120)  # type: ignore[union-attr]
            time.sleep(1.0)  # let the spare settle (its first imports fault pages in)
        kernels = srv.call("GET", "api/think/kernels")
        out["chat_rss_mb"] = median(
            [rss_mb(tree(k["pid"])) for k in kernels["kernels"] if k.get("session_id")]
        )
        spare_pids = [k["pid"] for k in kernels["kernels"] if not k.get("session_id")]
        out["spare_rss_mb"] = median([rss_mb(tree(p)) for p in spare_pids if p])
        out["spare_kernel_rss_mb"] = median([rss_mb([p]) for p in spare_pids if p])
    finally:
        if srv is not None:
            srv.stop()
        fm.stop()
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run and print; returns the figures (bench/all.py uses them)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--pool", type=int, default=1)
    ap.add_argument("--trials", type=int, default=0)
    args = ap.parse_args(argv)
    trials = args.trials or (5 if args.quick else 9)
    ensure_bytecode()
    with tempfile.TemporaryDirectory() as tmp:
        res = run(args.pool, trials, Path(tmp))
        res["five_bash_step_ms"] = five_bash_turns(trials, Path(tmp))
    print(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
