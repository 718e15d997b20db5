"""Kernel lifecycle: history across restarts, interrupts in both modes, configuration faults,
and notebooks run through nbclient (what a saved notebook looks like)."""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbconvert import MarkdownExporter

from tests.fake_model import FakeModel
from tests.kernel.conftest import kernel_env, markdown_of, start_kernel, workspace_in
from think_kernel.config import HOW_TO_CONFIGURE

# Starts real processes (kernels, sandboxes, servers, a browser): the slow layer.
pytestmark = pytest.mark.slow


def test_history_survives_a_kernel_restart(tmp_path: Path, model: FakeModel) -> None:
    kernel = start_kernel(workspace_in(tmp_path), kernel_env(tmp_path, model))
    try:
        model.reply(text="Noted: the code word is pelican.")
        reply, _ = kernel.execute("remember the code word pelican")
        assert reply["status"] == "ok"
        kernel.km.restart_kernel(now=True)
        kernel.kc.wait_for_ready(timeout=60)
        model.reply(text="It was pelican.")
        reply, outputs = kernel.execute("what was the code word?")
        assert reply["status"] == "ok"
        second = model.wait_for_requests(2)[1]["messages"]
        contents = [(m["role"], m.get("content")) for m in second]
        assert ("user", "remember the code word pelican") in contents
        assert ("assistant", "Noted: the code word is pelican.") in contents
        assert contents[-1] == ("user", "what was the code word?")
        assert markdown_of(outputs).strip() == "It was pelican."
    finally:
        kernel.stop()


@pytest.mark.parametrize("mode", ["signal", "message"])
def test_interrupt_mid_stream_cancels_within_a_second_and_kernel_survives(
    tmp_path: Path, model: FakeModel, mode: str
) -> None:
    kernel = start_kernel(workspace_in(tmp_path), kernel_env(tmp_path, model), interrupt_mode=mode)
    try:
        model.reply(text="Starting a very long answer", hang=True)
        msg_id = kernel.kc.execute("write me an essay")
        kernel.wait_output(
            msg_id,
            lambda m: "very long" in m["content"].get("data", {}).get("text/markdown", ""),
        )
        t0 = time.monotonic()
        kernel.km.interrupt_kernel()
        reply, outputs = kernel.collect(msg_id, timeout=10)
        elapsed = time.monotonic() - t0
        assert elapsed < 1.0, elapsed
        assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
        final = markdown_of(outputs)
        assert "Starting a very long answer" in final and "*Interrupted.*" in final
        assert "thinking" not in final
        assert kernel.km.is_alive()

        # A %%python cell is interrupted too (its own process group gets SIGINT, then SIGKILL).
        msg_id = kernel.kc.execute(
            "%%python\nimport time\nprint('started', flush=True)\ntime.sleep(60)"
        )
        kernel.wait_output(msg_id, lambda m: "started" in m["content"].get("text", ""))
        t0 = time.monotonic()
        kernel.km.interrupt_kernel()
        reply, _ = kernel.collect(msg_id, timeout=10)
        assert time.monotonic() - t0 < 1.0
        assert reply["status"] == "error"

        # The kernel is alive and keeps its session: the next request sees the cut reply.
        model.release.set()
        model.reply(text="Back again.")
        reply, outputs = kernel.execute("are you there?")
        assert reply["status"] == "ok" and markdown_of(outputs).strip() == "Back again."
        last = model.requests[-1]["messages"]
        assert any(m["role"] == "user" and m["content"] == "write me an essay" for m in last)
    finally:
        kernel.stop()


def run_notebook(tmp_path: Path, cells: list[str], env: dict[str, str]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "think", "display_name": "Think", "language": "markdown"}
    ws = workspace_in(tmp_path)
    client = NotebookClient(
        nb,
        kernel_name="think",
        timeout=60,
        allow_errors=True,
        resources={"metadata": {"path": str(ws)}},
    )
    client.execute(env=env)
    return nb


def test_no_configuration_gives_the_how_to_message_and_no_traceback(tmp_path: Path) -> None:
    nb = run_notebook(tmp_path, ["create hello.py"], kernel_env(tmp_path, None))
    outputs = nb.cells[0].outputs
    assert [o.output_type for o in outputs] == ["display_data"]
    assert outputs[0].data["text/markdown"].strip() == HOW_TO_CONFIGURE.strip()
    assert not (tmp_path / "ws" / "hello.py").exists()


def test_rejected_key_says_what_to_fix(tmp_path: Path) -> None:
    fm = FakeModel(api_key="the-right-key").start()
    try:
        nb = run_notebook(tmp_path, ["hello"], kernel_env(tmp_path, fm, api_key="wrong"))
    finally:
        fm.stop()
    outputs = nb.cells[0].outputs
    assert [o.output_type for o in outputs] == ["display_data"]
    text = outputs[0].data["text/markdown"]
    assert "401" in text and "OPENAI_API_KEY" in text and "Traceback" not in text
    assert len(fm.requests) == 1  # permanent: not retried


def test_saved_notebook_reads_as_clean_markdown(tmp_path: Path, model: FakeModel) -> None:
    model.reply(
        reasoning="The user wants a file.",
        tool_calls=[("write_file", {"path": "hello.py", "content": "print('hi')\n"})],
    )
    model.reply(text="Created `hello.py`.")
    nb = run_notebook(
        tmp_path,
        ["create hello.py that prints hi", "%%python\nprint(open('hello.py').read())"],
        kernel_env(tmp_path, model),
    )
    body, _ = MarkdownExporter().from_notebook_node(nb)
    assert "<details><summary>Reasoning</summary>" in body
    # Inline code holding "<" is an inert <code> element (see think_kernel/safeoutput).
    assert "> ▸ **write_file** <code>hello.py, content=&lt;2 lines&gt;</code> · ✓" in body
    assert "Created `hello.py`." in body
    assert "print('hi')" in body  # the %%python cell's output
    assert "thinking" not in body and "running…" not in body and "Traceback" not in body
