"""A server killed mid-run: the next server recovers the run from SQLite; a server stopped
with SIGINT stops cleanly (real processes)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import psutil
import pytest
import websocket

from tests.procs import marked_loop, processes_with
from tests.waiting import wait_until

from .conftest import write_kernelspec

TOKEN = "restart-token"
pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``jupyter server`` in a subprocess of its own (its own process group)."""

    def __init__(self, tmp: Path, env: dict[str, str]) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log = open(tmp / f"server-{self.port}.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyter_server",
                "--allow-root",
                "--no-browser",
                f"--port={self.port}",
                "--ServerApp.port_retries=0",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.token={TOKEN}",
                f"--ServerApp.root_dir={tmp / 'root'}",
            ],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,  # no terminal, as under JupyterHub or systemd
            start_new_session=True,
        )

    def call(self, method: str, path: str, body=None):
        req = urllib.request.Request(
            self.url + "api/think/" + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {TOKEN}"},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            text = resp.read().decode()
        return json.loads(text) if text else None

    def wait_up(self, timeout: float = 60) -> None:
        wait_until(lambda: self._up(), timeout, "server up")

    def _up(self) -> bool:
        assert self.proc.poll() is None, "server exited"
        try:
            self.call("GET", "sessions")
            return True
        except (urllib.error.URLError, ConnectionError):
            return False

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


def _setup(tmp_path, fake_model) -> dict[str, str]:
    (tmp_path / "root").mkdir()
    data, config = tmp_path / "data", tmp_path / "config"
    write_kernelspec(data)
    config.mkdir()
    (config / "jupyter_server_config.json").write_text(
        json.dumps(
            {
                "ServerApp": {"jpserver_extensions": {"jupyter_ext": True}},
                "ThinkExtension": {
                    "heartbeat_interval": 0.3,
                    "stale_timeout": 2.0,
                    "retry_delays": [0.5, 1.0],
                },
            }
        )
    )
    env = {
        **os.environ,
        "JUPYTER_DATA_DIR": str(data),
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTER_PATH": str(data),
        "OPENAI_BASE_URL": fake_model.url,
        "OPENAI_API_KEY": "k",
        "THINK_MODEL": "fake",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    return env


def test_server_restart_mid_run_recovers(tmp_path, fake_model):
    env = _setup(tmp_path, fake_model)
    fake_model.reply(text="y" * 2000, chunk_size=2, delay=0.02)  # ~20 s: killed before the end
    fake_model.reply(text="Answer after the restart.")
    first = Server(tmp_path, env)
    try:
        first.wait_up()
        sid = first.call("POST", "sessions", {"title": "durable"})["id"]
        sent = first.call("POST", f"sessions/{sid}/messages", {"content": "long task"})
        wait_until(
            lambda: any(
                e["type"] == "text_delta"
                for e in first.call("GET", f"sessions/{sid}/events")["events"]
            ),
            60,
            "streaming started",
        )
    finally:
        first.kill()
    second = Server(tmp_path, env)
    try:
        second.wait_up()

        def finished():
            run = second.call("GET", f"sessions/{sid}")["run"]
            return run is None and second.call("GET", f"sessions/{sid}/messages")

        page = wait_until(finished, 90, "the run to finish on the second server")
        rows = [(m["role"], m["status"]) for m in page["messages"]]
        assert rows.count(("user", "complete")) == 1, rows
        assert page["messages"][-1]["content"] == "Answer after the restart.", [
            (m["role"], m["status"], m["content"][:30], m["error"]) for m in page["messages"]
        ]
        assert page["messages"][-1]["status"] == "complete"
        assert ("assistant", "error") in rows  # the stream the first server lost, kept
        events = second.call("GET", f"sessions/{sid}/events")["events"]
        kinds = [e["type"] for e in events]
        assert "task_retrying" in kinds and kinds[-1] == "task_complete", kinds
        retry = next(e for e in events if e["type"] == "task_retrying")
        assert "server stopped" in retry["data"]["detail"]
        assert sent["run_id"] == events[-1]["data"]["task_id"]
    finally:
        second.kill()


def test_server_killed_during_a_tool_call_recovers(tmp_path, fake_model):
    env = _setup(tmp_path, fake_model)
    marker = f"restartmark{uuid.uuid4().hex[:8]}"
    fake_model.reply(tool_calls=[("bash", {"command": marked_loop(marker, "sleep 0.2")})])
    fake_model.reply(text="Answer after the restart.")
    fake_model.reply(text="Next answer.")
    first = Server(tmp_path, env)
    try:
        first.wait_up()
        sid = first.call("POST", "sessions", {"title": "durable"})["id"]
        sent = first.call("POST", f"sessions/{sid}/messages", {"content": "run a command"})
        wait_until(lambda: processes_with(marker), 90, "the tool runs in the sandbox")
    finally:
        first.kill()
    second = Server(tmp_path, env)
    try:
        second.wait_up()

        def finished():
            run = second.call("GET", f"sessions/{sid}")["run"]
            return run is None and second.call("GET", f"sessions/{sid}/messages")

        page = wait_until(finished, 120, "the run to finish on the second server")
        rows = page["messages"]
        assert [m["content"] for m in rows if m["role"] == "user"] == ["run a command"]
        assert (
            rows[-1]["content"] == "Answer after the restart." and rows[-1]["status"] == "complete"
        )
        assert len([m for m in rows if m["role"] == "assistant" and m["tool_calls"]]) == 1
        wait_until(lambda: not processes_with(marker), 30, "the old run's process gone")
        events = second.call("GET", f"sessions/{sid}/events")["events"]
        assert events[-1]["type"] == "task_complete"
        assert events[-1]["data"]["task_id"] == sent["run_id"]
        # the next message is answered
        second.call("POST", f"sessions/{sid}/messages", {"content": "and now?"})
        page = wait_until(finished, 90, "the next run")
        assert page["messages"][-1]["content"] == "Next answer."
    finally:
        second.kill()


def test_sigint_without_a_terminal_stops_the_server_and_its_kernels(tmp_path, fake_model):
    """JupyterHub stops a user's server with SIGINT, with no terminal: the server must shut its
    chat kernels down and exit (it ended its loop with no cleanup, then the store's SQLite
    thread kept it alive until SIGKILL)."""
    env = _setup(tmp_path, fake_model)
    fake_model.reply(text="Hello.")
    server = Server(tmp_path, env)
    try:
        server.wait_up()
        sid = server.call("POST", "sessions", {"title": "sigint"})["id"]
        server.call("POST", f"sessions/{sid}/messages", {"content": "hi"})
        wait_until(
            lambda: (
                server.call("GET", f"sessions/{sid}")["run"] is None
                and server.call("GET", f"sessions/{sid}/messages")["messages"][-1]["content"]
                == "Hello."
            ),
            90,
            "the answer",
        )
        kernels = [
            p
            for p in psutil.Process(server.proc.pid).children(recursive=True)
            if "think_kernel" in _cmdline(p)
        ]
        assert kernels, "no think kernel was started for the chat"
        os.kill(server.proc.pid, signal.SIGINT)
        try:
            server.proc.wait(60)
        except subprocess.TimeoutExpired:
            raise AssertionError("the server did not exit within 60 s of SIGINT") from None
        _, alive = psutil.wait_procs(kernels, timeout=30)
        assert not alive, f"kernels left running: {alive}"
        log = (tmp_path / f"server-{server.port}.log").read_text()
        # Shut down, not left to die with the server (the extension shuts its chat kernels
        # down itself, before jupyter_server's own pass over the rest).
        assert "Kernel shutdown:" in log, log[-2000:]
    finally:
        if server.proc.poll() is None:
            server.kill()


def _cmdline(proc: psutil.Process) -> str:
    """A process's command line; empty for one that exited (a zombie not reaped yet: the
    preloaded kernel process the server let go, a sandbox helper)."""
    try:
        return " ".join(proc.cmdline())
    except psutil.Error:
        return ""


def test_a_reminder_due_while_the_server_was_down_fires_once_late(tmp_path, fake_model):
    """The model sets a reminder; the server is killed (SIGKILL) before it is due;
    its time passes while nothing runs; the next server fires it once at start, marked late,
    and its run is answered; a tab that connects then is shown it."""
    env = _setup(tmp_path, fake_model)
    fake_model.reply(
        tool_calls=[("schedule_reminder", {"when": "in 15 seconds", "message": "check the oven"})]
    )
    fake_model.reply(text="Set.")
    fake_model.reply(text="Oven checked.")
    t0 = time.time()
    first = Server(tmp_path, env)
    try:
        first.wait_up()
        sid = first.call("POST", "sessions", {"title": "oven"})["id"]
        first.call("POST", f"sessions/{sid}/messages", {"content": "remind me about the oven"})

        def set_and_answered():
            rows = first.call("GET", f"sessions/{sid}/schedules?kind=reminder")["schedules"]
            idle = first.call("GET", f"sessions/{sid}")["run"] is None
            return idle and rows

        [row] = wait_until(set_and_answered, 90, "the reminder set")
        assert row["status"] == "pending"
        due = row["due_at"]
        assert time.time() < due - 1, "too slow to kill the server before the reminder was due"
    finally:
        first.kill()
    wait_until(
        lambda: time.time() > due + 1, 30, "the reminder's time to pass while no server runs"
    )
    second = Server(tmp_path, env)
    try:
        second.wait_up()

        def answered():
            page = second.call("GET", f"sessions/{sid}/messages")["messages"]
            run = second.call("GET", f"sessions/{sid}")["run"]
            return run is None and page[-1]["content"] == "Oven checked." and page

        page = wait_until(answered, 90, "the late reminder's run answered")
        reminders = [
            m
            for m in page
            if m["role"] == "user" and any(a["kind"] == "reminder" for a in m["attachments"] or [])
        ]
        assert len(reminders) == 1, [(m["role"], m["content"][:60]) for m in page]
        [mark] = reminders[0]["attachments"]
        assert mark["late"] is True and mark["due_at"] == due
        assert "late" in reminders[0]["content"] and reminders[0]["content"].endswith(
            ": check the oven"
        )
        view = second.call("GET", f"sessions/{sid}/schedules?kind=reminder")
        [row] = view["schedules"]
        assert row["status"] == "done" and row["fired_count"] == 1
        [firing] = view["firings"]
        assert firing["late"] is True and firing["status"] == "done" and firing["attempts"] == 1
        assert firing["outcome"]["message_id"] == reminders[0]["id"]
        # A JupyterLab tab that connects now is notified of it (marked late).
        ws = websocket.create_connection(
            second.url.replace("http", "ws", 1) + f"api/think/notifications?since={t0}",
            header=[f"Authorization: token {TOKEN}"],
            timeout=10,
        )
        try:
            frames = [json.loads(ws.recv()) for _ in range(2)]
        finally:
            ws.close()
        assert [f["type"] for f in frames] == ["hello", "reminder"]
        assert frames[1]["late"] is True and frames[1]["session_id"] == sid
        assert frames[1]["message"] == "check the oven"
    finally:
        second.kill()
