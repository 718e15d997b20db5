"""The pure parts: which servers (traitlets over mcp.json files), ``${VAR}`` expansion, tool
names, schema tools and the destructive rule of the approval policy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from think_kernel.approvals import Policy
from think_kernel.mcp.config import ConfigError, expand, load_servers, scrubbed_env
from think_kernel.mcp.names import tool_name
from think_kernel.mcp.results import to_output
from think_kernel.tools.base import SchemaTool, ToolContext, ToolError, ToolRegistry


def write(folder: Path, data: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "mcp.json").write_text(json.dumps(data))
    return folder / "mcp.json"


def test_files_merge_by_priority_and_traitlets_win(tmp_path: Path) -> None:
    user = write(
        tmp_path / "user", {"mcpServers": {"a": {"command": "user-a"}, "b": {"url": "http://u/b"}}}
    )
    system = write(
        tmp_path / "sys", {"mcpServers": {"a": {"command": "sys-a"}, "c": {"command": "c"}}}
    )
    specs, problems = load_servers({"b": {"command": "mine"}}, [user, system], {})
    by = {s.name: s for s in specs}
    assert not problems
    assert by["a"].command == "user-a" and by["a"].source == str(user)  # the earlier dir wins
    assert by["b"].transport == "stdio" and by["b"].command == "mine"  # the traitlet wins
    assert by["c"].command == "c"
    missing = tmp_path / "nowhere" / "mcp.json"
    assert load_servers(None, [missing], {}) == ([], [])


def test_entries_that_cannot_be_used_are_problems_not_crashes(tmp_path: Path) -> None:
    bad_json = tmp_path / "bad"
    bad_json.mkdir()
    (bad_json / "mcp.json").write_text("{not json")
    good = write(
        tmp_path / "good",
        {
            "mcpServers": {
                "no-command": {"args": ["x"]},
                "sse": {"type": "sse", "url": "http://x/sse"},
                "ftp": {"url": "ftp://x"},
                "unset": {"command": "x", "env": {"K": "${THINK_TEST_UNSET}"}},
                "off": {"command": "x", "disabled": True},
                "bad-timeout": {"command": "x", "timeout": -1},
                "ok": {"command": "x", "args": ["--port", 3], "timeout": 5},
            }
        },
    )
    specs, problems = load_servers(["not", "a", "dict"], [bad_json / "mcp.json", good], {})
    assert [s.name for s in specs] == ["ok"]
    assert specs[0].args == ("--port", "3") and specs[0].timeout == 5.0
    why = {p.name: p.message for p in problems}
    assert "not a valid MCP config" in why["*"] or "mcpServers" in why["*"]
    assert why["no-command"] == "command must be a non-empty string"
    assert "not supported" in why["sse"]
    assert "must start with http" in why["ftp"]
    assert why["unset"] == "${THINK_TEST_UNSET} is not set in the kernel's environment"
    assert "positive" in why["bad-timeout"]
    assert "off" not in why


def test_expansion() -> None:
    env = {"A": "1", "EMPTY": ""}
    assert expand("x${A}y", env) == "x1y"
    assert expand("${MISSING:-dflt}/${EMPTY:-e}/${EMPTY}", env) == "dflt/e/"
    assert expand("$A and ${not a var", env) == "$A and ${not a var"
    with pytest.raises(ConfigError):
        expand("${MISSING}", env)


def test_scrubbed_env_keeps_no_secret() -> None:
    env = {
        "PATH": "/bin",
        "HOME": "/h",
        "LC_ALL": "C",
        "OPENAI_API_KEY": "sk",
        "JPY_SESSION_NAME": "x",
        "THINK_SERVER_URL": "u",
        "GITHUB_TOKEN": "t",
        "BASH_FUNC_x%%": "() { :; }",
    }
    assert scrubbed_env(env) == {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C"}


def test_tool_names_fit_what_endpoints_accept() -> None:
    taken: set[str] = set()
    assert tool_name("git hub", "repos.list", taken) == "git_hub__repos_list"
    assert tool_name("git.hub", "repos/list", taken) == "git_hub__repos_list_2"
    long = tool_name("s" * 40, "t" * 40, taken)
    assert len(long) == 64 and long.startswith("s" * 40 + "__")
    assert tool_name("s" * 40, "t" * 40, taken) != long  # still unique
    assert all(len(n) <= 64 for n in taken)


async def test_schema_tool_checks_arguments_against_the_schema(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    async def call(ctx: ToolContext, args: dict[str, Any]) -> str:
        seen.append(args)
        return "ok"

    schema = {
        "type": "object",
        "properties": {"my-arg": {"type": "integer"}},
        "required": ["my-arg"],
    }
    tool = SchemaTool("s__t", "A tool.", schema, call, read_only=True, destructive=True)
    assert tool.read_only and not tool.destructive  # readOnlyHint wins (the spec's rule)
    registry = ToolRegistry([tool])
    ctx = ToolContext(session_id="s", workspace=None)  # type: ignore[arg-type]
    good = await registry.call("s__t", '{"my-arg": 3}', ctx)
    assert good.output.ok and seen == [{"my-arg": 3}]
    bad = await registry.call("s__t", '{"my-arg": "three"}', ctx)
    assert not bad.output.ok and "invalid arguments for s__t: my-arg: 'three'" in bad.output.text
    missing = await registry.call("s__t", "{}", ctx)
    assert "'my-arg' is a required property" in missing.output.text
    assert registry.specs()[0]["function"]["parameters"] == schema
    broken = SchemaTool("s__b", "", {"type": 12}, call)  # a broken schema: the server checks
    assert broken.parse({"anything": 1}) == {"anything": 1}
    with pytest.raises(ToolError):
        broken.parse("[1]")


def test_destructive_tools_ask_unless_auto_or_named_by_a_rule() -> None:
    d = {"srv__wipe"}
    always = Policy.from_settings("default", props={"approval": {"always": ["srv__wipe"]}})
    assert always.check("srv__wipe", {}, destructive=d) == (
        "srv__wipe is marked destructive by its MCP server"
    )
    assert Policy.from_settings("strict").check("srv__wipe", {}, destructive=d)
    assert Policy.from_settings("auto").check("srv__wipe", {}, destructive=d) is None
    named = Policy.from_settings("default", [{"tool": "srv__wipe", "action": "allow"}])
    assert named.check("srv__wipe", {}, destructive=d) is None
    glob = Policy.from_settings("default", [{"tool": "srv__*", "action": "allow"}])
    assert glob.check("srv__wipe", {}, destructive=d)  # a wildcard is not enough
    assert glob.check("srv__read", {}, known={"srv__read"}) is None


def test_results_become_outputs() -> None:
    from mcp_types import (
        CallToolResult,
        EmbeddedResource,
        ImageContent,
        TextContent,
        TextResourceContents,
    )

    result = CallToolResult(
        content=[
            TextContent(text="hello"),
            ImageContent(data="aGk=", mime_type="image/png"),
            EmbeddedResource(resource=TextResourceContents(uri="file:///a", text="inside")),
        ]
    )
    out = to_output(result, "srv", "t")
    assert out.ok and out.text == "hello\n[image image/png, 3 bytes]\ninside"
    assert out.display == [{"image/png": "aGk="}]
    failed = to_output(
        CallToolResult(content=[TextContent(text="boom")], is_error=True), "srv", "t"
    )
    assert not failed.ok and failed.error == "MCP server 'srv' says t failed: boom"
    structured = to_output(CallToolResult(content=[], structured_content={"n": 1}), "srv", "t")
    assert json.loads(structured.text) == {"n": 1}


def test_the_endpoint_names_every_file_notebook_and_code_tool() -> None:
    from jupyter_ext.mcp.tools import DEFAULT_TOOLS, SERVABLE, servable_groups, served_tools

    assert set(SERVABLE) == set(servable_groups())
    served = served_tools([*DEFAULT_TOOLS, "no_such_tool"])
    assert list(served) == DEFAULT_TOOLS and "execute_cell" not in served
