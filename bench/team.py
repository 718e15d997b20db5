"""A team on one server: a real JupyterHub on this machine (tests/hub's set-up: local system
users, the local process spawner, configurable-http-proxy), each user with several chats, all
through the hub's proxy with each user's own token; the model is scripted, one per user.

    python bench/team.py [--users 10] [--chats 3]

Each user opens ``chats - 1`` idle chats (one plain message each), then every user's last chat
runs a tool turn at the same time as everyone else's: a sandboxed ``bash`` that sleeps a
moment, prints the user's marker and uid, and tries to read another user's store. Checked:
every answer is in its own session, with its own user's marker and uid, and the other store
refused. Printed: the machine's memory in use (MemTotal - MemAvailable) before the hub, with
every server up, with the idle chats, at its peak during the tool turns; each user's PSS and
process count (every process of their uid); and the budget those figures are held to.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fake_model import FakeModel  # noqa: E402
from tests.hub.conftest import (  # noqa: E402
    Hub,
    HubUser,
    install_chp,
    local_users,
    running_hub,
    store_files,
    user_footprint,
)
from tests.waiting import wait_until  # noqa: E402

# What the machine may use for a team of 10 users with 3 chats each, one tool turn running per
# user, on top of what it used before the hub started (docs/jupyterhub.md gives the figures).
BUDGET_PER_USER_MB = 600.0
SETTLE_S = 10.0  # the idle chats' sandboxes import numpy & co after their turn
# Ten servers start at once on a small machine: more time than the hub's default.
EXTRA = "c.Spawner.start_timeout = 900\nc.Spawner.http_timeout = 900\n"
TOOL = (
    "sleep 3; echo marker={marker}; echo uid=$(id -u); "
    "cat {store} >/dev/null 2>&1 && echo store=READABLE || echo store=refused"
)


def used_mb() -> float:
    """The machine's memory in use: MemTotal - MemAvailable, in MB."""
    vm = psutil.virtual_memory()
    return (vm.total - vm.available) / 2**20


def chat(hub: Hub, user: HubUser, fm: FakeModel, prompt: str, answer: str) -> list[dict]:
    """A new session of ``user``: post ``prompt``, wait for ``answer``; its messages."""
    base = f"/user/{user.name}/api/think"
    with hub.client() as client:
        r = client.post(f"{base}/sessions", json={"title": prompt[:20]}, headers=user.headers())
        assert r.status_code == 201, r.text
        sid = r.json()["id"]
        r = client.post(
            f"{base}/sessions/{sid}/messages", json={"content": prompt}, headers=user.headers()
        )
        assert r.status_code == 201, r.text

        def done() -> list[dict] | None:
            r = client.get(f"{base}/sessions/{sid}/messages", headers=user.headers())
            msgs = r.json()["messages"]
            ok = any(m["role"] == "assistant" and m["status"] == "complete"
                     and m["content"] == answer for m in msgs)  # fmt: skip
            return msgs if ok else None

        return wait_until(done, 600, f"{user.name}'s answer {answer!r}", every=0.5)


def idle_chats(hub: Hub, user: HubUser, fm: FakeModel, n: int) -> None:
    """``n`` chats of one plain message each, one after the other (one script per user)."""
    for i in range(n):
        answer = f"idle {i} of {user.name}"
        fm.reply(text=answer)
        msgs = chat(hub, user, fm, f"hello {i}", answer)
        assert [m["content"] for m in msgs if m["role"] == "assistant"] == [answer], msgs


def tool_turn(hub: Hub, user: HubUser, fm: FakeModel, other_store: str) -> str:
    """The user's tool turn; the sandboxed bash's output (checked to be the user's own)."""
    marker = f"team-{user.name}"
    fm.reply(tool_calls=[("bash", {"command": TOOL.format(marker=marker, store=other_store)})])
    fm.reply(text=f"done for {user.name}")
    msgs = chat(hub, user, fm, "run the probe", f"done for {user.name}")
    out = "\n".join(m["content"] or "" for m in msgs if m["role"] == "tool")
    assert f"marker={marker}" in out and f"uid={user.uid}" in out, out
    assert "store=refused" in out, out
    return out


def peak(sample: Callable[[], float], stop: threading.Event, into: list[float]) -> None:
    """Append ``sample()`` every 0.2 s until ``stop``."""
    while not stop.wait(0.2):
        into.append(sample())


def run(users: int, chats: int, tmp: Path) -> dict[str, Any]:
    """Every measure on one hub."""
    out: dict[str, Any] = {"users": users, "chats_per_user": chats}
    chp = install_chp()
    names = [f"u{i}" for i in range(users)]
    models = {n: FakeModel().start() for n in names}
    try:
        out["before_hub_mb"] = used_mb()
        with local_users(names) as people:
            urls = {n: fm.url for n, fm in models.items()}
            t0 = time.monotonic()
            (tmp / "hub").mkdir()
            with running_hub(tmp / "hub", chp, people, urls, EXTRA) as hub:
                out["hub_up_s"] = time.monotonic() - t0
                time.sleep(SETTLE_S)  # each server's spare kernel settles
                out["servers_up_mb"] = used_mb()
                with ThreadPoolExecutor(users) as pool:
                    list(pool.map(lambda n: idle_chats(hub, people[n], models[n], chats - 1),
                                  names))  # fmt: skip
                time.sleep(SETTLE_S)
                out["idle_chats_mb"] = used_mb()
                stores = {n: str(store_files(people[n].home)[0]) for n in names}
                samples: list[float] = []
                stop = threading.Event()
                sampler = threading.Thread(target=peak, args=(used_mb, stop, samples))
                sampler.start()
                try:
                    with ThreadPoolExecutor(users) as pool:
                        others = {n: stores[names[(i + 1) % users]] for i, n in enumerate(names)}
                        list(pool.map(lambda n: tool_turn(hub, people[n], models[n], others[n]),
                                      names))  # fmt: skip
                finally:
                    stop.set()
                    sampler.join()
                out["tool_turns_peak_mb"] = max(samples, default=used_mb())
                per_user = [user_footprint(people[n].uid) for n in names]
                out["user_pss_mb_median"] = statistics.median(p for p, _ in per_user)
                out["user_pss_mb_max"] = max(p for p, _ in per_user)
                out["user_procs_median"] = statistics.median(c for _, c in per_user)
    finally:
        for fm in models.values():
            fm.stop()
    budget = BUDGET_PER_USER_MB * users
    out["budget_mb"] = budget
    out["used_by_team_mb"] = out["tool_turns_peak_mb"] - out["before_hub_mb"]
    out["within_budget"] = out["used_by_team_mb"] <= budget
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run and print; returns the figures."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=10)
    ap.add_argument("--chats", type=int, default=3, help="per user, one of them a tool turn")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="think-team-") as tmp:
        res = run(args.users, max(1, args.chats), Path(tmp))
    print(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
