"""A file an external MCP server's tool changes is in the turn's checkpoint: a real server with
the rooms, a real think kernel running the test MCP server (stdio) in the workspace, a pycrdt
peer for a person's tab; only the model is scripted."""

from __future__ import annotations

from tests.waiting import until

from ..collab.conftest import disk_text
from ..collab.peers import wait_change
from ..mcp.conftest import stdio_entry, write_mcp_json
from .conftest import turn


async def test_a_file_an_mcp_tool_wrote_is_recorded_and_rewound(
    jp_root_dir, jp_config_dir, api, peers, model_env
) -> None:
    log = jp_root_dir / "log.md"
    log.write_text("start\n")
    made = jp_root_dir / "made.md"
    write_mcp_json(jp_config_dir, {"test": stdio_entry(log)})
    tab = await peers("log.md")
    fm = model_env
    _, session = await api("POST", "sessions", {"title": "mcp"})
    sid = session["id"]
    code, _ = await api("PATCH", f"sessions/{sid}", {"approval": {"mode": "auto"}})
    assert code == 200

    fm.reply(tool_calls=[("read_file", {"path": "log.md"})])
    fm.reply(tool_calls=[("test__add_note", {"text": "hello"})])
    fm.reply(tool_calls=[("write_file", {"path": "made.md", "content": "x\n"})])
    fm.reply(text="noted")
    first = await turn(api, sid, "note it", "noted")
    tool_msgs = [m for m in fm.requests[2]["messages"] if m["role"] == "tool"]
    assert tool_msgs[-1]["content"] == "noted: hello"
    assert disk_text(jp_root_dir, "log.md") == "start\nhello\n"
    # The server's write reached the person's open tab, as a sandboxed run's does.
    await wait_change(tab, lambda: str(tab.text()) == "start\nhello\n", timeout=10)

    _, cps = await api("GET", f"sessions/{sid}/checkpoints")
    [cp] = cps["checkpoints"]
    assert [(f["path"], f["known"]) for f in cp["files"]] == [
        ("log.md", True),
        ("made.md", True),
    ]
    code, out = await api(
        "POST", f"sessions/{sid}/rewind", {"message_id": first, "restore": "files"}
    )
    assert code == 200, out
    assert out["restored"] == ["log.md"] and out["deleted"] == ["made.md"], out
    await wait_change(tab, lambda: str(tab.text()) == "start\n", timeout=10)
    await until(lambda: disk_text(jp_root_dir, "log.md") == "start\n", 10, "log.md restored")
    assert not made.exists()
