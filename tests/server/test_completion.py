"""``POST /api/think/complete``: the inline completion route, against a real Jupyter server
and the scripted model. Auth and the ``think`` permission, clear 4xx for bad input, nothing
sent without a model, a bounded prompt with the previous cells on the ``fast`` role, and a
model that hangs answered within the deadline with its request closed."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_ext.completion import CELLS_CHARS, PREFIX_CHARS
from tests.waiting import until

pytestmark = pytest.mark.timeout(120)

DEADLINE = 2.0


@pytest.fixture
def think_config():
    """A short completion deadline, so the hanging model's test is quick."""
    return {"kernel_pool_size": 0, "completion_timeout": DEADLINE, "completion_max_tokens": 40}


@pytest.fixture
def no_model_env(monkeypatch, tmp_path):
    """A server with no endpoint in the environment or config."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "THINK_MODEL", "THINK_FAST_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(tmp_path / "no-config"))


@pytest.fixture
def fast_env(model_env, monkeypatch, tmp_path):
    """The scripted model as the endpoint, with a fast role of its own."""
    monkeypatch.setenv("THINK_FAST_MODEL", "fake-fast")
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(tmp_path / "no-config"))
    return model_env


def completions(fm):
    return [b for b in fm.internal_requests if b.get("_purpose") == "complete"]


async def test_completes_with_the_previous_cells_on_the_fast_role(api, fast_env):
    fast_env.answer("complete", text="groupby('region').sum()")
    cells = ["import pandas as pd", "df = pd.read_csv('sales.csv')"]
    body = {
        "prefix": "totals = df.",
        "suffix": "\nprint(totals)",
        "path": "analysis.ipynb",
        "language": "python",
        "cells": cells,
        "variables": ["df", "pd", "not a name; rm -rf /"],
    }
    code, r = await api("POST", "complete", body)
    assert code == 200, r
    assert r["completion"] == "groupby('region').sum()"
    assert r["configured"] is True and r["model"] == "fake-fast" and r["reason"] == ""
    [sent] = completions(fast_env)
    assert sent["model"] == "fake-fast" and sent["max_tokens"] == 40
    prompt = sent["messages"][-1]["content"]
    assert "import pandas as pd" in prompt and "df = pd.read_csv('sales.csv')" in prompt
    assert "totals = df.<CURSOR>\nprint(totals)" in prompt
    assert "df, pd" in prompt and "rm -rf" not in prompt
    assert not fast_env.requests, "a completion is not a step of the agent loop"


async def test_the_prompt_is_bounded(api, fast_env):
    fast_env.answer("complete", text="x")
    many = [f"cell_{i} = {'1' * 900}" for i in range(50)]
    body = {"prefix": "a" * 50_000 + "tail", "suffix": "b" * 50_000, "cells": many}
    code, r = await api("POST", "complete", body)
    assert code == 200 and r["completion"] == "x"
    prompt = completions(fast_env)[0]["messages"][-1]["content"]
    assert len(prompt) < PREFIX_CHARS + CELLS_CHARS + 2_000
    assert "cell_49 =" in prompt and "cell_0 =" not in prompt  # nearest cells first
    assert "atail<CURSOR>b" in prompt


async def test_an_echoed_line_and_fences_are_trimmed(api, fast_env):
    fast_env.answer("complete", text="```python\nresult = compute(1)\n```")
    code, r = await api("POST", "complete", {"prefix": "x = 1\nresult = "})
    assert code == 200 and r["completion"] == "compute(1)"


async def test_without_a_model_it_answers_empty_and_sends_nothing(api, no_model_env, fake_model):
    code, r = await api("POST", "complete", {"prefix": "import nu"})
    assert code == 200
    assert r["completion"] == "" and r["configured"] is False and r["reason"] == "no_model"
    assert not fake_model.internal_requests and not fake_model.requests


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        "[1, 2]",
        {},
        {"prefix": 3},
        {"prefix": "x", "cells": "import os"},
        {"prefix": "x", "cells": [1, 2]},
        {"prefix": "x", "variables": [None]},
        {"prefix": "x", "path": "p" * 2_000},
    ],
)
async def test_bad_input_is_a_400(api, fast_env, body):
    code, r = await api("POST", "complete", body)
    assert code == 400, r
    assert not completions(fast_env)


async def test_a_hanging_model_is_given_up_in_bounded_time(api, fast_env):
    fast_env.answer("complete", text="", hang=True)
    started = time.monotonic()
    code, r = await api("POST", "complete", {"prefix": "df."})
    took = time.monotonic() - started
    assert code == 200 and r["completion"] == "" and r["reason"] == "timeout"
    assert took < DEADLINE + 2, took
    # The server closed its request to the model rather than leaving it hanging.
    await until(lambda: fast_env.closed >= 1, 5, "the model request closed")


async def test_a_newer_request_supersedes_the_older(api, fast_env):
    fast_env.answer("complete", text="", hang=True)
    first = {"prefix": "a", "path": "n.ipynb", "client": "tab1"}
    older = asyncio.ensure_future(api("POST", "complete", first))
    await until(lambda: completions(fast_env), 5, "the first request at the model")
    fast_env.answer("complete", text="b")
    code, r = await api("POST", "complete", {"prefix": "ab", "path": "n.ipynb", "client": "tab1"})
    assert code == 200 and r["completion"] == "b"
    code, r = await older
    assert code == 200 and r == {**r, "completion": "", "reason": "superseded"}
    await until(lambda: fast_env.closed >= 1, 5, "the superseded model request closed")


async def test_a_client_that_goes_away_closes_the_model_request(
    api, fast_env, http_server_client, jp_base_url
):
    from .conftest import TOKEN

    fast_env.answer("complete", text="", hang=True)
    await api("GET", "model")  # the store is ready
    with pytest.raises(HTTPClientError):
        await http_server_client.fetch(
            f"{jp_base_url}api/think/complete",
            method="POST",
            body=json.dumps({"prefix": "df."}),
            headers={"Authorization": f"token {TOKEN}"},
            request_timeout=0.3,
        )
    # Well before the server's own deadline: the disconnect, not the timeout, closed it.
    await until(lambda: fast_env.closed >= 1, DEADLINE / 2, "the model request closed")


async def test_the_route_needs_auth_and_the_think_permission(
    jp_serverapp, http_server_client, jp_base_url, api, fast_env
):
    await api("GET", "model")  # the store is ready
    for headers in ({}, {"Authorization": "token wrong"}):
        try:
            resp = await http_server_client.fetch(
                f"{jp_base_url}api/think/complete",
                method="POST",
                body='{"prefix": "x"}',
                headers=headers,
                raise_error=False,
            )
            code = resp.code
        except HTTPClientError as e:
            code = e.code
        assert code == 403, (headers, code)

    class DenyThink(type(jp_serverapp.authorizer)):  # type: ignore[misc]
        def is_authorized(self, handler, user, action, resource):
            return resource != "think"

    original = jp_serverapp.web_app.settings["authorizer"]
    jp_serverapp.web_app.settings["authorizer"] = DenyThink(parent=jp_serverapp)
    try:
        code, _ = await api("POST", "complete", {"prefix": "x"})
        assert code == 403
    finally:
        jp_serverapp.web_app.settings["authorizer"] = original
    assert not completions(fast_env), "a refused request reached the model"


async def test_the_kernels_variable_names_join_the_prompt_without_a_wait(
    api, fast_env, jp_fetch, jp_serverapp, jp_root_dir
):
    import nbformat

    from .test_variables import Tab, open_notebook

    fast_env.answer("complete", text="* 2")
    nbformat.write(nbformat.v4.new_notebook(), jp_root_dir / "sales.ipynb")
    kid = await open_notebook(jp_fetch, "sales.ipynb")
    tab = Tab(jp_serverapp.kernel_manager.get_kernel(kid))
    try:
        await tab.run("revenue_total = 41\nregions = ['north', 'south']")
        body = {"prefix": "doubled = revenue_total ", "path": "sales.ipynb"}

        async def prompt_names() -> bool:
            code, r = await api("POST", "complete", body)
            assert code == 200 and r["completion"] == "* 2", r
            prompt = completions(fast_env)[-1]["messages"][-1]["content"]
            names = [x for x in prompt.split("\n") if x.startswith("Variables defined")]
            return bool(names) and "revenue_total" in names[0]

        # The first completion answers from what is known (nothing yet) and starts a look;
        # a later one carries the names the look found.
        await until(prompt_names, 30, "the kernel's names in the prompt")
        prompt = completions(fast_env)[-1]["messages"][-1]["content"]
        assert "regions" in prompt
        # The look was silent: the person's history has only their own cell.
        history = await tab.names()
        assert "revenue_total" in history and "think" not in history
    finally:
        tab.close()
