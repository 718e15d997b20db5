"""The think kernel end to end: a real kernel process, the scripted model over HTTP."""

from __future__ import annotations

import json
import sqlite3

from tests.fake_model import FakeModel
from tests.kernel.conftest import Kernel, markdown_of
from think_kernel.store.location import store_file


def displays(outputs: list[dict]) -> list[dict]:
    return [m for m in outputs if m["msg_type"] in ("display_data", "update_display_data")]


def tool_messages(request: dict) -> list[dict]:
    """Tool results the model was sent (the shared kernel's session keeps earlier ones)."""
    return [m for m in request["messages"] if m["role"] == "tool"]


def test_multi_step_tool_use_creates_file_and_lists(
    shared_kernel: Kernel, model: FakeModel
) -> None:
    model.reply(
        text="I'll create it.",
        tool_calls=[("write_file", {"path": "hello.py", "content": "print('hi')\n"})],
    )
    model.reply(tool_calls=[("list_files", {})])
    model.reply(text="Created **hello.py** (prints `hi`); the folder holds `hello.py`.")
    reply, outputs = shared_kernel.execute(
        "create hello.py that prints hi, run nothing, and list the folder"
    )
    assert reply["status"] == "ok", reply
    assert (shared_kernel.workspace / "hello.py").read_text() == "print('hi')\n"

    requests = model.wait_for_requests(3)
    assert requests[0]["model"] == "fake-model"
    assert {t["function"]["name"] for t in requests[0]["tools"]} >= {"write_file", "list_files"}
    listing = tool_messages(requests[2])[-1]["content"]
    assert "hello.py" in listing

    shown = displays(outputs)
    assert shown[0]["msg_type"] == "display_data"
    display_id = shown[0]["content"]["transient"]["display_id"]
    assert all(m["content"]["transient"]["display_id"] == display_id for m in shown)
    assert shown[0]["content"]["metadata"] == {} or "think" in shown[0]["content"]["metadata"]
    final = markdown_of(outputs)
    assert final.startswith("I'll create it.")
    assert "> ▸ **write_file** <code>hello.py, content=&lt;2 lines&gt;</code> · ✓" in final
    assert "> ▸ **list_files** · ✓" in final
    assert final.rstrip().endswith("the folder holds `hello.py`.")
    assert "thinking" not in final and "running" not in final
    assert not [m for m in outputs if m["msg_type"] in ("error", "stream")]
    # the session id travels in the output metadata, so a saved notebook records it
    assert shown[-1]["content"]["metadata"]["think"]["session_id"].startswith("s_")

    # Every call is in the action log, summarised.
    db = sqlite3.connect(store_file(shared_kernel.workspace))
    rows = db.execute(
        "SELECT tool, success, input_summary, output_summary, duration_ms, message_id, "
        "session_id FROM action_log ORDER BY ts"
    ).fetchall()
    db.close()
    by_tool = {r[0]: r for r in rows}
    write = by_tool["write_file"]
    assert write[1] == 1 and "hello.py" in write[2] and "hello.py" in write[3]
    assert write[4] is not None and write[5] and write[6].startswith("s_")
    assert by_tool["list_files"][1] == 1


def test_answer_streams_in_batched_display_updates(shared_kernel: Kernel, model: FakeModel) -> None:
    words = [f"w{i} " for i in range(60)]
    model.reply(tokens=words, delay=0.01)  # ~0.6 s of streaming
    reply, outputs = shared_kernel.execute("stream a long answer")
    assert reply["status"] == "ok"
    updates = [m for m in outputs if m["msg_type"] == "update_display_data"]
    texts = [m["content"]["data"]["text/markdown"] for m in updates]
    # Live: partial answers were shown; batched: far fewer updates than the 60 tokens.
    assert any("w5 " in t and "w59" not in t for t in texts), texts
    assert 3 <= len(updates) <= 25, len(updates)
    assert markdown_of(outputs).strip() == "".join(words).strip()


def test_malformed_and_mistyped_tool_arguments_become_tool_errors(
    shared_kernel: Kernel, model: FakeModel
) -> None:
    model.reply(
        tool_calls=[
            ("write_file", '{"path": "a.py", "content": '),  # cut JSON
            ("read_file", {"path": ["not", "a", "string"]}),  # wrong type
        ]
    )
    model.reply(text="Sorry, fixed my arguments.")
    reply, outputs = shared_kernel.execute("make a.py")
    assert reply["status"] == "ok"
    results = tool_messages(model.wait_for_requests(2)[1])[-2:]
    assert all("rror" in r["content"] for r in results), results
    final = markdown_of(outputs)
    assert final.count("✗ error") == 2
    assert final.rstrip().endswith("Sorry, fixed my arguments.")
    assert not (shared_kernel.workspace / "a.py").exists()


def test_429_then_success_shows_waiting_then_answers(
    shared_kernel: Kernel, model: FakeModel
) -> None:
    model.reply(error=429)
    model.reply(text="Answer after the retry.")
    reply, outputs = shared_kernel.execute("say something")
    assert reply["status"] == "ok"
    assert len(model.wait_for_requests(2)) == 2
    texts = [m["content"]["data"]["text/markdown"] for m in displays(outputs)]
    assert any("waiting" in t and "429" in t and "retry 1/3" in t for t in texts), texts
    assert markdown_of(outputs).strip() == "Answer after the retry."


