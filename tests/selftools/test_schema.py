"""Tool schemas from a file's syntax tree: types, defaults, docstrings, markers, problems."""

from __future__ import annotations

import textwrap

from think_kernel.selftools.schema import param_docs, parse_tool_file

GOOD = textwrap.dedent('''
    from typing import Literal, Optional
    import this_module_does_not_exist_anywhere  # never imported by the kernel

    READ_ONLY = ["summarize_csv"]


    def summarize_csv(
        path: str,
        limit: int = 10,
        ratio: float = 0.5,
        header: bool = True,
        columns: Optional[list[str]] = None,
        options: dict[str, int] | None = None,
        mode: Literal["fast", "full"] = "fast",
    ) -> dict:
        """Summarize a CSV file: its columns and row count.

        Longer text that is not the description.

        Args:
            path: the CSV file, relative to the workspace
            limit: rows to look at
                (wrapped onto a second line)
            mode: how hard to look
        """


    async def touch(name: str) -> str:
        """Create a file.

        Parameters
        ----------
        name : str
            the file's name

        Returns
        -------
        str
        """


    def _helper(x):
        return x
''')


def test_a_typed_documented_function_becomes_a_schema() -> None:
    spec = parse_tool_file(".think/tools/csvtools.py", GOOD)
    assert spec.problems == []
    csv, touch = spec.tools
    assert csv.name == "summarize_csv" and csv.read_only and csv.line == 8
    assert csv.description == "Summarize a CSV file: its columns and row count."
    props = csv.parameters["properties"]
    assert csv.parameters["required"] == ["path"]
    assert csv.parameters["additionalProperties"] is False
    assert props["path"] == {
        "type": "string",
        "description": "the CSV file, relative to the workspace",
    }
    assert props["limit"] == {
        "type": "integer",
        "default": 10,
        "description": "rows to look at (wrapped onto a second line)",
    }
    assert props["ratio"] == {"type": "number", "default": 0.5}
    assert props["header"] == {"type": "boolean", "default": True}
    assert props["columns"] == {
        "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
        "default": None,
    }
    assert props["options"]["anyOf"][0] == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }
    assert props["mode"] == {
        "type": "string",
        "enum": ["fast", "full"],
        "default": "fast",
        "description": "how hard to look",
    }
    assert touch.is_async and not touch.read_only
    assert touch.parameters["properties"]["name"]["description"] == "the file's name"


def test_problems_name_the_file_and_line() -> None:
    broken = parse_tool_file(".think/tools/b.py", "def f(:\n    pass\n")
    assert broken.tools == []
    problems = [str(p) for p in broken.problems]
    assert problems == [".think/tools/b.py:1: syntax error: invalid syntax"]

    source = textwrap.dedent('''
        def ok(x: int) -> int:
            """Fine."""

        def odd(x: set[int]) -> int:
            """An unsupported annotation."""

        def untyped(x) -> int:
            """No annotation."""

        def undocumented(x: int) -> int:
            return x

        def star(*args: int) -> int:
            """Varargs."""

        def keyed(x: dict[int, str]) -> int:
            """Keys that JSON cannot have."""

        def computed(x: int = len("ab")) -> int:
            """A default that is not a constant."""
    ''')
    spec = parse_tool_file("t.py", source)
    assert [t.name for t in spec.tools] == ["ok"]
    lines = {p.line: p.message for p in spec.problems}
    assert "unsupported annotation 'set[int]'" in lines[5]
    assert "parameter 'x' has no type annotation" in lines[8]
    assert "has no docstring" in lines[11]
    assert "*args" in lines[14]
    assert "dict keys must be str" in lines[17]
    assert "is not a constant" in lines[20]


def test_a_file_without_tools_and_a_bad_marker_say_so() -> None:
    assert "no public top-level function" in str(parse_tool_file("e.py", "x = 1\n").problems[0])
    spec = parse_tool_file("m.py", 'READ_ONLY = "f"\ndef f() -> int:\n    """F."""\n')
    assert [t.read_only for t in spec.tools] == [False]
    assert spec.problems[0].line == 1 and "READ_ONLY" in spec.problems[0].message
    assert parse_tool_file("n.py", "a = '\0'\n").problems  # NUL bytes: not source


def test_param_docs_stop_at_the_next_section() -> None:
    doc = "Do.\n\nArgs:\n    a: first\n    b (int): second\n\nReturns:\n    c: not a parameter\n"
    assert param_docs(doc) == {"a": "first", "b": "second"}
    assert param_docs("No parameters here.") == {}
