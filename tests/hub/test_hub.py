"""Many users on one JupyterHub: each user's server carries Think; each
user has their own agent (think kernels under their uid), store and sandbox; nobody can list,
read or send to another user's sessions. Everything goes through the hub's proxy with each
user's own API token, as a browser or a script would.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.waiting import wait_until

from ..fake_model import FakeModel
from .conftest import Hub, HubUser, as_json, session_ids, store_files, user_footprint

# The module's hub (proxy, two servers, kernels) starts inside the first test's time.
pytestmark = pytest.mark.timeout(600)

# What each user's sandboxed bash prints: who it runs as, how many processes it sees (a pid
# namespace shows a handful), its user-namespace mapping, and whether it can read the other
# user's store and home.
PROBE = (
    "echo uid=$(id -u); echo procs=$(ls -d /proc/[0-9]* | wc -l); "
    "echo uidmap=$(cat /proc/self/uid_map | tr -s ' ' | tr ' ' _); "
    "cat {store} >/dev/null 2>&1 && echo store=READABLE || echo store=refused; "
    "ls {home} >/dev/null 2>&1 && echo home=READABLE || echo home=refused"
)


@dataclass
class Run:
    """One user's finished chat run."""

    user: HubUser
    session_id: str
    probe: str  # the sandboxed bash output


def api(user: HubUser, owner: HubUser | None = None) -> str:
    """The Think API prefix on ``owner``'s server (default: the user's own), via the proxy."""
    return f"/user/{(owner or user).name}/api/think"


def finished(client: httpx.Client, user: HubUser, sid: str, text: str) -> list[dict] | None:
    """The session's messages once an assistant message containing ``text`` is complete."""
    r = client.get(f"{api(user)}/sessions/{sid}/messages", headers=user.headers())
    assert r.status_code == 200, as_json(r)
    msgs = r.json()["messages"]
    done = any(
        m["role"] == "assistant" and m["status"] == "complete" and text in (m["content"] or "")
        for m in msgs
    )
    return msgs if done else None


def run_probe(hub: Hub, fm: FakeModel, user: HubUser, other: HubUser, other_store: str) -> Run:
    """Create a session as ``user``, have the agent run PROBE in its sandbox, wait for it."""
    fm.reply(tool_calls=[("bash", {"command": PROBE.format(store=other_store, home=other.home)})])
    fm.reply(text=f"Probed for {user.name}.")
    with hub.client() as client:
        r = client.post(f"{api(user)}/sessions", json={"title": "hub"}, headers=user.headers())
        assert r.status_code == 201, as_json(r)
        sid = r.json()["id"]
        r = client.post(
            f"{api(user)}/sessions/{sid}/messages",
            json={"content": "Probe your sandbox."},
            headers=user.headers(),
        )
        assert r.status_code == 201, as_json(r)
        msgs = wait_until(
            lambda: finished(client, user, sid, f"Probed for {user.name}."),
            120,
            "the run",
            every=0.25,
        )
    tool = [m for m in msgs if m["role"] == "tool"]
    assert tool, msgs
    return Run(user, sid, "\n".join(m["content"] or "" for m in tool))


def bwrap_works_for(user: HubUser) -> bool:
    """Whether bubblewrap can make its namespaces for this (non-root) user on this machine."""
    probe = subprocess.run(
        ["su", "-s", "/bin/sh", user.name, "-c",
         "bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev true"],
        capture_output=True,
    )  # fmt: skip
    return probe.returncode == 0


@pytest.fixture(scope="module")
def runs(hub: Hub, hub_models: dict[str, FakeModel]) -> Iterator[dict[str, Run]]:
    """Each user's agent, at the same time, probes the other user's store and home."""
    ann, bob = hub.users["ann"], hub.users["bob"]
    stores = {
        who: wait_until(lambda u=u: store_files(u.home), 60, f"{u.name}'s store", every=0.1)
        for who, u in hub.users.items()
    }
    assert all(len(found) == 1 for found in stores.values()), stores
    with ThreadPoolExecutor(2) as pool:
        futures = {
            "ann": pool.submit(run_probe, hub, hub_models["ann"], ann, bob, str(stores["bob"][0])),
            "bob": pool.submit(run_probe, hub, hub_models["bob"], bob, ann, str(stores["ann"][0])),
        }
        done = {who: f.result() for who, f in futures.items()}
    yield done


