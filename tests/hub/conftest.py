"""A real JupyterHub for the many-user tests: the hub, configurable-http-proxy (from npm,
installed in this folder), the local process spawner, and two local system users made for
the test. Everything is reached through the hub's proxy, as a browser or a script would.

Needs root (the spawner switches to each user; ``useradd``), Node.js and npm (the proxy).
One hub per test module: the fixtures are module-scoped.
"""

from __future__ import annotations

import contextlib
import grp
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from tests.waiting import wait_until

from ..fake_model import FakeModel
from ..layers import starts_processes

HERE = Path(__file__).resolve().parent
CHP = HERE / "node_modules" / ".bin" / "configurable-http-proxy"
PASSWORD = secrets.token_urlsafe(12)


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class HubUser:
    """A local system user of the hub, with an API token the hub issued to them."""

    name: str
    uid: int
    home: Path
    token: str = ""

    def headers(self) -> dict[str, str]:
        """Authorization headers of this user's token."""
        return {"Authorization": f"token {self.token}"}


@dataclass
class Hub:
    """The running hub: its public (proxy) URL and its users."""

    url: str
    users: dict[str, HubUser]
    log: Path

    def client(self) -> httpx.Client:
        """An HTTP client on the proxy's URL."""
        return httpx.Client(base_url=self.url, timeout=60)


def _require_root_and_node() -> None:
    # Not a skip: this machine and CI run as root with Node.js, so a missing piece is a
    # broken environment that must be seen.
    assert os.geteuid() == 0, "tests/hub needs root (useradd, the spawner's setuid)"
    assert shutil.which("npm") and shutil.which("node"), "tests/hub needs Node.js and npm"


def install_chp() -> Path:
    """configurable-http-proxy, installed from npm into tests/hub/node_modules (once)."""
    _require_root_and_node()
    if not CHP.exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=HERE, check=True, timeout=300)
    return CHP


@pytest.fixture(scope="module")
@starts_processes
def chp() -> Path:
    """configurable-http-proxy, installed from npm into tests/hub/node_modules (once)."""
    return install_chp()


def _kill_processes_of(uid: int) -> None:
    procs = [
        p for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real == uid
    ]
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=10)


def _grant_search(paths: list[Path], gid: int) -> list[str]:
    """Let group ``gid`` traverse to this environment's Python (e.g. a pyenv under a 0700
    /root) with the sandbox's own ACL helper; return the folders changed, to revoke later."""
    from think_kernel.sandbox.launch import _ACL_GROUP, _read_acl, ensure_search

    before = {}
    for path in paths:
        for parent in Path(path).resolve().parents:
            before[str(parent)] = (_ACL_GROUP, gid) in _read_acl(
                str(parent), "system.posix_acl_access", os.stat(parent).st_mode
            )
        ensure_search(Path(path), gid)
    return [p for p, had in before.items() if not had]


def _revoke_search(dirs: list[str], gid: int) -> None:
    from think_kernel.sandbox.launch import _ACL_GROUP, _read_acl, _write_acl

    for d in dirs:
        name = "system.posix_acl_access"
        entries = _read_acl(d, name, os.stat(d).st_mode)
        if entries.pop((_ACL_GROUP, gid), None) is not None:
            _write_acl(d, name, entries)


