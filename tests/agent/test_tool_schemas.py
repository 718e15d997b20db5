"""Tool schemas are built without pydantic on the first request, byte for byte what
pydantic gives; arguments are still validated by pydantic, built on the first call."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any, Literal

import pydantic
import pytest

from think_kernel.kernel.userkernel import make_run_in_kernel
from think_kernel.runtime import Runtime, load_extensions
from think_kernel.tools.base import Tool, ToolContext, ToolError, ToolRegistry, simple_schema


def pydantic_schema(tool: Tool) -> dict[str, Any]:
    """What the tool's schema was when pydantic built it."""
    schema = tool.model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return schema


async def odd(
    ctx: ToolContext,
    names: list[str],
    weights: dict[str, float] | None = None,
    anything: Any = None,
    mode: Literal[1, 2] = 1,
    tags: list[int] | None = None,
    flag: bool = False,
    ids: tuple[str, ...] = (),
) -> str:
    """A tool with every supported kind of annotation.

    Args:
        names: some names
        weights: a weight per name
    """
    return "ok"


async def exotic(ctx: ToolContext, when: tuple[int, int] = (1, 2)) -> str:
    """A tool whose annotation the direct builder does not know."""
    return "ok"


def test_core_tool_schemas_are_pydantics_byte_for_byte(tmp_path: Any) -> None:
    rt = Runtime(workspace_root=tmp_path, extensions=[])
    tools = [*rt.tools.tools.values(), Tool(make_run_in_kernel(lambda r: True)), Tool(odd)]
    assert {"create_subtask", "wait_for_subagents", "read_file"} <= {t.name for t in tools}
    for tool in tools:
        assert json.dumps(tool.parameters) == json.dumps(pydantic_schema(tool)), tool.name


def test_other_annotations_fall_back_to_pydantic() -> None:
    assert simple_schema(tuple[int, int]) is None
    tool = Tool(exotic)
    assert tool.parameters == pydantic_schema(tool)
    assert tool.parse('{"when": [3, 4]}') == {"when": (3, 4)}


def test_arguments_are_still_validated_by_pydantic() -> None:
    tool = Tool(odd)
    assert tool.parse({"names": ["a"], "flag": "true"}) == {
        "names": ["a"], "weights": None, "anything": None, "mode": 1, "tags": None,
        "flag": True, "ids": (),
    }  # fmt: skip
    with pytest.raises(ToolError) as info:
        tool.parse({"names": "a", "extra": 1})
    assert "names: Input should be a valid list" in str(info.value)
    assert "extra: Extra inputs are not permitted" in str(info.value)
    assert isinstance(tool.model, type) and issubclass(tool.model, pydantic.BaseModel)


def test_tools_are_built_once_per_function() -> None:
    assert Tool.of(odd) is Tool.of(odd)
    assert ToolRegistry([odd]).tools["odd"] is ToolRegistry([odd]).tools["odd"]
    assert Tool.of(odd, "renamed").name == "renamed"


@pytest.mark.slow
def test_a_runtime_and_its_first_request_import_no_pydantic(tmp_path: Any) -> None:
    code = (
        "import sys; from think_kernel.runtime import Runtime; "
        f"rt = Runtime(workspace_root={str(tmp_path)!r}, extensions=[]); "
        "rt.tools.specs(); print('pydantic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_extensions_published_under_the_group_are_found(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "think_probe_ext.py").write_text(
        "from think_kernel.runtime import AgentExtension\n"
        "class Probe(AgentExtension):\n    instructions = 'probe instructions'\n"
    )
    for name, group in (("probe_ext", "think_kernel.extensions"), ("other", "console_scripts")):
        info = tmp_path / f"{name}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[{group}]\n{name} = think_probe_ext:Probe\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = load_extensions()
    assert [getattr(e, "instructions", "") for e in found] == ["probe instructions"]
    rt = Runtime(workspace_root=tmp_path)
    assert "probe instructions" in rt.system_prompt({})


async def test_validators_are_built_once_the_runtime_is_idle(tmp_path: Any) -> None:
    class Instant:
        async def stream(self, messages: Any, tools: Any, model: str, *, purpose: str = "step"):
            from think_kernel.agent.model import Chunk

            yield Chunk("text", text="hi")
            yield Chunk("finish", text="stop")

    async def probe(ctx: ToolContext, n: int) -> str:
        """A tool only this runtime has."""
        return str(n)

    rt = Runtime(workspace_root=tmp_path, model=Instant(), extensions=[])
    rt.tools.add(probe)
    await rt.start()
    try:
        assert not rt.tools.tools["probe"].validator_built
        async for _ in rt.run("hello"):
            pass
        rt.warm_when_idle(delay=0.01)
        for _ in range(1000):  # the timer fires 10 ms after the run
            if rt.tools.tools["probe"].validator_built:
                break
            await asyncio.sleep(0.01)
        assert all(t.validator_built for t in rt.tools.tools.values())
    finally:
        await rt.close()
