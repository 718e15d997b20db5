"""Reminders on a real server with real kernels: the model schedules one in a chat, the kernel
wakes the server's scheduler over its link, the reminder fires into the session as a message
that starts a run, every tab is notified; firings are idempotent; the schedules API."""

from __future__ import annotations

import json
import os
import time

import pytest
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

from jupyter_ext.reminders import ReminderFiring
from tests.waiting import until
from think_kernel.schedules import reminders
from think_kernel.schedules.scheduler import Firing

from .conftest import WSClient

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def think_config():
    # The scheduler's own poll is a minute: a reminder that fires in seconds proves the
    # kernel woke it over the link.
    return {
        "heartbeat_interval": 0.2,
        "stale_timeout": 3.0,
        "retry_delays": [0.2, 0.4],
        "kernel_pool_size": 0,
        "scheduler_poll": 60.0,
    }


@pytest.fixture
async def notifications(jp_ws_fetch, think):
    """``tab = await notifications(since=...)``: a tab's user-level notification socket."""
    opened: list[WSClient] = []

    async def connect(since: float | None = None) -> WSClient:
        params = {"since": str(since)} if since is not None else None
        conn = await jp_ws_fetch("api", "think", "notifications", params=params)
        client = WSClient(conn)
        opened.append(client)
        await until(lambda: client.of("hello"), 10, "the hello frame")
        return client

    yield connect
    for client in opened:
        client.conn.close()


async def test_a_reminder_set_by_the_model_fires_into_its_chat(
    model_env, api, ws, think, notifications
):
    t0 = time.time()
    model_env.reply(
        tool_calls=[("schedule_reminder", {"when": "in 2 seconds", "message": "stretch"})]
    )
    model_env.reply(text="Set.")
    model_env.reply(text="Stretched.")
    _, s = await api("POST", "sessions", {"title": "reminders"})
    sid = s["id"]
    tab = await ws(sid)
    bell = await notifications()
    await api("POST", f"sessions/{sid}/messages", {"content": "remind me to stretch"})

    frame = (await until(lambda: bell.of("reminder"), 60, "the reminder notification"))[0]
    assert frame["session_id"] == sid and frame["session_title"] == "reminders"
    assert frame["message"] == "stretch" and frame["late"] is False
    assert frame["key"].startswith(frame["schedule_id"] + ":")
    assert frame["fired_at"] - frame["due_at"] < 5  # woken at once, not after a minute's poll

    def answered():
        return [f for f in tab.of("message") if f["message"]["role"] == "user"][1:] and any(
            f.get("type") == "chat" and "Stretched." in json.dumps(f) for f in tab.frames
        )

    await until(answered, 60, "the reminder's run answered")
    _, page = await api("GET", f"sessions/{sid}/messages")
    users = [m for m in page["messages"] if m["role"] == "user"]
    assert [u["content"] for u in users][0] == "remind me to stretch"
    reminder = users[1]
    assert reminder["id"] == frame["message_id"] == reminders.message_id(frame["key"])
    assert reminder["content"].startswith("Reminder (set for ") and reminder["content"].endswith(
        ": stretch"
    )
    mark = reminder["attachments"][0]
    assert mark["kind"] == "reminder" and mark["late"] is False
    assert page["messages"][-1]["content"] == "Stretched."
    # The model read the reminder as the request of that run.
    assert "stretch" in json.dumps(model_env.requests[-1]["messages"][-1])

    _, view = await api("GET", f"sessions/{sid}/schedules")
    [row] = view["schedules"]
    assert row["kind"] == "reminder" and row["status"] == "done" and row["fired_count"] == 1
    assert row["reminder"]["message"] == "stretch"
    [firing] = view["firings"]
    assert firing["key"] == frame["key"] and firing["status"] == "done"
    assert firing["late"] is False and firing["outcome"]["run_id"] == frame["run_id"]
    _, everything = await api("GET", "schedules", kind="reminder")
    assert [r["id"] for r in everything["schedules"]] == [row["id"]]

    # A tab that connects later asks for what fired since it last looked.
    late_tab = await notifications(since=t0)
    await until(lambda: late_tab.of("reminder"), 10, "the replayed notification")
    assert late_tab.of("reminder")[0]["key"] == frame["key"]
    newer = await notifications(since=time.time())
    await newer.send({"type": "ping"})
    await until(lambda: newer.of("pong"), 10, "pong")
    assert newer.of("reminder") == []


async def test_a_firing_run_twice_posts_one_message_and_one_run(model_env, api, think):
    """The server died after posting (and maybe after starting the run): the next attempt at
    the same firing finds them instead of posting again."""
    model_env.reply(text="On it.")
    _, s = await api("POST", "sessions", {"title": "idempotent"})
    sid = s["id"]
    svc = think.services
    row_id = await svc.store.add_schedule("reminder", time.time() + 3600, {"message": "m"}, sid)
    firing = Firing(
        key=f"{row_id}:123",
        schedule_id=row_id,
        kind="reminder",
        session_id=sid,
        occurrence_at=time.time(),
        attempt=1,
        late=True,
    )
    # An attempt that died between storing the message and storing its run.
    await svc.store.add_message(sid, "user", "half posted", id=reminders.message_id(firing.key))
    fire = ReminderFiring(svc).fire
    first = await fire({"message": "m"}, firing)
    again = await fire({"message": "m"}, firing)
    assert first == again and first["message_id"] == reminders.message_id(firing.key)
    _, page = await api("GET", f"sessions/{sid}/messages")
    assert [m["content"] for m in page["messages"] if m["role"] == "user"] == ["half posted"]
    runs = await svc.store._all("SELECT id FROM runs WHERE session_id = ?", (sid,))
    assert [r["id"] for r in runs] == [first["run_id"]]

    async def answered():
        return (await svc.store.get_run(first["run_id"]))["status"] == "complete"

    await until(answered, 60, "the run answered")