@contextlib.contextmanager
def local_users(whos: list[str]) -> Iterator[dict[str, HubUser]]:
    """Fresh local users (``thk<who><tag>``) in a fresh group, removed with their homes
    afterwards; the group may traverse to this environment's Python."""
    _require_root_and_node()
    tag = secrets.token_hex(3)
    group = f"thkhub{tag}"
    made: dict[str, HubUser] = {}
    granted: list[str] = []
    subprocess.run(["groupadd", group], check=True)
    gid = grp.getgrnam(group).gr_gid
    try:
        granted = _grant_search([Path(os.path.realpath(sys.executable)), Path(sys.prefix)], gid)
        for who in whos:
            name = f"thk{who}{tag}"
            subprocess.run(
                ["useradd", "--create-home", "--shell", "/bin/bash", "-G", group, name],
                check=True,
            )
            pw = pwd.getpwnam(name)
            made[who] = HubUser(name, pw.pw_uid, Path(pw.pw_dir))
            # Homes are private, as a multi-user machine should keep them (useradd's mode
            # follows login.defs, which differs between distributions).
            os.chmod(pw.pw_dir, 0o700)
        first = made[whos[0]]
        probe = subprocess.run(
            ["su", "-s", "/bin/sh", first.name, "-c",
             f"{sys.executable} -c 'import think_kernel'"],
            capture_output=True,
            text=True,
        )  # fmt: skip
        assert probe.returncode == 0, (
            f"a new system user cannot run this environment's Python: {probe.stderr}"
        )
        yield made
    finally:
        for user in made.values():
            _kill_processes_of(user.uid)
            subprocess.run(["userdel", "--remove", user.name], capture_output=True)
        _revoke_search(granted, gid)
        subprocess.run(["groupdel", group], capture_output=True)


@pytest.fixture(scope="module")
@starts_processes
def system_users() -> Iterator[dict[str, HubUser]]:
    """Two fresh local users in a fresh group (removed with their homes afterwards)."""
    with local_users(["ann", "bob"]) as made:
        yield made


@pytest.fixture(scope="module")
def hub_models(system_users: dict[str, HubUser]) -> Iterator[dict[str, FakeModel]]:
    """A scripted model per user, on loopback: each user's kernels reach their own, so both
    users' runs can go at once, each with its own script."""
    models = {who: FakeModel().start() for who in system_users}
    try:
        yield models
    finally:
        for fm in models.values():
            fm.stop()


CONFIG = """
c = get_config()  # noqa
c.JupyterHub.bind_url = {public!r}
c.JupyterHub.hub_bind_url = {hub!r}
c.JupyterHub.db_url = {db!r}
c.JupyterHub.cookie_secret_file = {cookie!r}
c.JupyterHub.pid_file = {pid!r}
c.ConfigurableHTTPProxy.command = [{chp!r}]
c.ConfigurableHTTPProxy.api_url = {proxy_api!r}
c.ConfigurableHTTPProxy.auth_token = {proxy_token!r}
c.ConfigurableHTTPProxy.pid_file = {proxy_pid!r}
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = {password!r}
c.Authenticator.allowed_users = {users!r}
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [{singleuser!r}]
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 180
c.Spawner.environment = {environment!r}
# Each user's kernels talk to that user's scripted model.
_models = {models!r}
c.Spawner.environment["OPENAI_BASE_URL"] = lambda spawner: _models[spawner.user.name]
# Start both servers at once: the spawn request answers 202 at once instead of after 10 s.
c.JupyterHub.slow_spawn_timeout = 0
"""


