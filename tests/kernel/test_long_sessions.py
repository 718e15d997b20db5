"""Long-session commands in a real think kernel: %think_attach, %think_status, %think_output."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest

from tests.agent.test_outputs import png
from tests.fake_model import FakeModel, Reply
from tests.kernel.conftest import Kernel, kernel_env, markdown_of, start_kernel, workspace_in

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, fm: FakeModel) -> Iterator[Kernel]:
    """A think kernel whose vision and fast roles have their own models."""
    tmp = tmp_path_factory.mktemp("long")
    env = kernel_env(tmp, fm)
    env["THINK_VISION_MODEL"] = "eyes"
    env["THINK_FAST_MODEL"] = "quick"
    k = start_kernel(workspace_in(tmp), env)
    yield k
    k.stop()


def shown(outputs: list[dict]) -> str:
    return "\n".join(
        m["content"]["data"].get("text/markdown", "")
        for m in outputs
        if m["msg_type"] in ("display_data", "execute_result")
    )


def test_attach_an_image_then_ask(kernel: Kernel, model: FakeModel) -> None:
    image = png(4, 4)
    (kernel.workspace / "plot.png").write_bytes(image)
    reply, outputs = kernel.execute("%think_attach plot.png")
    assert reply["status"] == "ok" and "Attached `plot.png` (image" in shown(outputs)
    assert "`eyes`" in shown(outputs)
    model.reply(text="A red square.")
    reply, outputs = kernel.execute("what does the plot show?")
    assert reply["status"] == "ok" and "A red square." in markdown_of(outputs)
    (body,) = model.wait_for_requests(1)
    assert body["model"] == "eyes"
    url = body["messages"][-1]["content"][1]["image_url"]["url"]
    assert url.endswith(base64.b64encode(image).decode())
    # Nothing stays attached for the next request.
    reply, outputs = kernel.execute("%think_attach")
    assert "Nothing attached" in shown(outputs)


def test_status_shows_usage_per_role(kernel: Kernel, model: FakeModel) -> None:
    model.reply(text="hello")
    kernel.execute("say hello")
    reply, outputs = kernel.execute("%think_status")
    text = shown(outputs)
    assert reply["status"] == "ok"
    assert "context window" in text and "32,768 tokens" in text  # fake-model: unknown model
    assert "| role | model | calls | tokens in |" in text
    assert "| primary | fake-model |" in text and "| vision | eyes |" in text
    assert "| **total** |" in text


def test_large_output_summary_in_the_cell_whole_on_demand(kernel: Kernel, model: FakeModel) -> None:
    model.internal = lambda body: Reply(text="QUICK SUMMARY: the numbers 1 to 30000")
    model.reply(tool_calls=[("bash", {"command": "seq 1 30000"})])
    model.reply(text="counted")
    reply, outputs = kernel.execute("count to 30000", timeout=120)
    assert reply["status"] == "ok"
    shown_md = [
        m["content"]["data"]["text/markdown"]
        for m in outputs
        if m["msg_type"] in ("display_data", "update_display_data")
        and "text/markdown" in m["content"]["data"]
    ]
    cell = "\n".join(shown_md)
    assert "> ▸ **bash** `seq 1 30000` · ✓" in cell
    assert "whole output (" in cell and "`%think_output call_" in cell
    # The cell itself expands to the whole output (a collapsed block after the tool line),
    # and the answer follows it.
    (whole,) = [t for t in shown_md if t.startswith("<details><summary>Whole output of bash")]
    assert "\n1\n2\n3\n" in whole and "\n29999\n30000\n" in whole and "exit code 0" in whole
    assert shown_md.index(whole) < len(shown_md) - 1 and "counted" in markdown_of(outputs)
    (summary_call,) = [r for r in model.internal_requests if r["_purpose"] == "tool_summary"]
    assert summary_call["model"] == "quick" and summary_call["_purpose"] == "tool_summary"
    sent = [m for m in model.requests[1]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "QUICK SUMMARY" in sent and len(sent) <= 30_000
    call_id = cell.split("`%think_output ")[1].split("`")[0]
    reply, outputs = kernel.execute(f"%think_output {call_id}")
    text = shown(outputs)
    assert reply["status"] == "ok"
    assert "\n1\n2\n3\n" in text and "\n29999\n30000\n" in text
    reply, outputs = kernel.execute("%think_output no-such-call")
    assert reply["status"] == "error" and "no tool call" in str(outputs)
