"""The variables of an open notebook's kernel, read through the server: a real python3 kernel
(and a real non-Python one), the REST route, and the kernel-link RPC the tool uses."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import nbformat
import pytest
from jupyter_client.asynchronous import AsyncKernelClient
from tornado.httpclient import HTTPClientError

from jupyter_ext.variables import VariableLimits
from tests.waiting import until

pytestmark = pytest.mark.timeout(120)

SETUP = """
import numpy as np, pandas as pd
df = pd.DataFrame({"a": [1, 2, None], "b": ["x", "y", "z"]})
arr = np.arange(12, dtype=float).reshape(3, 4)

class Hang:
    def __repr__(self):
        while True:
            pass
    def __getattr__(self, name):
        while True:
            pass

class Huge:
    def __repr__(self):
        return "x" * 2**31

class SlowFrame(pd.DataFrame):
    @property
    def shape(self):
        while True:
            pass

hang, huge = Hang(), Huge()
mixed = pd.DataFrame({"o": [hang, huge, 1]})
slow = SlowFrame({"a": [1]})
"""


async def open_notebook(jp_fetch, path: str, kernel: str = "python3") -> str:
    """A notebook session, as JupyterLab makes one when a tab opens: its kernel id."""
    resp = await jp_fetch(
        "api",
        "sessions",
        method="POST",
        body=json.dumps({"path": path, "type": "notebook", "kernel": {"name": kernel}}),
    )
    return str(json.loads(resp.body)["kernel"]["id"])


class Tab:
    """A stand-in for the notebook's tab: runs cells in the kernel, hears all of its iopub."""

    def __init__(self, km: Any) -> None:
        self.kernel = km
        self.client = AsyncKernelClient(parent=km)
        self.client.load_connection_info(km.get_connection_info())
        self.client.start_channels()
        self.heard: list[dict[str, Any]] = []
        self._listening: asyncio.Future[None] | None = None

    async def _ready(self) -> None:
        """Before the first request, as a tab's connection does: wait until the kernel
        answers and both this client's and the server's iopub subscriptions took effect,
        then listen. (A subscription takes effect a moment after connecting, and what the
        kernel publishes before that is never heard: a cell run at once could end unseen.)"""
        if self._listening is not None:
            return
        await self.client.wait_for_ready(timeout=60)

        def server_heard() -> bool:
            # jupyter_server's watch connected at the kernel's start, on its own clock; until
            # it hears a status the kernel is "starting" to it. Nudge, as the server does
            # for a tab's WebSocket.
            if self.kernel.execution_state != "starting":
                return True
            self.client.kernel_info()
            return False

        await until(server_heard, 30, "the server's watch of the kernel", every=0.05)
        self._listening = asyncio.ensure_future(self._listen())

    async def _listen(self) -> None:
        while True:
            self.heard.append(await self.client.get_iopub_msg())

    async def _reply(self, msg_id: str) -> dict[str, Any]:
        while True:
            reply = await self.client.get_shell_msg(timeout=60)
            if reply["parent_header"].get("msg_id") == msg_id:
                return dict(reply["content"])

    async def run(self, code: str) -> dict[str, Any]:
        """Run a cell (stored in the history, as a tab does) until the kernel is idle again;
        the reply's content (``msg_id`` added)."""
        await self._ready()
        msg_id = self.client.execute(code, allow_stdin=False)
        content = await self._reply(msg_id)
        assert content["status"] == "ok", content

        def idle() -> bool:
            return any(
                m["parent_header"].get("msg_id") == msg_id
                and m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"
                for m in self.heard
            )

        await until(idle, 30, "the cell's end")
        # The server hears the kernel's status on its own socket: a read right after the
        # cell must not find the kernel still busy as the server knows it.
        await until(lambda: self.kernel.execution_state == "idle", 30, "the server's idle")
        return {**content, "msg_id": msg_id}

    async def names(self) -> list[str]:
        """The user namespace's names, read silently."""
        await self._ready()
        msg_id = self.client.execute(
            "", silent=True, store_history=False, user_expressions={"n": "sorted(globals())"}
        )
        content = await self._reply(msg_id)
        return list(eval(content["user_expressions"]["n"]["data"]["text/plain"]))

    def close(self) -> None:
        if self._listening is not None:
            self._listening.cancel()
        self.client.stop_channels()