def _value(probe: str, key: str) -> str:
    for line in probe.splitlines():
        if line.startswith(f"{key}="):
            return line.split("=", 1)[1].strip()
    raise AssertionError(f"no {key}= in the probe output:\n{probe}")


def test_each_user_has_their_own_agent_store_and_sandbox(hub: Hub, runs: dict[str, Run]) -> None:
    """Kernels run as their user; each store is under its user's home, owned by them, and
    holds only their sessions; sandboxed code runs as the user, isolated on the best tier the
    machine gives a non-root user, and cannot read the other user's store or home."""
    ann, bob = hub.users["ann"], hub.users["bob"]
    for user in (ann, bob):
        kernels = [
            p for p in psutil.process_iter(["uids", "cmdline"])
            if "think_kernel" in " ".join(p.info["cmdline"] or [])
            and p.info["uids"] is not None and p.info["uids"].real == user.uid
        ]  # fmt: skip
        assert kernels, f"no think kernel runs as {user.name}"
        (store,) = store_files(user.home)
        assert store.stat().st_uid == user.uid
        assert store.stat().st_mode & 0o077 == 0 or store.parent.stat().st_mode & 0o077 == 0, (
            f"{store} is open to other users"
        )
        mine = {r.session_id for r in runs.values() if r.user is user}
        theirs = {r.session_id for r in runs.values() if r.user is not user}
        stored = session_ids(store)
        assert mine <= stored and not theirs & stored, (user.name, stored, mine, theirs)
    tier1 = bwrap_works_for(ann)
    for name in ("ann", "bob"):
        probe = runs[name].probe
        user = runs[name].user
        assert _value(probe, "uid") == str(user.uid), probe
        assert _value(probe, "store") == "refused", probe
        assert _value(probe, "home") == "refused", probe
        if tier1:
            # Tier 1: its own pid namespace (a handful of processes) inside a user namespace.
            assert int(_value(probe, "procs")) < 10, probe
            assert _value(probe, "uidmap") != "_0_0_4294967295", probe
    print(f"\nsandbox tier of a non-root hub user: {'1 (bubblewrap)' if tier1 else '2 or 3'}")


def test_users_cannot_reach_each_others_sessions(
    hub: Hub, runs: dict[str, Run], hub_models: dict[str, FakeModel]
) -> None:
    """With Bob's token, Ann's server refuses listing, reading, sending and the WebSocket;
    Bob's own server does not know Ann's session; no token gets nothing either. Ann's own
    token gets all of it (the control)."""
    ann, bob = hub.users["ann"], hub.users["bob"]
    sid = runs["ann"].session_id
    on_ann = api(bob, ann)
    with hub.client() as client:
        before = finished(client, ann, sid, "Probed")
        assert before is not None
        requests_before = {who: len(fm.requests) for who, fm in hub_models.items()}
        attempts = [
            ("GET", f"{on_ann}/sessions", None),
            ("GET", f"{on_ann}/sessions/{sid}", None),
            ("GET", f"{on_ann}/sessions/{sid}/messages", None),
            ("GET", f"{on_ann}/sessions/{sid}/actions", None),
            ("GET", f"{on_ann}/sessions/{sid}/events", None),
            ("POST", f"{on_ann}/sessions/{sid}/messages", {"content": "hi from bob"}),
            ("POST", f"{on_ann}/sessions", {"title": "bob was here"}),
            ("DELETE", f"{on_ann}/sessions/{sid}", None),
        ]
        for headers, who in ((bob.headers(), "bob's token"), ({}, "no token")):
            for method, path, body in attempts:
                r = client.request(method, path, json=body, headers=headers)
                assert r.status_code in (302, 401, 403), (who, method, path, r.status_code)
                assert sid not in r.text, (who, method, path)
        # Bob's own server has its own store: Ann's session is unknown there.
        r = client.get(f"{api(bob)}/sessions/{sid}", headers=bob.headers())
        assert r.status_code == 404, as_json(r)
        r = client.get(f"{api(bob)}/sessions", headers=bob.headers())
        assert r.status_code == 200 and sid not in r.text
        # Nothing reached Ann's session or the model.
        after = finished(client, ann, sid, "Probed")
        assert after == before
        assert {who: len(fm.requests) for who, fm in hub_models.items()} == requests_before
        r = client.get(f"{api(ann)}/sessions", headers=ann.headers())
        assert r.status_code == 200
        listed = {s["id"] for s in r.json()["sessions"]}
        bobs = {r.session_id for r in runs.values() if r.user is bob}
        assert sid in listed and not listed & bobs, r.json()

    ws = hub.url.replace("http://", "ws://") + f"{on_ann}/sessions/{sid}/ws"
    for headers in (bob.headers(), {}):
        with pytest.raises(InvalidStatus) as refused:
            connect(ws, additional_headers=headers, open_timeout=30).close()
        assert refused.value.response.status_code in (302, 401, 403)
    # The control: Ann's token opens her session's WebSocket through the proxy.
    with connect(ws, additional_headers=ann.headers(), open_timeout=30) as conn:
        first = conn.recv(timeout=30)
    assert '"sync"' in str(first) and sid in str(first)