async def test_the_schedules_api(api, think):
    _, s = await api("POST", "sessions", {"title": "api"})
    sid = s["id"]
    store = think.services.store
    rem = await store.add_schedule(
        "reminder",
        time.time() + 3600,
        {"message": "later", "when": "in 1 h", "tz": "UTC"},
        sid,
        tz="UTC",
    )
    retry = await store.add_schedule("run_retry", time.time() + 3600, {"run_id": "r"}, sid)
    code, view = await api("GET", f"sessions/{sid}/schedules")
    assert code == 200 and {r["id"] for r in view["schedules"]} == {rem, retry}
    assert next(r for r in view["schedules"] if r["id"] == rem)["reminder"]["due"].endswith("UTC")
    code, view = await api("GET", f"sessions/{sid}/schedules", kind="run_retry")
    assert [r["id"] for r in view["schedules"]] == [retry]
    assert (await api("GET", f"sessions/{sid}/schedules", status="bogus"))[0] == 400
    assert (await api("GET", f"sessions/{sid}/schedules", kind="a b"))[0] == 400
    assert (await api("GET", "sessions/nope/schedules"))[0] == 404
    # Only reminders can be cancelled here; a run's retry belongs to the server.
    assert (await api("DELETE", f"sessions/{sid}/schedules/{retry}"))[0] == 404
    code, row = await api("DELETE", f"sessions/{sid}/schedules/{rem}")
    assert code == 200 and row["status"] == "cancelled"
    assert (await api("DELETE", f"sessions/{sid}/schedules/{rem}"))[0] == 409
    code, view = await api("GET", "schedules", status="cancelled")
    assert code == 200 and [r["id"] for r in view["schedules"]] == [rem]
    # Deleting the session deletes its schedules.
    await api("DELETE", f"sessions/{sid}")
    assert await store.get_schedule(rem) is None


async def test_the_notifications_socket_needs_auth(api, jp_http_port, jp_base_url, notifications):
    await api("GET", "sessions")
    url = f"ws://127.0.0.1:{jp_http_port}{jp_base_url}api/think/notifications"
    for headers in ({}, {"Authorization": "token wrong"}):
        with pytest.raises(HTTPClientError) as info:
            await websocket_connect(HTTPRequest(url, headers=headers))
        assert info.value.code == 403
    tab = await notifications()
    await tab.conn.write_message("not json")
    await until(lambda: tab.of("error"), 10, "an error frame")
    with pytest.raises(HTTPClientError) as info:
        await notifications(since=float("nan"))  # type: ignore[arg-type]
    assert info.value.code == 400


async def test_a_think_notebook_shows_its_reminder_in_the_next_output(
    model_env, api, think, jp_serverapp, jp_root_dir
):
    """A think notebook's kernel linked to the server: the model sets a reminder there, the
    server fires it into the notebook's session (a run, answered), and the notebook's next
    cell output shows it with the answer."""
    model_env.reply(
        tool_calls=[("schedule_reminder", {"when": "in 1 second", "message": "stretch"})]
    )
    model_env.reply(text="Set.")
    model_env.reply(text="Stretched.")
    km = jp_serverapp.kernel_manager
    env = {**os.environ, "THINK_SERVER_URL": think.server_url(), "THINK_TIMEZONE": "UTC"}
    kid = await km.start_kernel(kernel_name="think", path="", env=env)
    kc = km.get_kernel(kid).client()
    kc.start_channels()
    try:
        await kc.wait_for_ready(timeout=60)
        await cell(kc, "remind me to stretch")
        store = think.services.store

        async def fired():
            rows = await store.list_firings(kind="reminder")
            return rows and await store.reply_text(rows[0]["outcome"]["message_id"])

        assert await until(fired, 60, "the reminder fired and answered") == "Stretched."
        [firing] = await store.list_firings(kind="reminder")
        session = await store.get_session(firing["session_id"])
        assert session is not None and session["kind"] == "notebook"
        # Fired by the server (a run of its own), not by the kernel on its own.
        assert firing["outcome"]["run_id"], firing
        outputs = await cell(kc, "%think_status")
        notes = [o for o in outputs if "Reminder" in o]
        assert len(notes) == 1 and "stretch" in notes[0] and "> Stretched." in notes[0]
        assert not [o for o in await cell(kc, "%think_status") if "Reminder" in o]
    finally:
        kc.stop_channels()
        await km.shutdown_kernel(kid, now=True)


async def cell(kc, code: str, timeout: float = 60) -> list[str]:
    """Run a cell in a kernel; the Markdown of its display outputs."""
    msg_id = kc.execute(code)
    out: list[str] = []
    end = time.monotonic() + timeout
    while True:
        msg = await kc.get_iopub_msg(timeout=max(0.1, end - time.monotonic()))
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        content = msg["content"]
        if msg["msg_type"] == "status" and content["execution_state"] == "idle":
            return out
        if msg["msg_type"] == "display_data":
            out.append(str(content["data"].get("text/markdown", "")))
