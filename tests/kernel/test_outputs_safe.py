"""What sandboxed code and the model show in a cell reaches the page only as inert MIME types
(JupyterLab runs the HTML and JavaScript of outputs of cells the person ran)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_model import FakeModel
from tests.kernel.conftest import Kernel, kernel_env, start_kernel, workspace_in
from think_kernel.safeoutput import UNTRUSTED_MIME, scriptable

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow

PAYLOADS = (
    "class Page:\n"
    "    def _repr_html_(self):\n"
    "        return '<img src=x onerror=\"top.__pwned=1\"><script>top.__pwned=2</script>'\n"
    "display(Page())\n"
    "display({'application/javascript': 'top.__pwned=3', 'text/plain': 'js'})\n"
    "display({'text/markdown': '<img src=x onerror=top.__pwned=4>', 'text/plain': 'md'})\n"
    "display({'image/svg+xml': '<svg onload=\"top.__pwned=5\"/>', 'text/plain': 'svg'})\n"
    "display({'application/vnd.jupyter.widget-view+json': {'model_id': 'x'}, 'text/plain': 'w'})\n"
)
ANSWER = "Done <img src=x onerror=top.__pwned=6> [go](javascript:top.__pwned=7) ![i](https://evil.example/?k=1)"


def displays(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The data of every display message of a cell."""
    kinds = ("display_data", "update_display_data", "execute_result")
    return [m["content"]["data"] for m in outputs if m["msg_type"] in kinds]


def assert_inert(outputs: list[dict[str, Any]]) -> None:
    """No display of the cell holds a MIME type or Markdown JupyterLab could script with."""
    shown = displays(outputs)
    assert shown, outputs
    for data in shown:
        assert scriptable(data) == [], data
        md = data.get("text/markdown", "")
        assert "<img" not in md and "<svg" not in md, data
        assert not re.search(r"(?<!\\)\[[^\]]*\]\(javascript:", md), data


@pytest.fixture(scope="module")
def think(tmp_path_factory: pytest.TempPathFactory, fm: FakeModel) -> Iterator[Kernel]:
    tmp = tmp_path_factory.mktemp("safe")
    kernel = start_kernel(workspace_in(tmp), kernel_env(tmp, fm))
    yield kernel
    kernel.stop()


@pytest.fixture(scope="module")
def py_kernel(tmp_path_factory: pytest.TempPathFactory, fm: FakeModel) -> Iterator[Kernel]:
    tmp = tmp_path_factory.mktemp("safepy")
    kernel = start_kernel(workspace_in(tmp), kernel_env(tmp, fm), name="python3")
    reply, outputs = kernel.execute("%load_ext think_kernel")
    assert reply["status"] == "ok", outputs
    yield kernel
    kernel.stop()


def test_python_cell_html_goes_to_the_sandboxed_type(think: Kernel) -> None:
    reply, outputs = think.execute("%%python\n" + PAYLOADS, timeout=120)
    assert reply["status"] == "ok", outputs
    assert_inert(outputs)
    wrapped = [d[UNTRUSTED_MIME]["data"] for d in displays(outputs) if UNTRUSTED_MIME in d]
    assert [sorted(w) for w in wrapped] == [
        ["text/html", "text/plain"],
        ["application/javascript", "text/plain"],
        ["image/svg+xml", "text/plain"],
        ["application/vnd.jupyter.widget-view+json", "text/plain"],
    ]
    assert "<script>" in wrapped[0]["text/html"]  # whole, for the sandboxed frame


def test_a_dataframe_and_a_figure_still_show(think: Kernel) -> None:
    code = (
        "import pandas as pd, matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "display(pd.DataFrame({'a': [1, 2]}))\nplt.plot([1, 2])\n"
    )
    reply, outputs = think.execute("%%python\n" + code, timeout=120)
    assert reply["status"] == "ok", outputs
    shown = displays(outputs)
    frame = next(d for d in shown if UNTRUSTED_MIME in d)
    assert "<table" in frame[UNTRUSTED_MIME]["data"]["text/html"]
    assert frame["text/plain"].split() == ["a", "0", "1", "1", "2"]
    assert any("image/png" in d for d in shown)


def test_tool_output_and_answer_are_inert(think: Kernel, model: FakeModel) -> None:
    model.reply(tool_calls=[("execute_code", {"code": PAYLOADS})])
    model.reply(text=ANSWER)
    reply, outputs = think.execute("show me", timeout=120)
    assert reply["status"] == "ok", outputs
    assert_inert(outputs)
    answer = displays(outputs)[-1]["text/markdown"]
    assert "&lt;img src=x" in answer and "[image: i](https://evil.example/?k=1)" in answer
    assert sum(UNTRUSTED_MIME in d for d in displays(outputs)) == 4


def test_reasoning_and_errors_are_inert(think: Kernel, model: FakeModel) -> None:
    model.reply(reasoning="<svg onload=top.__pwned=8>", text="ok")
    reply, outputs = think.execute("think", timeout=60)
    assert reply["status"] == "ok", outputs
    assert_inert(outputs)
    md = displays(outputs)[-1]["text/markdown"]
    assert md.startswith("<details><summary>Reasoning</summary>\n\n&lt;svg onload"), md


def test_think_cell_in_python_kernel_is_inert(py_kernel: Kernel, model: FakeModel) -> None:
    model.reply(tool_calls=[("execute_code", {"code": PAYLOADS})])
    model.reply(text=ANSWER)
    reply, outputs = py_kernel.execute("%%think\nshow me", timeout=120)
    assert reply["status"] == "ok", outputs
    assert_inert(outputs)
    assert sum(UNTRUSTED_MIME in d for d in displays(outputs)) == 4


def test_approval_card_escapes_what_the_model_wrote() -> None:
    from think_kernel.approvals.widget import ApprovalCard

    event = {"id": "a1", "tool": "<img src=x onerror=1>", "summary": "<script>1</script>",
             "reason": "<svg onload=1>", "input": {"code": "<iframe srcdoc='x'>"}}  # fmt: skip
    card = ApprovalCard(event, lambda frame: None)
    assert "<img" not in card.header.value and "<script" not in card.header.value
    assert "<svg" not in card.header.value and "<iframe" not in card.header.value
    card.resolved({"decision": "reject", "user": "<b>x</b>", "reason": "<img src=x onerror=1>"})
    assert "<img" not in card.status.value and "<b>" not in card.status.value


def test_untrusted_type_is_saved_as_it_is(tmp_path: Path) -> None:
    """The saved notebook keeps the wrapped bundle, which nbformat accepts."""
    import nbformat

    from think_kernel.safeoutput import safe_bundle

    nb = nbformat.v4.new_notebook()
    out = nbformat.v4.new_output("display_data", data=safe_bundle({"text/html": "<b>x</b>"}))
    nb.cells.append(nbformat.v4.new_code_cell("%%python", outputs=[out]))
    path = tmp_path / "n.ipynb"
    nbformat.write(nb, path)
    back = nbformat.read(path, as_version=4)
    nbformat.validate(back)
    assert back.cells[0].outputs[0].data[UNTRUSTED_MIME]["data"] == {"text/html": "<b>x</b>"}
