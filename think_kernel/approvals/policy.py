"""Which tool calls need a person's approval: a pure function of the policy and the call.

    policy = Policy.from_settings(config.approval_policy, config.approval_rules, props)
    reason = policy.check("bash", {"command": "rm -rf data"}, known=KNOWN_TOOLS)
    # None: run it; a string: ask first, and say why

Modes: ``auto`` never asks, ``default`` asks for deletions, reverts, code in the user's kernel,
non-GET ``fetch`` and tools that are neither core nor marked read-only (MCP, extensions),
``strict`` also asks before every write and every execution. Reads never ask by mode.
A tool its MCP server marks destructive (``destructiveHint``) asks under ``default`` and
``strict`` even when the session "always" allows it; only a rule naming it exactly allows it.
Rules come first, session rules before configured ones, the first that matches decides:

    {"tool": "bash", "arg": "command", "regex": "rm\\\\s"}            ask when it matches
    {"tool": "write_file", "arg": "path", "outside": "src/**"}        ask outside a glob
    {"tool": "fetch", "arg": "method", "not": "GET"}                  ask unless equal
    {"tool": "run_in_kernel", "action": "allow"}                      never ask

A session's "always allow" list (the Always button) wins over everything but three things: a
destructive MCP tool, a file tool changing ``.think/`` (skills, self-written tools, agent
types: files that steer later requests of every session), and ``remember`` (a line in the
person's memory file, which every later prompt of every session carries): these ask in
``default`` and ``strict`` unless a rule allows them, so an instruction planted in a web page
or a file cannot persist itself into later sessions unseen.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

MODES = ("auto", "default", "strict")
READS = frozenset(
    {
        "read_file",
        "list_files",
        "read_notebook",
        "inspect_variables",
        "list_versions",
        "web_search",
        "news_search",
        "browse_url",
        "screenshot",
        "scrape_page",
        "list_tasks",
        "check_subagent_status",
        "wait_for_subagents",
        "list_reminders",
        "job_status",
        "job_output",
        "app_logs",
    }
)
DEFAULT_ASK = frozenset({"delete_file", "delete_cell", "revert", "run_in_kernel"})
WRITES = frozenset(
    {
        "write_file",
        "edit_file",
        "delete_file",
        "insert_cell",
        "edit_cell",
        "delete_cell",
        "execute_cell",
        "revert",
        "bash",
        "execute_code",
        "run_in_kernel",
        "interact_with_page",
        "run_job",
        "stop_job",
        "serve_app",
        "stop_app",
    }
)
#: Tools that run a command as another does: a rule naming the other governs them too (a
#: rule that asks before ``bash`` commands matching ``rm\s`` asks before such a job).
SAME_AS = {"run_job": "bash", "serve_app": "bash"}
#: Tools whose change goes to the session's proposal in review mode: nothing live changes
#: until a person accepts it, so asking before each would ask twice.
PROPOSED = frozenset(
    {"write_file", "edit_file", "delete_file", "insert_cell", "edit_cell", "delete_cell"}
)
#: File tools whose ``path`` argument names what they change.
FILE_CHANGES = frozenset({"write_file", "edit_file", "delete_file"})
#: The workspace folder whose files steer the agent (``think_kernel.skills.places``).
STEERING_DIR = ".think"
#: Tools whose effect steers every later session (asked for even when "always" allowed).
STEERING_TOOLS = {
    "remember": "remember adds a line to your memory file, which every session's prompt carries"
}


def steering_path(tool: str, args: Mapping[str, Any]) -> str:
    """The path a file tool changes under ``.think/`` ("" for any other call)."""
    if tool not in FILE_CHANGES:
        return ""
    raw = str(args.get("path") or "")
    path = posixpath.normpath(raw.lstrip("/")) if raw else ""
    return path if path == STEERING_DIR or path.startswith(STEERING_DIR + "/") else ""


class PolicyError(ValueError):
    """A rule or mode that cannot be understood (the message says what is expected)."""


@dataclass(frozen=True)
class Rule:
    """Ask (or allow) for one tool, optionally only when an argument matches."""

    tool: str
    action: str = "ask"  # ask | allow
    arg: str = ""
    regex: str = ""
    glob: str = ""
    outside: str = ""
    not_: str = ""

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Rule:
        """A rule from its JSON form; PolicyError on a bad one."""
        if not isinstance(raw, Mapping) or not isinstance(raw.get("tool"), str):
            raise PolicyError(f"a rule needs a 'tool' name, got {raw!r}")
        action = str(raw.get("action") or "ask")
        if action not in ("ask", "allow"):
            raise PolicyError(f"a rule's action is 'ask' or 'allow', got {action!r}")
        rule = cls(
            tool=raw["tool"],
            action=action,
            arg=str(raw.get("arg") or ""),
            regex=str(raw.get("regex") or ""),
            glob=str(raw.get("glob") or ""),
            outside=str(raw.get("outside") or ""),
            not_=str(raw.get("not") or ""),
        )
        if rule.regex:
            try:
                re.compile(rule.regex)
            except re.error as e:
                raise PolicyError(f"bad regex {rule.regex!r}: {e}") from None
        if (rule.regex or rule.glob or rule.outside or rule.not_) and not rule.arg:
            raise PolicyError(f"a pattern needs the argument it applies to ('arg'): {raw!r}")
        return rule

    @classmethod
    def parse(cls, text: str) -> Rule:
        """``ask|allow TOOL [ARG~REGEX | ARG=GLOB | ARG!=GLOB]`` (the ``%think_approve`` form).

        ``ARG!=GLOB`` asks when the argument does not match: ``write_file path!=src/**``,
        ``fetch method!=GET``.
        """
        parts = text.split(maxsplit=2)
        if len(parts) < 2 or parts[0] not in ("ask", "allow"):
            raise PolicyError("expected `ask TOOL [ARG~REGEX|ARG=GLOB|ARG!=GLOB]` or `allow TOOL`")
        raw: dict[str, Any] = {"action": parts[0], "tool": parts[1]}
        if len(parts) == 3:
            m = re.fullmatch(r"(\w+)\s*(~|!=|=)\s*(.+)", parts[2].strip(), re.S)
            if m is None:
                raise PolicyError(f"cannot read the pattern {parts[2]!r}")
            arg, op, value = m.groups()
            key = {"~": "regex", "=": "glob", "!=": "outside"}[op]
            raw.update(arg=arg, **{key: value.strip()})
        return cls.from_dict(raw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (only the fields in use)."""
        out: dict[str, Any] = {"tool": self.tool, "action": self.action}
        for key, value in (
            ("arg", self.arg),
            ("regex", self.regex),
            ("glob", self.glob),
            ("outside", self.outside),
            ("not", self.not_),
        ):
            if value:
                out[key] = value
        return out

    def describe(self) -> str:
        """One line for ``%think_status`` and the sidebar."""
        cond = ""
        if self.regex:
            cond = f" when {self.arg} matches /{self.regex}/"
        elif self.glob:
            cond = f" when {self.arg} matches {self.glob}"
        elif self.outside:
            cond = f" when {self.arg} is outside {self.outside}"
        elif self.not_:
            cond = f" when {self.arg} is not {self.not_}"
        return f"{self.action} {self.tool}{cond}"

    def matches(self, tool: str, args: Mapping[str, Any]) -> bool:
        """Whether this rule applies to the call."""
        if not fnmatch.fnmatchcase(tool, self.tool) and not (
            tool in SAME_AS and fnmatch.fnmatchcase(SAME_AS[tool], self.tool)
        ):
            return False
        if not self.arg:
            return True
        value = args.get(self.arg)
        text = "" if value is None else str(value)
        if self.regex:
            return re.search(self.regex, text) is not None
        if self.glob:
            return fnmatch.fnmatchcase(text, self.glob)
        if self.outside:
            return not fnmatch.fnmatchcase(text, self.outside)
        if self.not_:
            return text.upper() != self.not_.upper()
        return True


@dataclass(frozen=True)
class Policy:
    """The policy in force for one session."""

    mode: str = "default"
    rules: tuple[Rule, ...] = ()
    always: frozenset[str] = field(default_factory=frozenset)
    kernel_exec: str = "ask"  # ask | auto (``%think_config kernel_exec=auto``)

    @classmethod
    def from_settings(
        cls,
        mode: str,
        rules: Iterable[Mapping[str, Any]] = (),
        props: Mapping[str, Any] | None = None,
        kernel_exec: str = "ask",
    ) -> Policy:
        """Config mode and rules, overridden by the session's ``approval`` prop."""
        session = dict((props or {}).get("approval") or {})
        mode = str(session.get("mode") or mode or "default")
        if mode not in MODES:
            raise PolicyError(f"approval mode is one of {', '.join(MODES)}; got {mode!r}")
        parsed = [Rule.from_dict(r) for r in session.get("rules") or ()]
        parsed += [Rule.from_dict(r) for r in rules]
        return cls(
            mode=mode,
            rules=tuple(parsed),
            always=frozenset(str(t) for t in session.get("always") or ()),
            kernel_exec=str(session.get("kernel_exec") or kernel_exec or "ask"),
        )

    def check(
        self,
        tool: str,
        args: Mapping[str, Any],
        *,
        known: Iterable[str] = (),
        destructive: Iterable[str] = (),
        proposing: bool = False,
    ) -> str | None:
        """None when the call may run; otherwise why it needs approval.

        ``known`` names tools that are core or marked read-only: other tools (MCP servers,
        extensions) ask in ``default`` mode. ``destructive`` names tools whose server says
        they may destroy data: they ask unless the mode is ``auto`` or a rule names them.
        ``proposing``: the session is in review mode, so file and cell edits only propose
        (the defaults and ``strict`` do not ask for them; a person's rules still do).
        """
        if tool in set(destructive) and self.mode != "auto":
            for rule in self.rules:
                if rule.tool == tool and not rule.arg and rule.action == "allow":
                    return None
            return f"{tool} is marked destructive by its MCP server"
        steering = steering_path(tool, args) if self.mode != "auto" else ""
        if steering:
            for rule in self.rules:
                if rule.action == "allow" and rule.arg and rule.matches(tool, args):
                    return None
            return f"{tool} changes {steering}, which steers the agent in every session"
        if tool in STEERING_TOOLS and self.mode != "auto":
            for rule in self.rules:
                if rule.action == "allow" and rule.matches(tool, args):
                    return None
            return STEERING_TOOLS[tool]
        if tool in self.always:
            return None
        for rule in self.rules:
            if rule.matches(tool, args):
                return f"policy rule: {rule.describe()}" if rule.action == "ask" else None
        if self.mode == "auto" or (proposing and tool in PROPOSED):
            return None
        if tool == "run_in_kernel" and self.kernel_exec == "auto":
            return None
        if tool in READS:
            return None
        method = str(args.get("method") or "GET").upper()
        if tool == "fetch":
            return None if method in ("GET", "HEAD") else f"fetch with method {method}"
        if tool in DEFAULT_ASK:
            return f"{tool} asks by default"
        if self.mode == "strict" and tool in WRITES:
            return f"strict mode: {tool} writes or executes"
        if tool not in set(known):
            return f"{tool} is not a core tool and is not marked read-only"
        return None

    def describe(self) -> str:
        """Markdown lines: the mode, the rules, the session's always-allowed tools."""
        lines = [f"mode `{self.mode}`"]
        lines += [f"`{r.describe()}`" for r in self.rules]
        if self.always:
            lines.append("always allowed here: " + ", ".join(f"`{t}`" for t in sorted(self.always)))
        if self.kernel_exec == "auto":
            lines.append("`run_in_kernel` runs without asking (kernel_exec=auto)")
        return "; ".join(lines)