@pytest.fixture
async def notebook(jp_fetch, jp_serverapp, jp_root_dir, think):
    """``(path, kernel_id, tab)``: nb.ipynb open on a python3 kernel, SETUP run in it."""
    nbformat.write(nbformat.v4.new_notebook(), jp_root_dir / "nb.ipynb")
    kid = await open_notebook(jp_fetch, "nb.ipynb")
    tab = Tab(jp_serverapp.kernel_manager.get_kernel(kid))
    await tab.run(SETUP)
    yield "nb.ipynb", kid, tab
    tab.close()


@pytest.fixture
def variables(jp_fetch, think):
    """``code, answer = await variables(path="nb.ipynb", names="df")``: the REST route."""

    async def get(**params: str) -> tuple[int, Any]:
        try:
            resp = await jp_fetch("api", "think", "variables", params=params, raise_error=False)
        except HTTPClientError as e:
            assert e.response is not None
            resp = e.response
        return resp.code, json.loads(resp.body) if resp.body else None

    return get


def by_name(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in answer["variables"]}


async def test_dataframe_and_array_without_side_effects(variables, notebook):
    path, _kid, tab = notebook
    before = await tab.run("1")
    names_before = await tab.names()
    tab.heard.clear()
    code, answer = await variables(path=path, names="df,arr,nope")
    assert code == 200 and answer["status"] == "ok", answer
    got = by_name(answer)
    df = got["df"]
    assert df["kind"] == "dataframe" and df["shape"] == [3, 2]
    assert [(c["name"], c["dtype"], c["nulls"]) for c in df["columns"]] == [
        ("a", "float64", 1),
        ("b", "str", 0),
    ]
    assert "x" in df["head"] and "NaN" in df["head"]
    arr = got["arr"]
    assert arr["shape"] == [3, 4] and arr["dtype"] == "float64"
    assert arr["stats"]["min"] == 0.0 and arr["stats"]["max"] == 11.0
    assert arr["stats"]["mean"] == 5.5 and arr["stats"]["nans"] == 0
    assert answer["missing"] == ["nope"]
    assert "df: pandas.DataFrame, 3 rows × 2 columns" in answer["text"]
    # Nothing changed: no name was added, the next cell's count follows the last one, and
    # what the tab heard of the probe (all before the next cell: iopub is ordered) is the
    # kernel's status alone.
    assert await tab.names() == names_before
    after = await tab.run("2")
    assert after["execution_count"] == before["execution_count"] + 1
    of_probe = [m for m in tab.heard if m["parent_header"].get("msg_id") != after["msg_id"]]
    assert of_probe and {m["msg_type"] for m in of_probe} == {"status"}


async def test_hanging_and_gigabyte_reprs_are_never_called(variables, notebook):
    path, _kid, tab = notebook
    started = time.monotonic()
    code, answer = await variables(path=path, names="hang,huge,mixed,slow")
    elapsed = time.monotonic() - started
    assert code == 200 and answer["status"] == "ok", answer
    got = by_name(answer)
    assert got["hang"]["type"].endswith("Hang") and got["hang"]["kind"] == "object"
    assert got["huge"]["type"].endswith("Huge")
    assert "<__main__.Hang>" in got["mixed"]["head"] and "<__main__.Huge>" in got["mixed"]["head"]
    # A property that loops forever is cut by the probe's own time budget.
    assert "timed out" in got["slow"]["error"]
    assert elapsed < 3, elapsed
    await tab.run("assert hang is not None")  # the kernel is still answering


async def test_every_variable_listed_without_names(variables, notebook):
    path, _kid, _tab = notebook
    code, answer = await variables(path=path)
    assert code == 200 and answer["status"] == "ok"
    names = set(by_name(answer))
    assert {"df", "arr", "hang", "huge", "mixed", "slow", "Hang"} <= names
    assert not {"np", "pd", "In", "Out", "get_ipython"} & names  # modules and IPython's own


async def test_busy_kernel_answers_busy_at_once(variables, notebook, jp_serverapp):
    path, kid, tab = notebook
    kernel = jp_serverapp.kernel_manager.get_kernel(kid)
    tab.client.execute("import time; time.sleep(60)")
    await until(lambda: kernel.execution_state == "busy", 10, "the kernel busy")
    started = time.monotonic()
    code, answer = await variables(path=path, names="df")
    assert time.monotonic() - started < 0.5
    assert code == 200 and answer["status"] == "busy" and "busy" in answer["message"]
    await jp_serverapp.kernel_manager.interrupt_kernel(kid)


