"""Tools the agent writes for itself, through a running server: a chat writes one, a person
approves it over REST, a second chat (another kernel) calls it and its body runs in that
chat's sandbox; an edit asks again and changes what the next step runs.

Real server, real think kernels and sandboxes; the model is scripted at HTTP.
"""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from tests.waiting import until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

CSVTOOLS = textwrap.dedent('''
    import csv
    import os
    import socket

    import think

    READ_ONLY = ["summarize_csv"]
    VERSION = 1


    def summarize_csv(path: str) -> dict:
        """Summarize a CSV file: its columns and number of rows.

        Args:
            path: the CSV file, relative to the workspace
        """
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        try:
            socket.create_connection(("1.1.1.1", 80), timeout=5).close()
            net = "connected"
        except OSError as e:
            net = f"refused: {type(e).__name__}"
        print("summarized", path)
        return {
            "columns": rows[0],
            "rows": len(rows) - 1,
            "uid": os.getuid(),
            "socket": net,
            "through_loopback": path in think.list_files("."),
            "version": VERSION,
        }
''')

WRITE_TOOL = (
    "import os\n"
    "os.makedirs('.think/tools', exist_ok=True)\n"
    f"open('.think/tools/csvtools.py', 'w').write({CSVTOOLS!r})\n"
    "print('written')\n"
)


def _tool_messages(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def _tool_names(request: dict) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


async def _session(api, title: str) -> str:
    code, s = await api("POST", "sessions", {"title": title})
    assert code == 201
    return s["id"]


async def _approve(api, sid: str, approval_id: str) -> None:
    code, row = await api(
        "POST", f"sessions/{sid}/approvals/{approval_id}", {"decision": "approve"}
    )
    assert code == 200 and row["status"] == "approved", row


async def test_a_tool_the_agent_wrote_runs_in_another_chats_sandbox_once_approved(
    api, ws, think, model_env, jp_root_dir
):
    (jp_root_dir / "data.csv").write_text("name,score\nada,3\nbob,5\n")
    # Chat A writes the tool with its code tool, then answers.
    model_env.reply(tool_calls=[("execute_code", {"code": WRITE_TOOL})])
    model_env.reply(text="I wrote summarize_csv in .think/tools/csvtools.py.")
    a = await _session(api, "writer")
    tab_a = await ws(a)
    await api("POST", f"sessions/{a}/messages", {"content": "write a csv tool"})
    # The step after the write shows the file for approval; the run does not wait for it.
    asked = (await until(lambda: tab_a.of("approval_requested"), 90, "the file's approval"))[0]
    assert asked["tool"] == "load_tool_file"
    assert (
        asked["summary"] == "load self-written tools from .think/tools/csvtools.py: summarize_csv"
    )
    assert "+def summarize_csv(path: str) -> dict:" in asked["diff"]
    await until(lambda: tab_a.of("task_complete"), 60, "chat A's run ends")
    assert "summarize_csv" not in _tool_names(model_env.requests[1])  # not approved yet
    _, pending = await api("GET", f"sessions/{a}/approvals", status="pending")
    assert [p["id"] for p in pending["approvals"]] == [asked["id"]]
    await _approve(api, a, asked["id"])

    # Chat B, another kernel: the tool is offered and its body runs in B's sandbox.
    model_env.reply(tool_calls=[("summarize_csv", {"path": "data.csv"})])
    model_env.reply(tool_calls=[("execute_code", {"code": "import os; print('uid', os.getuid())"})])
    model_env.reply(text="data.csv has 2 rows.")
    b = await _session(api, "user")
    tab_b = await ws(b)
    await api("POST", f"sessions/{b}/messages", {"content": "summarize data.csv"})
    await until(lambda: tab_b.of("task_complete"), 120, "chat B's run ends")
    first = model_env.requests[2]
    assert "summarize_csv" in _tool_names(first), _tool_names(first)
    assert not tab_b.of("approval_requested")  # approved once, for the workspace
    result = json.loads(_tool_messages(model_env.requests[3])[-1].split("\n[printed]")[0])
    assert result["columns"] == ["name", "score"] and result["rows"] == 2
    assert result["socket"].startswith("refused") and result["through_loopback"] is True
    uid_line = _tool_messages(model_env.requests[4])[-1]
    assert f"uid {result['uid']}\n" in uid_line  # the same uid as B's sandboxed code
    _, kernels = await api("GET", "kernels")
    pids = [k["pid"] for k in kernels["kernels"] if k.get("session_id") == b and k.get("pid")]
    assert pids, kernels
    assert result["uid"] != os.stat(f"/proc/{pids[0]}").st_uid  # not the kernel's
    progress = [f for f in tab_b.of("tool_progress") if "summarized data.csv" in f.get("text", "")]
    assert progress  # its output streamed
    _, actions = await api("GET", f"sessions/{b}/actions")
    assert any(r["tool"] == "summarize_csv" for r in actions["actions"]), actions

    # An edit: the next step unloads it and asks again; once approved, the new body runs.
    path = jp_root_dir / ".think" / "tools" / "csvtools.py"
    path.write_text(path.read_text().replace("VERSION = 1", "VERSION = 2"))
    model_env.reply(tool_calls=[("summarize_csv", {"path": "data.csv"})])
    model_env.reply(text="It changed; it waits for you.")
    await api("POST", f"sessions/{b}/messages", {"content": "again"})
    again = (await until(lambda: tab_b.of("approval_requested"), 90, "the edit's approval"))[0]
    assert "-VERSION = 1" in again["diff"] and "+VERSION = 2" in again["diff"]
    await until(lambda: len(tab_b.of("task_complete")) == 2, 60, "the second run ends")
    assert "unknown tool 'summarize_csv'" in _tool_messages(model_env.requests[6])[-1]
    await _approve(api, b, again["id"])
    model_env.reply(tool_calls=[("summarize_csv", {"path": "data.csv"})])
    model_env.reply(text="Version 2.")
    await api("POST", f"sessions/{b}/messages", {"content": "once more"})
    await until(lambda: len(tab_b.of("task_complete")) == 3, 90, "the third run ends")
    result = json.loads(_tool_messages(model_env.requests[8])[-1].split("\n[printed]")[0])
    assert result["version"] == 2
