"""``%%think`` acts in the user's python3 kernel: run_in_kernel runs in their
namespace with output in the cell, and the approval card's ipywidgets buttons work while the
cell runs (clicked here through the kernel's real comm messages)."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fake_model import FakeModel
from tests.kernel.conftest import Kernel, kernel_env, start_kernel, workspace_in

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def py_kernel(tmp_path_factory: pytest.TempPathFactory, fm: FakeModel) -> Iterator[Kernel]:
    tmp = tmp_path_factory.mktemp("py")
    kernel = start_kernel(workspace_in(tmp), kernel_env(tmp, fm), name="python3")
    reply, outputs = kernel.execute(
        "%load_ext think_kernel\n"
        "import pandas as pd\n"
        "df = pd.DataFrame({'price': [1.0, 2.5, 2.5, 4.0, 1.5]})"
    )
    assert reply["status"] == "ok", outputs
    yield kernel
    kernel.stop()


def _errors(outputs: list[dict]) -> list[dict]:
    return [m for m in outputs if m["msg_type"] == "error"]


def _text(outputs: list[dict]) -> str:
    parts = []
    for m in outputs:
        c = m["content"]
        parts.append(c.get("text", ""))
        parts.append(str(c.get("data", {}).get("text/plain", "")))
        parts.append(str(c.get("data", {}).get("text/markdown", "")))
    return "\n".join(parts)


def test_plot_of_df_price_ends_with_a_png_in_the_cell(py_kernel: Kernel, model: FakeModel) -> None:
    reply, _ = py_kernel.execute("%think_config kernel_exec=auto")
    assert reply["status"] == "ok"
    model.reply(
        tool_calls=[
            (
                "run_in_kernel",
                {
                    "code": "import matplotlib.pyplot as plt\n"
                    "ax = df.price.plot.hist(bins=5, title='price')\nplt.show()"
                },
            )
        ]
    )
    model.reply(text="Here is the distribution of df.price.")
    reply, outputs = py_kernel.execute("%%think\nplot the distribution of df.price", timeout=120)
    assert reply["status"] == "ok", reply
    assert not _errors(outputs) and "NameError" not in _text(outputs)
    pngs = [
        m
        for m in outputs
        if m["msg_type"] == "display_data" and "image/png" in m["content"]["data"]
    ]
    assert pngs, [m["msg_type"] for m in outputs]
    # The model read what happened; the system prompt names the tool that reaches df.
    second = model.wait_for_requests(2)[1]["messages"]
    assert "run_in_kernel(code) runs in the user's kernel" in second[0]["content"]
    tool = [m for m in second if m["role"] == "tool"][-1]
    assert "[displayed in the cell: image/png]" in tool["content"]
    # A traceback goes back to the model as the result, and the kernel keeps going.
    model.reply(tool_calls=[("run_in_kernel", {"code": "df.no_such_column"})])
    model.reply(text="That column does not exist.")
    reply, outputs = py_kernel.execute("%%think\nshow df.no_such_column", timeout=120)
    assert reply["status"] == "ok"
    tool = [m for m in model.wait_for_requests(4)[3]["messages"] if m["role"] == "tool"][-1]
    assert "AttributeError" in tool["content"] and "Traceback" in tool["content"]
    reply, _ = py_kernel.execute("%think_config kernel_exec=ask")
    assert reply["status"] == "ok"


def _widgets(msgs: list[dict]) -> dict[str, dict[str, Any]]:
    """comm id -> widget state, for the comm_open messages seen."""
    return {
        m["content"]["comm_id"]: m["content"]["data"]["state"]
        for m in msgs
        if m["msg_type"] == "comm_open" and "state" in m["content"].get("data", {})
    }


def _send_comm(kernel: Kernel, comm_id: str, data: dict[str, Any]) -> None:
    msg = kernel.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
    kernel.kc.shell_channel.send(msg)


def _drain(kernel: Kernel, msg_id: str, timeout: float = 120) -> tuple[list[dict], dict]:
    """The cell's messages until idle, and widget updates whatever their parent (a click's
    echo is parented to the click)."""
    outputs = []
    deadline = time.monotonic() + timeout
    while True:
        msg = kernel.kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        if msg["parent_header"].get("msg_id") != msg_id:
            if msg["msg_type"] == "comm_msg":
                outputs.append(msg)
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
        outputs.append(msg)
    return outputs, kernel.shell_reply(msg_id, deadline)["content"]


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
            by_name["reason"] = cid
    assert {"Approve", "Reject", "Edit", "Always", "reason"} <= set(by_name), by_name
    return seen, by_name


def test_approve_button_works_while_the_cell_runs(py_kernel: Kernel, model: FakeModel) -> None:
    model.reply(tool_calls=[("run_in_kernel", {"code": "print(df.price.mean())"})])
    model.reply(text="The mean price is 2.3.")
    msg_id = py_kernel.kc.execute("%%think\nwhat is the mean price?")
    seen, ids = _card(py_kernel, msg_id)
    assert "print(df.price.mean())" in _text(seen)
    assert len(model.requests) == 1  # paused: the code has not run
    _send_comm(py_kernel, ids["Approve"], {"method": "custom", "content": {"event": "click"}})
    outputs, reply = _drain(py_kernel, msg_id)
    assert reply["status"] == "ok"
    assert "2.3" in "".join(
        m["content"].get("text", "") for m in outputs if m["msg_type"] == "stream"
    )
    tool = [m for m in model.wait_for_requests(2)[1]["messages"] if m["role"] == "tool"][-1]
    assert tool["content"].startswith("2.3")
    # The card shows the decision (the buttons are retired).
    updates = [
        m["content"]["data"].get("state", {})
        for m in outputs
        if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == ids["Approve"]
    ]
    assert any(u.get("disabled") for u in updates)


def test_card_names_the_person_the_server_stamped(py_kernel: Kernel, model: FakeModel) -> None:
    """A click that came through a Jupyter server carries the authenticated person in its
    header (jupyter_ext/kernelidentity.py): the decision names them, not the OS user."""
    model.reply(tool_calls=[("run_in_kernel", {"code": "print(df.price.max())"})])
    model.reply(text="The highest price is 4.0.")
    msg_id = py_kernel.kc.execute("%%think\nwhat is the highest price?")
    _, ids = _card(py_kernel, msg_id)
    click = {"comm_id": ids["Approve"], "data": {"method": "custom", "content": {"event": "click"}}}
    msg = py_kernel.kc.session.msg("comm_msg", click)
    msg["header"].update(username="a1b2c3", display_name="Ada Lovelace")
    py_kernel.kc.shell_channel.send(msg)
    outputs, reply = _drain(py_kernel, msg_id)
    assert reply["status"] == "ok"
    shown = [
        str(m["content"]["data"].get("state", {}).get("value", ""))
        for m in outputs
        if m["msg_type"] == "comm_msg"
    ]
    assert any("Approved by Ada Lovelace via notebook" in v for v in shown), shown


def test_reject_button_sends_the_reason_to_the_model(py_kernel: Kernel, model: FakeModel) -> None:
    model.reply(tool_calls=[("run_in_kernel", {"code": "df.drop(columns='price', inplace=True)"})])
    model.reply(text="Understood, I left df alone.")
    msg_id = py_kernel.kc.execute("%%think\ndrop the price column")
    _, ids = _card(py_kernel, msg_id)
    update = {"method": "update", "state": {"value": "keep my data"}, "buffer_paths": []}
    _send_comm(py_kernel, ids["reason"], update)
    _send_comm(py_kernel, ids["Reject"], {"method": "custom", "content": {"event": "click"}})
    _, reply = _drain(py_kernel, msg_id)
    assert reply["status"] == "ok"
    tool = [m for m in model.wait_for_requests(2)[1]["messages"] if m["role"] == "tool"][-1]
    assert "rejected" in tool["content"] and "keep my data" in tool["content"]
    reply, outputs = py_kernel.execute("print(list(df.columns))")
    assert "['price']" in _text(outputs)


def test_think_kernel_cell_card_approve(tmp_path, model: FakeModel) -> None:
    """The same card in a think kernel's request cell, clicked while the cell runs."""
    ws = workspace_in(tmp_path)
    (ws / "old.txt").write_text("old\n")
    kernel = start_kernel(ws, kernel_env(tmp_path, model), name="think")
    try:
        model.reply(tool_calls=[("delete_file", {"path": "old.txt"})])
        model.reply(text="Deleted old.txt.")
        msg_id = kernel.kc.execute("delete old.txt")
        seen, ids = _card(kernel, msg_id)
        assert "-old" in _text(seen) or "delete old.txt" in _text(seen)
        assert (ws / "old.txt").exists()
        _send_comm(kernel, ids["Approve"], {"method": "custom", "content": {"event": "click"}})
        _, reply = _drain(kernel, msg_id)
        assert reply["status"] == "ok"
        assert not (ws / "old.txt").exists()
    finally:
        kernel.stop()


def test_figures_from_sandboxed_tools_show_in_the_cell(py_kernel: Kernel, model: FakeModel) -> None:
    """A figure drawn by sandboxed code (``execute_code``) appears in the ``%%think`` cell,
    as it does in a think notebook, and our own metadata stays out of the notebook."""
    model.reply(
        tool_calls=[
            (
                "execute_code",
                {
                    "code": "import matplotlib.pyplot as plt\n"
                    "plt.plot([1, 3, 2]); plt.title('sandboxed'); plt.show()"
                },
            )
        ]
    )
    model.reply(text="Drawn in the sandbox.")
    reply, outputs = py_kernel.execute("%%think\ndraw a line in the sandbox", timeout=120)
    assert reply["status"] == "ok", reply
    pngs = [
        m["content"]["data"]
        for m in outputs
        if m["msg_type"] == "display_data" and "image/png" in m["content"]["data"]
    ]
    assert len(pngs) == 1, [m["msg_type"] for m in outputs]
    assert base64.b64decode(pngs[0]["image/png"])[:8] == b"\x89PNG\r\n\x1a\n"
    assert "think" not in pngs[0]
    assert "Drawn in the sandbox." in _text(outputs)