async def test_the_probe_time_budget_bounds_a_slow_variable(variables, notebook, think):
    """Null counts of a large frame past the per-variable budget: a partial answer, fast."""
    path, _kid, tab = notebook
    await tab.run(
        "big = pd.DataFrame({f'c{i}': pd.Series([None, 'x'] * 500_000) for i in range(20)})"
    )
    # big's null counts take seconds; df's a millisecond. 10 ms per variable was below the
    # scheduling noise of a loaded 2-core machine (df timed out too): 0.2 s is not.
    think.variables.limits = VariableLimits(per_var=0.2, budget=1.0)
    code, answer = await variables(path=path, names="big,df")
    assert code == 200 and answer["status"] == "ok"
    got = by_name(answer)
    assert "timed out" in got["big"]["error"]
    assert got["df"]["shape"] == [3, 2]


async def test_a_kernel_slower_than_the_deadline_answers_timeout(variables, notebook, think):
    """The server never waits past its deadline; the kernel ends the probe on its own budget
    and answers the next cell."""
    path, _kid, tab = notebook
    think.variables.limits = VariableLimits(timeout=0.5, per_var=3, budget=3)
    started = time.monotonic()
    code, answer = await variables(path=path, names="slow")
    assert time.monotonic() - started < 2
    assert code == 200 and answer["status"] == "timeout", answer
    assert "did not answer within 0.5 s" in answer["text"]
    await tab.run("assert slow is not None")


async def test_no_kernel_non_python_kernel_and_bad_input(variables, jp_fetch):
    code, answer = await variables(path="closed.ipynb", names="df")
    assert code == 200 and answer["status"] == "no_kernel"
    assert "no running kernel" in answer["text"]
    # pytest-jupyter installs the echo kernel (a real kernel, language "echo")
    await open_notebook(jp_fetch, "echo.ipynb", "echo")
    code, answer = await variables(path="echo.ipynb")
    assert code == 200 and answer["status"] == "not_supported"
    assert "echo kernel" in answer["message"]
    for bad in ({"path": "../etc/x.ipynb"}, {"path": "/etc/x.ipynb"}, {"path": ""}):
        code, body = await variables(**bad)
        assert code == 400, (bad, body)
    code, body = await variables(path="nb.ipynb", names="a;b")
    assert code == 400 and "not a Python variable name" in body["message"]


async def test_a_notebook_on_the_think_kernel_is_not_inspected(variables, jp_fetch, model_env):
    """The think kernel is the agent: an execute_request to it would be a chat request."""
    await open_notebook(jp_fetch, "agent.ipynb", "think")
    code, answer = await variables(path="agent.ipynb")
    assert code == 200 and answer["status"] == "not_supported"
    assert "think kernel, the agent itself" in answer["message"]


async def test_route_needs_auth_and_the_right_to_use_kernels(
    variables, jp_serverapp, http_server_client, jp_base_url
):
    resp = await http_server_client.fetch(
        f"{jp_base_url}api/think/variables?path=nb.ipynb", raise_error=False
    )
    assert resp.code == 403

    class NoKernels(type(jp_serverapp.authorizer)):  # type: ignore[misc]
        def is_authorized(self, handler, user, action, resource):
            return resource != "kernels"

    original = jp_serverapp.web_app.settings["authorizer"]
    jp_serverapp.web_app.settings["authorizer"] = NoKernels(parent=jp_serverapp)
    try:
        code, _ = await variables(path="nb.ipynb")
        assert code == 403
    finally:
        jp_serverapp.web_app.settings["authorizer"] = original
    code, _ = await variables(path="nb.ipynb")
    assert code == 200


async def test_the_tool_reads_the_notebook_kernel_through_the_link(api, ws, notebook, model_env):
    """The chat's kernel asks the server (vars.inspect); the model reads the summary."""
    path, _kid, tab = notebook
    before = await tab.run("1")
    model_env.reply(tool_calls=[("inspect_variables", {"notebook": path, "names": ["df"]})])
    model_env.reply(text="df has 3 rows.")
    code, s = await api("POST", "sessions", {"title": "vars"})
    sid = s["id"]
    chat = await ws(sid)
    code, _ = await api("POST", f"sessions/{sid}/messages", {"content": "what is in df?"})
    assert code == 201
    await until(lambda: chat.of("task_complete"), 90, "the run's end")
    sent = model_env.requests[1]["messages"][-1]
    assert sent["role"] == "tool"
    assert "df: pandas.DataFrame, 3 rows × 2 columns" in sent["content"]
    assert "a float64 (1 null)" in sent["content"]
    assert not chat.of("approval_request")  # read-only: no approval under the default policy
    after = await tab.run("2")
    assert after["execution_count"] == before["execution_count"] + 1