def test_the_servers_carry_the_extension_and_the_lab_ui(hub: Hub) -> None:
    """Each user's server answers Think's API and its JupyterLab page loads the sidebar."""
    with hub.client() as client:
        for user in hub.users.values():
            r = client.get(f"/user/{user.name}/api/think/openapi.json", headers=user.headers())
            assert r.status_code == 200 and r.json()["info"]["title"] == "Think for Jupyter"

            def lab_page(u: HubUser = user) -> str | None:
                r = client.get(f"/user/{u.name}/lab", headers=u.headers())
                return r.text if r.status_code == 200 else None

            page = wait_until(lab_page, 30, f"{user.name}'s lab page", every=0.2)
            assert "@think/jupyter-think" in page
            assert Path(user.home).stat().st_uid == user.uid


# Every process of one hub user (their server, its spare kernel, their chats' kernels and
# sandboxes) stays under this, with two chats, one of them having run a tool; bench/team.py
# measures ten users with three chats each (docs/jupyterhub.md).
USER_BUDGET_MB = 600


def test_a_second_chat_each_answers_apart_within_the_memory_budget(
    hub: Hub, runs: dict[str, Run], hub_models: dict[str, FakeModel]
) -> None:
    """Both users open a second chat at once (one plain message): each answer lands in its
    own user's new session only, and each user's processes stay within the budget."""

    def second_chat(who: str) -> tuple[str, list[dict]]:
        user, fm = hub.users[who], hub_models[who]
        fm.reply(text=f"second chat of {user.name}")
        with hub.client() as client:
            r = client.post(f"{api(user)}/sessions", json={"title": "2nd"}, headers=user.headers())
            assert r.status_code == 201, as_json(r)
            sid = r.json()["id"]
            r = client.post(
                f"{api(user)}/sessions/{sid}/messages",
                json={"content": "hello"},
                headers=user.headers(),
            )
            assert r.status_code == 201, as_json(r)
            msgs = wait_until(
                lambda: finished(client, user, sid, f"second chat of {user.name}"),
                120,
                f"{user.name}'s second chat",
                every=0.25,
            )
        return sid, msgs

    with ThreadPoolExecutor(2) as pool:
        got = dict(zip(("ann", "bob"), pool.map(second_chat, ("ann", "bob")), strict=True))
    for who, (sid, msgs) in got.items():
        user = hub.users[who]
        said = [m["content"] for m in msgs if m["role"] == "assistant"]
        assert said == [f"second chat of {user.name}"], msgs
        (store,) = store_files(user.home)
        mine = {sid, runs[who].session_id}
        assert mine <= session_ids(store)
        assert not {s for w, (s, _) in got.items() if w != who} & session_ids(store)
    for user in hub.users.values():
        pss, procs = user_footprint(user.uid)
        assert pss < USER_BUDGET_MB, (user.name, pss, procs)
