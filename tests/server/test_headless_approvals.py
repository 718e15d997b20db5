"""A think notebook run headless (nbclient, as papermill does): the approval its run waits
for is explained in the output's plain text (what waits, how to decide it, the timeout), and
a decision over the HTTP API of a server of the same workspace lets the run finish.

Real kernel (started by nbclient, no server link), real ``jupyter server`` subprocess on the
same store; the model is scripted at HTTP.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import nbformat
import pytest
from nbclient import NotebookClient

from tests.waiting import wait_until

from .test_restart import Server, _setup

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def _texts(outputs: list) -> list[str]:
    return [str(o.get("data", {}).get("text/plain", "")) for o in outputs if "data" in o]


@contextmanager
def headless_beside_server(tmp_path, env, nb, kernel: str) -> Iterator[tuple[Server, Callable]]:
    """Run ``nb`` with nbclient in a thread, as papermill does, beside a real server on the
    same store. Yields the server and ``finished(what)``, which waits for the notebook to end
    after ``what`` was decided."""
    where = {"metadata": {"path": str(tmp_path / "root")}}
    client = NotebookClient(nb, kernel_name=kernel, timeout=180, resources=where)
    failure: list[BaseException] = []

    def execute() -> None:
        try:
            client.execute(env=env)
        except BaseException as e:  # reported by the test's thread in finished()
            failure.append(e)

    def finished(what: str) -> None:
        runner.join(120)
        assert not runner.is_alive(), f"the notebook did not finish after the {what}"
        assert not failure, failure

    server = Server(tmp_path, env)
    runner = threading.Thread(target=execute, daemon=True)
    try:
        server.wait_up()
        runner.start()
        yield server, finished
    finally:
        server.kill()
        if runner.is_alive():
            client.km and client.km.shutdown_kernel(now=True)


def first_pending(server: Server, kind: str):
    """The first session with a pending row of ``kind`` (approvals, questions), and the row."""
    for s in server.call("GET", "sessions")["sessions"]:
        rows = server.call("GET", f"sessions/{s['id']}/{kind}?status=pending")
        if rows[kind]:
            return s["id"], rows[kind][0]
    return None


def _run_headless(tmp_path, env, nb, kernel: str, cell: int) -> tuple[str, str, list[str]]:
    """Run ``nb`` with nbclient as papermill does, beside a real server on the same store;
    once its run waits, check what cell ``cell`` says, approve over the API and let it end.
    Returns the waiting text, the session id and the cell's texts at the end."""
    root = tmp_path / "root"
    with headless_beside_server(tmp_path, env, nb, kernel) as (server, finished):
        sid, approval = wait_until(
            lambda: first_pending(server, "approvals"), 120, "the notebook's run to ask"
        )
        # What nbclient (and papermill's log) has recorded by now says what waits and how.
        outputs = nb.cells[cell].outputs
        text = wait_until(
            lambda: "\n".join(t for t in _texts(outputs) if "Waiting for approval" in t),
            30,
            "the approval's text in the cell's outputs",
        )
        assert "Waiting for approval: bash" in text and "echo ran >> count.txt" in text, text
        assert f"POST /api/think/sessions/{sid}/approvals/{approval['id']}" in text, text
        assert not (root / "count.txt").exists()
        server.call("POST", f"sessions/{sid}/approvals/{approval['id']}", {"decision": "approve"})
        finished("approval")
    assert (root / "count.txt").read_text() == "ran\n"
    texts = _texts(nb.cells[cell].outputs)
    # The card's text now says what was decided.
    assert any(t.startswith("Approved ") and "via api: bash" in t for t in texts), texts
    assert not any("Waiting for approval" in t for t in texts), texts
    return text, sid, texts


def test_a_headless_run_says_what_it_waits_for_and_an_api_decision_finishes_it(
    tmp_path, fake_model
):
    env = _setup(tmp_path, fake_model)
    (tmp_path / "config" / "think_kernel_config.py").write_text(
        'c.ThinkConfig.approval_policy = "strict"\nc.ThinkConfig.approval_timeout = 900.0\n'
    )
    fake_model.reply(tool_calls=[("bash", {"command": "echo ran >> count.txt"})])
    fake_model.reply(text="Counted.")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("count the runs")]
    nb.metadata["kernelspec"] = {"name": "think", "display_name": "Think", "language": "markdown"}
    text, _, _ = _run_headless(tmp_path, env, nb, "think", 0)
    assert '{"decision": "approve"}' in text and "%think_approve auto" in text, text
    assert "does not decide this one" in text, text
    assert "(in 15 min) it counts as rejected" in text, text
    outputs = nb.cells[0].outputs
    markdown = [o["data"]["text/markdown"] for o in outputs if "text/markdown" in o.get("data", {})]
    assert markdown and "Counted." in markdown[-1], outputs


def test_a_headless_think_magic_says_what_it_waits_for_and_an_api_decision_finishes_it(
    tmp_path, fake_model
):
    # The same in an ordinary python3 notebook (which reads IPython's config, hence the
    # magic): `%%think` shows the card's text too, then what was decided.
    env = _setup(tmp_path, fake_model)
    fake_model.reply(tool_calls=[("bash", {"command": "echo ran >> count.txt"})])
    fake_model.reply(text="Counted.")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext think_kernel\n%think_approve strict"),
        nbformat.v4.new_code_cell("%%think\ncount the runs"),
    ]
    _run_headless(tmp_path, env, nb, "python3", 1)