@contextlib.contextmanager
def running_hub(
    state: Path, chp: Path, users: dict[str, HubUser], models: dict[str, str], extra: str = ""
) -> Iterator[Hub]:
    """A running JupyterHub (state in ``state``) with every user's server started and a
    token for each user; ``models``: each user's model URL by key; ``extra``: more lines of
    its configuration."""
    os.chmod(state, 0o700)
    public = f"http://127.0.0.1:{free_port()}"
    venv_bin = str(Path(sys.executable).parent)
    config = CONFIG.format(
        public=public + "/",
        hub=f"http://127.0.0.1:{free_port()}",
        db=f"sqlite:///{state / 'jupyterhub.sqlite'}",
        cookie=str(state / "cookie_secret"),
        pid=str(state / "hub.pid"),
        chp=str(chp),
        proxy_api=f"http://127.0.0.1:{free_port()}",
        proxy_token=secrets.token_hex(16),
        proxy_pid=str(state / "proxy.pid"),
        password=PASSWORD,
        users={u.name for u in users.values()},
        singleuser=str(Path(venv_bin) / "jupyterhub-singleuser"),
        models={u.name: models[who] for who, u in users.items()},
        environment={
            # The kernels' model: a scripted server on loopback (its URL: per user, below).
            "OPENAI_API_KEY": "hub-test-key",
            "THINK_MODEL": "fake-model",
            "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin",
        },
    )
    (state / "jupyterhub_config.py").write_text(config + extra)
    log = state / "hub.log"
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "THINK_", "JUPYTER"))
    }
    env["PATH"] = f"{venv_bin}:{env.get('PATH', '/usr/bin:/bin')}"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(state / "jupyterhub_config.py")],
            cwd=state,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    hub = Hub(public, dict(users), log)
    try:
        with hub.client() as client:

            def up() -> bool:
                try:
                    return client.get("/hub/api/").status_code == 200
                except httpx.HTTPError:
                    assert proc.poll() is None, f"the hub exited:\n{log.read_text()}"
                    return False

            wait_until(up, 60, "the hub behind its proxy", every=0.1)
            for user in hub.users.values():
                # The user's own token, from their name and password (as `jupyterhub token`
                # or a login would), then their server, started with it.
                r = client.post(
                    f"/hub/api/users/{user.name}/tokens",
                    json={"auth": {"username": user.name, "password": PASSWORD}, "note": "test"},
                )
                assert r.status_code == 201, r.text
                user.token = r.json()["token"]
                r = client.post(f"/hub/api/users/{user.name}/server", headers=user.headers())
                assert r.status_code in (201, 202), r.text
            for user in hub.users.values():

                def ready(user: HubUser = user) -> bool:
                    r = client.get(f"/hub/api/users/{user.name}", headers=user.headers())
                    server = (r.json().get("servers") or {}).get("", {})
                    assert proc.poll() is None, f"the hub exited:\n{log.read_text()}"
                    return bool(server.get("ready"))

                wait_until(ready, max(180, 30 * len(users)), f"{user.name}'s server", every=0.5)
        yield hub
    finally:
        # The hub stops the users' servers on SIGTERM (cleanup_servers), then the proxy.
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        pid_file = state / "proxy.pid"
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
            except (ValueError, ProcessLookupError):
                pass


@pytest.fixture(scope="module")
@starts_processes
def hub(tmp_path_factory, chp, system_users, hub_models) -> Iterator[Hub]:
    """A running JupyterHub with both users' servers started and a token for each user."""
    models = {who: fm.url for who, fm in hub_models.items()}
    with running_hub(tmp_path_factory.mktemp("hub"), chp, system_users, models) as hub:
        yield hub


def user_footprint(uid: int) -> tuple[float, int]:
    """(PSS in MB, process count) of every process whose real uid is ``uid``."""
    pss, n = 0, 0
    for p in psutil.process_iter(["uids"]):
        if p.info["uids"] is None or p.info["uids"].real != uid:
            continue
        n += 1
        try:
            with open(f"/proc/{p.pid}/smaps_rollup") as f:
                pss += sum(int(line.split()[1]) for line in f if line.startswith("Pss:"))
        except OSError:
            pass
    return pss / 1024, n


def store_files(home: Path) -> list[Path]:
    """Think stores (SQLite files with a ``sessions`` table) anywhere under a home."""
    import sqlite3

    found = []
    for path in home.rglob("*.db"):
        try:
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                names = {r[0] for r in con.execute("select name from sqlite_master")}
            finally:
                con.close()
        except sqlite3.Error:
            continue
        if "sessions" in names and "messages" in names:
            found.append(path)
    return found


def session_ids(store: Path) -> set[str]:
    """Session ids in a store."""
    import sqlite3

    con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return {r[0] for r in con.execute("select id from sessions")}
    finally:
        con.close()


def as_json(r: httpx.Response) -> Any:
    """The JSON body, or the text when it is not JSON (for assertion messages)."""
    try:
        return r.json()
    except json.JSONDecodeError:
        return r.text
