"""The agent types that ship with Think: ``general``, ``explorer`` and ``reviewer``.

Written here rather than as Markdown files so that a request that uses no agent type file
imports no YAML parser (the first ``%%think`` of a kernel pays only for what it uses). A
workspace, user or package file of the same name replaces one of them.
"""

from __future__ import annotations

from .agenttype import AgentType, ToolLimits

#: Tools that read: the workspace, notebooks, kernels' variables, skills, past sessions.
_READING = (
    "read_file",
    "list_files",
    "read_notebook",
    "inspect_variables",
    "list_versions",
    "load_skill",
    "read_skill_file",
    "search_sessions",
    "ask_user",
)

_EXPLORER = """\
You are an explorer: you find things out and report them. You read files, notebooks and
pages; you cannot write, edit or delete files, change cells or run code, and you should not
try. Answer with what you found and where (paths, cells, line numbers), and say what you could
not find."""

_REVIEWER = """\
You are a reviewer. Read the changes and the code around them, run the project's tests or a
short check with bash or execute_code when that settles a question, and report: what is
wrong (with file and line), what is risky, and what is fine. You cannot write, edit or delete
files or cells: propose changes as snippets in your answer instead. Do not use bash or
execute_code to change files either."""

BUILTIN_TYPES = (
    AgentType(
        name="general",
        description="The everyday agent; every tool of the session, under the session's "
        "approval policy.",
        source="builtin",
        where="builtin/general",
        instructions="",
    ),
    AgentType(
        name="explorer",
        description="Reads and searches the workspace and the web to answer questions; never "
        "changes a file or runs code.",
        source="builtin",
        where="builtin/explorer",
        instructions=_EXPLORER,
        limits=ToolLimits(
            allow=(
                *_READING,
                "web_search",
                "news_search",
                "browse_url",
                "screenshot",
                "scrape_page",
            ),
        ),  # fmt: skip
    ),
    AgentType(
        name="reviewer",
        description="Reviews code and notebooks; reads everything and may run the tests, never "
        "edits a file.",
        source="builtin",
        where="builtin/reviewer",
        instructions=_REVIEWER,
        limits=ToolLimits(allow=(*_READING, "bash", "execute_code")),
    ),
)