def test_path_escapes_are_refused(shared_kernel: Kernel, model: FakeModel) -> None:
    secret = shared_kernel.workspace.parent / "secret.txt"
    secret.write_text("top secret")
    model.reply(
        tool_calls=[
            ("read_file", {"path": "../secret.txt"}),
            ("read_file", {"path": str(secret)}),
            ("write_file", {"path": "../evil.py", "content": "x"}),
        ]
    )
    model.reply(text="I cannot leave the workspace.")
    reply, outputs = shared_kernel.execute("read ../secret.txt")
    assert reply["status"] == "ok"
    results = tool_messages(model.wait_for_requests(2)[1])[-3:]
    assert not any("top secret" in r["content"] for r in results)
    assert all("workspace" in r["content"].lower() for r in results), results
    assert not (shared_kernel.workspace.parent / "evil.py").exists()
    assert markdown_of(outputs).count("✗ error") == 3
    db = sqlite3.connect(store_file(shared_kernel.workspace))
    failed = db.execute("SELECT COUNT(*) FROM action_log WHERE success = 0").fetchone()[0]
    db.close()
    assert failed >= 3


def test_python_and_bash_cells_stream_and_report_exit_status(shared_kernel: Kernel) -> None:
    reply, outputs = shared_kernel.execute(
        "%%python\nimport sys\nprint('out', flush=True)\nprint('err', file=sys.stderr)"
    )
    assert reply["status"] == "ok", (reply, outputs)
    streams = {
        (m["content"]["name"], m["content"]["text"].strip())
        for m in outputs
        if m["msg_type"] == "stream"
    }
    assert ("stdout", "out") in streams and ("stderr", "err") in streams

    reply, outputs = shared_kernel.execute('%%bash\necho "in $(basename $PWD)"\nexit 3')
    assert reply["status"] == "error" and "exit code 3" in reply["evalue"]
    assert [m["content"]["text"] for m in outputs if m["msg_type"] == "stream"] == ["in ws\n"]
    assert [m["msg_type"] for m in outputs][-1] == "error"

    reply, outputs = shared_kernel.execute("%%python\nraise ValueError('boom')")
    assert reply["status"] == "error"
    error = [m["content"] for m in outputs if m["msg_type"] == "error"][0]
    assert "ValueError: boom" in "\n".join(error["traceback"])
    assert "_think_zygote" not in "\n".join(error["traceback"])  # trimmed to user code


def test_python_cells_share_sandbox_state_and_see_no_secrets(shared_kernel: Kernel) -> None:
    reply, outputs = shared_kernel.execute("%%python\ntotal = 40")
    assert reply["status"] == "ok", (reply, outputs)
    reply, outputs = shared_kernel.execute(
        "%%python\nimport os\nprint(total + 2, sorted(k for k in os.environ if 'KEY' in k))"
    )
    text = "".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream")
    assert reply["status"] == "ok" and text.strip() == "42 []", outputs
    reply, outputs = shared_kernel.execute("%think_status")
    shown = str([m["content"].get("data") for m in outputs])
    assert "sandbox" in shown and ("bubblewrap" in shown.lower() or "landlock" in shown.lower())


def test_commands_and_completion(shared_kernel: Kernel, model: FakeModel) -> None:
    reply, outputs = shared_kernel.execute("%think_model other-model")
    assert reply["status"] == "ok"
    model.reply(text="hi")
    reply, _ = shared_kernel.execute("hello")
    assert model.wait_for_requests(1)[0]["model"] == "other-model"
    shared_kernel.execute("%think_model default")

    reply, outputs = shared_kernel.execute("%think_status")
    md = outputs[0]["content"]["data"]["text/markdown"]
    assert "fake-model" in md and model.url in md and "sk-test" not in md

    reply, outputs = shared_kernel.execute("%think_config max_steps=0")
    assert reply["status"] == "error" and outputs[0]["msg_type"] == "error"
    reply, _ = shared_kernel.execute("%think_config display_interval=0.05")
    assert reply["status"] == "ok"

    (shared_kernel.workspace / "data").mkdir(exist_ok=True)
    (shared_kernel.workspace / "data" / "prices.csv").write_text("a\n")
    msg_id = shared_kernel.kc.complete("summarise data/pr", 17)
    content = shared_kernel.kc.get_shell_msg(timeout=10)["content"]
    assert content["matches"] == ["data/prices.csv"] and content["cursor_start"] == 10
    msg_id = shared_kernel.kc.complete("%%py", 4)
    content = shared_kernel.kc.get_shell_msg(timeout=10)["content"]
    assert content["matches"] == ["%%python"], msg_id
    msg_id = shared_kernel.kc.complete("read ../", 8)
    assert shared_kernel.kc.get_shell_msg(timeout=10)["content"]["matches"] == []


def test_tool_call_arguments_round_trip_into_history(
    shared_kernel: Kernel, model: FakeModel
) -> None:
    model.reply(tool_calls=[("write_file", {"path": "notes.md", "content": "# Notes\n"})])
    model.reply(text="done")
    shared_kernel.execute("write notes")
    second = model.wait_for_requests(2)[1]
    assistant = [m for m in second["messages"] if m["role"] == "assistant"][-1]
    call = assistant["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"path": "notes.md", "content": "# Notes\n"}
