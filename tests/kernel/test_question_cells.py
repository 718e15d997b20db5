"""``ask_user`` in a cell: the question card's ipywidgets buttons and text box answer it
while the cell runs (clicked here through the kernel's real comm messages), in a python3
kernel's ``%%think`` and in a think kernel's request cell; the run goes on with the answer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.fake_model import FakeModel
from tests.kernel.conftest import Kernel, kernel_env, start_kernel, workspace_in
from tests.kernel.test_approval_cells import _drain, _send_comm, _text, _widgets

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

CLICK = {"method": "custom", "content": {"event": "click"}}


@pytest.fixture(scope="module")
def py_kernel(tmp_path_factory: pytest.TempPathFactory, fm: FakeModel) -> Iterator[Kernel]:
    tmp = tmp_path_factory.mktemp("pyq")
    kernel = start_kernel(workspace_in(tmp), kernel_env(tmp, fm), name="python3")
    reply, outputs = kernel.execute("%load_ext think_kernel")
    assert reply["status"] == "ok", outputs
    yield kernel
    kernel.stop()


def _card(kernel: Kernel, msg_id: str) -> tuple[list[dict], dict[str, str]]:
    seen = kernel.wait_output(
        msg_id,
        lambda m: (
            m["msg_type"] == "display_data"
            and "application/vnd.jupyter.widget-view+json" in m["content"]["data"]
        ),
        timeout=120,
    )
    by_name: dict[str, str] = {}
    for cid, state in _widgets(seen).items():
        if state.get("_model_name") == "ButtonModel":
            by_name[state["description"]] = cid
        elif state.get("_model_name") == "TextModel":
            by_name["entry"] = cid
    return seen, by_name


def _tool_text(model: FakeModel) -> str:
    request = model.wait_for_requests(2)[1]
    return [m for m in request["messages"] if m["role"] == "tool"][-1]["content"]


def _disabled(outputs: list[dict], comm_id: str) -> bool:
    updates: list[dict[str, Any]] = [
        m["content"]["data"].get("state", {})
        for m in outputs
        if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == comm_id
    ]
    return any(u.get("disabled") for u in updates)


def test_an_option_button_answers_the_question(py_kernel: Kernel, model: FakeModel) -> None:
    model.reply(tool_calls=[("ask_user", {"question": "Which axis?", "options": ["x", "y"]})])
    model.reply(text="Using y.")
    msg_id = py_kernel.kc.execute("%%think\nplot it")
    seen, ids = _card(py_kernel, msg_id)
    assert {"x", "y", "Send"} <= set(ids), ids
    assert "entry" in ids  # the widget exists; it is shown only when typing is allowed
    assert "Think asks: Which axis?" in _text(seen) and "/questions/" in _text(seen)
    assert len(model.requests) == 1  # paused
    _send_comm(py_kernel, ids["y"], CLICK)
    outputs, reply = _drain(py_kernel, msg_id)
    assert reply["status"] == "ok"
    assert _tool_text(model) == "The user answered: y"
    assert _disabled(outputs, ids["x"])


def test_an_answer_names_the_person_the_server_stamped(py_kernel: Kernel, model: FakeModel) -> None:
    """A click that came through a Jupyter server carries the authenticated person in its
    header (jupyter_ext/kernelidentity.py): the answer names them, not the OS user."""
    model.reply(tool_calls=[("ask_user", {"question": "Which scale?", "options": ["log", "lin"]})])
    model.reply(text="Log it is.")
    msg_id = py_kernel.kc.execute("%%think\nplot it")
    _, ids = _card(py_kernel, msg_id)
    msg = py_kernel.kc.session.msg("comm_msg", {"comm_id": ids["log"], "data": CLICK})
    msg["header"].update(username="a1b2c3", display_name="Ada Lovelace")
    py_kernel.kc.shell_channel.send(msg)
    outputs, reply = _drain(py_kernel, msg_id)
    assert reply["status"] == "ok"
    shown = [
        str(m["content"]["data"].get("state", {}).get("value", ""))
        for m in outputs
        if m["msg_type"] == "comm_msg"
    ]
    assert any("Answered by Ada Lovelace via notebook: log" in v for v in shown), shown


def test_think_kernel_cell_takes_a_typed_answer(tmp_path, model: FakeModel) -> None:
    """The same card in a think kernel's request cell: a typed answer, sent with Send."""
    kernel = start_kernel(workspace_in(tmp_path), kernel_env(tmp_path, model), name="think")
    try:
        model.reply(tool_calls=[("ask_user", {"question": "Your name?"})])
        model.reply(text="Hello, Ada.")
        msg_id = kernel.kc.execute("greet me")
        _, ids = _card(kernel, msg_id)
        update = {"method": "update", "state": {"value": "Ada"}, "buffer_paths": []}
        _send_comm(kernel, ids["entry"], update)
        _send_comm(kernel, ids["Send"], CLICK)
        _, reply = _drain(kernel, msg_id)
        assert reply["status"] == "ok"
        assert _tool_text(model) == "The user answered: Ada"
    finally:
        kernel.stop()
