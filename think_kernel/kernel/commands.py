"""The ``%think_*`` commands, shared by the think kernel and the ``%think`` magics.

    reply = await run_command(runtime, "think_session", "new")
    reply.markdown        # what to show in the cell
    reply.session_changed # True when the kernel should remember the new session id

Each command is a small async function over a :class:`~think_kernel.runtime.Runtime`; they
return Markdown and never raise for user mistakes (a :class:`CommandError` carries the message).
"""

from __future__ import annotations

import ast
import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..agent.attachments import MAX_ATTACHMENTS, MAX_IMAGE_BYTES, describe_attachment
from ..agent.calls import ROLES
from ..tools.base import ToolError
from .render import code_span

PROPS = {"model", "instructions", "max_steps"}
# Credentials and values baked into the model client at start need a restart, not a magic.
RESTART_ONLY = {"api_key", "base_url", "store_path", "request_timeout"}


class CommandError(Exception):
    """A user mistake in a command; the message says what to type instead."""


@dataclass
class CommandReply:
    """Markdown to show, and whether the current session changed."""

    markdown: str
    session_changed: bool = False
    value: str | None = None


async def think_session(rt: Any, arg: str) -> CommandReply:
    """Show the session, resume one (``ID`` or a unique prefix) or start a ``new`` one."""
    arg = arg.strip()
    if not arg:
        rows = await rt.store.get_messages(rt.session_id)
        return CommandReply(
            f"Session {code_span(rt.session_id)} ({len(rows)} messages). "
            "`%think_session new` starts another, `%think_sessions` lists them.",
            value=rt.session_id,
        )
    if arg == "new":
        await rt.switch_session(None)
        return CommandReply(f"Started session {code_span(rt.session_id)}.", True, rt.session_id)
    ids = [s["id"] for s in await rt.store.list_sessions(limit=1000)]
    matches = [i for i in ids if i == arg] or [i for i in ids if i.startswith(arg)]
    if len(matches) != 1:
        what = "no session" if not matches else f"{len(matches)} sessions"
        raise CommandError(f"{what} matches {code_span(arg)}; `%think_sessions` lists them.")
    await rt.switch_session(matches[0])
    rows = await rt.store.get_messages(rt.session_id)
    return CommandReply(
        f"Resumed session {code_span(rt.session_id)} ({len(rows)} messages).", True, rt.session_id
    )


async def think_sessions(rt: Any, arg: str) -> CommandReply:
    """List stored sessions, most recent first."""
    rows = await rt.store.list_sessions(limit=int(arg) if arg.strip().isdigit() else 20)
    if not rows:
        return CommandReply("No sessions yet.")
    lines = ["| | session | title | messages | updated |", "|---|---|---|---|---|"]
    for s in rows:
        mark = "▶" if s["id"] == rt.session_id else ""
        updated = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.get("updated_at") or 0))
        title = str(s.get("title") or "").replace("|", "\\|")[:40]
        lines.append(
            f"| {mark} | {code_span(s['id'])} | {title} | {s.get('message_count', 0)} | {updated} |"
        )
    return CommandReply("\n".join(lines))


async def think_model(rt: Any, arg: str) -> CommandReply:
    """Set (or with no argument show) the model of this session; ``ROLE=NAME`` sets a role
    (``fast``, ``summarizer``, ``vision``), ``default`` resets."""
    name = arg.strip()
    props = await rt.props()
    if not name:
        lines = [f"- **{role}**: {code_span(m)}" for role, m in rt.role_models(props).items()]
        return CommandReply("Models of this session:\n" + "\n".join(lines))
    role, sep, value = name.partition("=")
    if sep:
        role, value = role.strip(), value.strip()
        if role not in ROLES:
            raise CommandError(f"unknown role `{role}`; roles: {', '.join(ROLES)}")
        if role == "primary":
            await rt.set_props(model=None if value in ("", "default") else value)
        else:
            models = dict(props.get("models") or {})
            if value in ("", "default"):
                models.pop(role, None)
            else:
                models[role] = value
            await rt.set_props(models=models or None)
        chosen = rt.model_name(await rt.props(), role)
        return CommandReply(f"{role.capitalize()} model for this session: {code_span(chosen)}.")
    await rt.set_props(model=None if name == "default" else name)
    return CommandReply(f"Model for this session: {code_span(rt.model_name(await rt.props()))}.")


async def think_instructions(rt: Any, arg: str) -> CommandReply:
    """Set extra instructions for this session (``-`` clears them; none shows them)."""
    text = arg.strip()
    if not text:
        current = (await rt.props()).get("instructions") or "(none)"
        return CommandReply(f"Session instructions: {current}")
    await rt.set_props(instructions=None if text == "-" else text)
    return CommandReply("Session instructions cleared." if text == "-" else "Instructions set.")


def _parse(trait: Any, raw: str) -> Any:
    if type(trait).__name__ in ("Unicode", "CUnicode"):
        return raw
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError) as e:
        raise CommandError(f"cannot read {code_span(raw)} as a value: {e}") from None


async def think_config(rt: Any, arg: str) -> CommandReply:
    """``key=value``: per-session props (model, instructions, max_steps) or ThinkConfig traits."""
    traits = rt.config.traits(config=True)
    if not arg.strip():
        props = await rt.props()
        lines = [f"- `{k}` = {code_span(repr(v))} (session)" for k, v in sorted(props.items())]
        for name in sorted(traits):
            if name not in RESTART_ONLY and name not in props:
                lines.append(f"- `{name}` = {code_span(repr(getattr(rt.config, name)))}")
        return CommandReply("\n".join(lines))
    key, sep, raw = arg.partition("=")
    key, raw = key.strip(), raw.strip()
    if not sep:
        raise CommandError("usage: `%think_config key=value` (no argument lists the keys)")
    if key in PROPS:
        value: Any = raw if key != "max_steps" else _parse(traits["max_steps"], raw)
        if key == "max_steps" and (not isinstance(value, int) or value < 1):
            raise CommandError("max_steps must be a positive integer")
        await rt.set_props(**{key: value if raw else None})
        return CommandReply(f"`{key}` = {code_span(repr(value))} for this session.")
    if key in RESTART_ONLY:
        raise CommandError(
            f"`{key}` is read when the kernel starts: set it in the environment or "
            "`think_kernel_config.py`, then restart the kernel."
        )
    if key not in traits:
        raise CommandError(f"unknown key `{key}`; `%think_config` lists them.")
    try:
        setattr(rt.config, key, _parse(traits[key], raw))
    except Exception as e:  # traitlets validation errors name the expected type
        raise CommandError(f"invalid value for `{key}`: {e}") from None
    return CommandReply(f"`{key}` = {code_span(repr(getattr(rt.config, key)))}.")


def _sandbox_limits(rt: Any) -> str:
    """The limits table of the session's sandbox (configured values if not started yet)."""
    from ..sandbox import describe_limits, detect_tier, markdown_table

    if rt.sandbox is not None:
        return markdown_table(rt.sandbox.limits())
    sc = rt.sandbox_config
    tier = detect_tier(sc.bwrap_path)
    root = os.geteuid() == 0
    ids = (sc.uid_range_start if sc.session_uids else sc.sandbox_uid, sc.sandbox_gid)
    rows = describe_limits(sc, tier, ids if root else None, root and sc.session_uids, None, [],
                           started=False)  # fmt: skip
    return markdown_table(rows)


async def _approvals(rt: Any) -> str:
    from ..approvals import PolicyError

    try:
        return str((await rt.policy()).describe()) + " (`%think_approve` changes it)"
    except PolicyError as e:
        return f"**invalid**: {e}"


def _mcp_summary(rt: Any) -> str:
    """One line on the MCP servers (``%think_mcp`` has the details)."""
    mcp = getattr(rt, "mcp", None)
    rows = mcp.status() if mcp is not None else []
    if not rows:
        return "none configured"
    states = ", ".join(f"{r['name']} ({r['state']})" for r in rows)
    return f"{states}; `%think_mcp` shows their tools"


async def think_status(rt: Any, arg: str) -> CommandReply:
    """Models, endpoint (never the key), session, workspace, sandbox tier and limits, web
    tools, usage."""
    props = await rt.props()
    cfg = rt.config
    ep = await rt.refresh_endpoint()  # the setup card's endpoint, else config / environment
    configured = ep.configured
    tier = getattr(getattr(rt.sandbox, "tier", None), "description", None)
    if tier is None:
        from ..sandbox import detect_tier

        tier = f"{detect_tier(rt.sandbox_config.bwrap_path).description} (starts on first use)"
    models = rt.role_models(props)
    primary = models["primary"]
    others = ", ".join(f"{r} {code_span(m)}" for r, m in models.items() if r != "primary")
    rows = [
        ("model", f"{code_span(primary)} ({others})"),
        (
            "context window",
            f"{rt.context_window(primary):,} tokens; older turns are summarised past "
            f"{cfg.compact_at:.0%}",
        ),
        ("endpoint", code_span(ep.base_url or "https://api.openai.com/v1")),
        ("API key", "set" if ep.api_key else "not set"),
        (
            "set in",
            {"saved": "the chat sidebar's setup card", "": "nowhere"}.get(
                ep.source, "the environment or config"
            ),
        ),
        ("configured", "yes" if configured else "**no**: see `%think_help`"),
        ("session", code_span(rt.session_id)),
        ("workspace", code_span(str(rt.workspace.root))),
        ("sandbox", tier or "none (code cells run in a plain subprocess)"),
        ("approvals", await _approvals(rt)),
        ("MCP servers", _mcp_summary(rt)),
    ]
    web = rt.services.web
    if web is not None:  # search provider, browser, network allowlist, cache
        rows += web.status_rows()
    text = "\n".join(f"- **{k}**: {v}" for k, v in rows)
    usage = usage_table(await rt.store.usage_totals(rt.session_id))
    return CommandReply(f"{text}\n\n{usage}\n\n**Sandbox limits**\n\n{_sandbox_limits(rt)}")


async def think_approve(rt: Any, arg: str) -> CommandReply:
    """Show or change this session's approval policy (issue 11).

    ``auto|default|strict`` sets the mode; ``ask TOOL [ARG~REGEX|ARG=GLOB|ARG!=GLOB]`` and
    ``allow TOOL`` add a rule (checked before the mode); ``reset`` drops the session's
    changes (config applies again).
    """
    from ..approvals import MODES, PolicyError, Rule

    text = arg.strip()
    approval = dict((await rt.props()).get("approval") or {})
    if text == "reset":
        await rt.set_props(approval=None)
    elif text in MODES:
        await rt.set_props(approval={**approval, "mode": text})
    elif text:
        try:
            rule = Rule.parse(text)
        except PolicyError as e:
            raise CommandError(
                f"{e}. Usage: `%think_approve auto|default|strict`, "
                "`%think_approve ask bash command~rm\\s`, `%think_approve ask write_file "
                "path!=src/**`, `%think_approve allow TOOL`, `%think_approve reset`."
            ) from None
        rules = [r for r in approval.get("rules") or [] if r != rule.to_dict()]
        await rt.set_props(approval={**approval, "rules": [rule.to_dict(), *rules]})
    try:
        policy = await rt.policy()
    except PolicyError as e:
        raise CommandError(str(e)) from None
    return CommandReply(f"**Approvals**: {policy.describe()}")


def _cost(value: float | None, complete: bool = True) -> str:
    if value is None:
        return "—"
    text = f"${value:.4f}" if value < 1 else f"${value:,.2f}"
    return text if complete else f"≥ {text}"


def usage_table(totals: dict[str, Any]) -> str:
    """This session's tokens and estimated cost per role, as a Markdown table."""
    by_role = totals.get("by_role") or {}
    if not by_role:
        return "**Usage**: no model calls in this session yet."
    lines = [
        "**Usage** (this session)",
        "",
        "| role | model | calls | tokens in | cached | tokens out | cost |",
        "|---|---|--:|--:|--:|--:|--:|",
    ]
    names = totals.get("role_models") or {}
    for role, u in [*by_role.items(), ("total", totals["total"])]:
        model = ", ".join(names.get(role, [])) if role != "total" else ""
        approx = " (estimated)" if u.get("estimated") else ""
        lines.append(
            f"| {'**total**' if role == 'total' else role} | {model} | {u['calls']:,} |"
            f" {u['tokens_in']:,}{approx} | {u['tokens_cached']:,} | {u['tokens_out']:,} |"
            f" {_cost(u.get('cost'), u.get('cost_complete', True))} |"
        )
    return "\n".join(lines)


async def think_attach(rt: Any, arg: str) -> CommandReply:
    """``PATH``: attach a workspace file or image to the next request; ``-`` clears; none
    lists what is attached."""
    path = arg.strip().strip("'\"")
    pending = rt.pending_attachments
    if not path:
        if not pending:
            return CommandReply("Nothing attached. `%think_attach PATH` attaches a file or image.")
        names = ", ".join(f"{code_span(a['name'])} ({a['kind']})" for a in pending)
        return CommandReply(f"Attached to your next request: {names}.")
    if path == "-":
        pending.clear()
        return CommandReply("Attachments cleared.")
    if len(pending) >= MAX_ATTACHMENTS:
        raise CommandError(f"at most {MAX_ATTACHMENTS} attachments per request")
    try:
        full = rt.workspace.resolve(path)
    except ToolError as e:
        raise CommandError(str(e)) from None
    if not full.is_file():
        raise CommandError(f"no file {code_span(path)} in the workspace")

    def read() -> bytes:
        with open(full, "rb") as f:
            return f.read(MAX_IMAGE_BYTES + 1)

    data = await asyncio.to_thread(read)
    try:
        att = describe_attachment(full.name, data)
    except ValueError as e:
        raise CommandError(str(e)) from None
    att["blob"] = await rt.store.save_blob(data)
    att["path"] = rt.workspace.relative(full)
    pending.append(att)
    note = ""
    if att["kind"] == "image":
        vision = rt.model_name(await rt.props(), "vision")
        note = f"; images go to the vision model {code_span(vision)}"
    return CommandReply(
        f"Attached {code_span(att['name'])} ({att['kind']}, {att['size']:,} bytes) to your next "
        f"request{note}."
    )


OUTPUT_CHARS = 1_000_000


async def think_output(rt: Any, arg: str) -> CommandReply:
    """``[CALL_ID]``: the whole stored output of a tool call (the last one by default)."""
    key = arg.strip()
    rows = [m for m in await rt.store.get_messages(rt.session_id) if m["role"] == "tool"]
    if key:
        rows = [m for m in rows if str(m.get("tool_call_id") or "").startswith(key)]
    if not rows:
        what = f"no tool call {code_span(key)}" if key else "no tool call yet"
        raise CommandError(f"{what} in this session")
    row = rows[-1]
    try:
        whole = await rt.store.full_output(row)
    except KeyError:
        raise CommandError("the stored output of this call is missing") from None
    head = f"**{row.get('name') or 'tool'}** {code_span(str(row.get('tool_call_id')))}:"
    return CommandReply(f"{head}\n\n{fenced_output(whole, OUTPUT_CHARS)}", value=whole)


#: Characters of a whole tool output that a cell shows when expanded (``%think_output``: all).
CELL_OUTPUT_CHARS = 200_000


def fenced_output(whole: str, limit: int, call_id: str = "") -> str:
    """Markdown of a tool output in a fence, cut to ``limit`` characters with a note saying so."""
    shown = whole if len(whole) <= limit else whole[:limit]
    fence = "~~~~" if "~~~" in shown else "~~~"
    more = ""
    if shown != whole:
        rest = f"; all of it: {code_span('%think_output ' + call_id)}" if call_id else ""
        more = f"\n\n*(first {limit:,} of {len(whole):,} characters{rest})*"
    return f"{fence}\n{shown}\n{fence}{more}"


async def whole_output_markdown(rt: Any, result_id: str, call_id: str) -> str | None:
    """A collapsed block with a stored tool output, for the cell of the call (None if missing)."""
    row = await rt.store.get_message(result_id) if result_id else None
    if row is None:
        return None
    try:
        whole = await rt.store.full_output(row)
    except KeyError:
        return None
    body = fenced_output(whole, CELL_OUTPUT_CHARS, call_id)
    title = f"Whole output of {row.get('name') or 'the tool'} ({len(whole):,} characters)"
    return f"<details><summary>{title}</summary>\n\n{body}\n\n</details>\n"


async def think_mcp(rt: Any, arg: str) -> CommandReply:
    """The configured MCP servers, their state and tools; ``refresh`` restarts them and lists
    their tools again."""
    action = arg.strip()
    if action not in ("", "refresh"):
        raise CommandError(
            "usage: `%think_mcp` lists MCP servers, `%think_mcp refresh` restarts them"
        )
    if action == "refresh":
        await rt.mcp.restart()
    rows = rt.mcp.status()
    if not rows:
        return CommandReply(
            "No MCP servers configured. Add them to `mcp.json` in your Jupyter config directory "
            '(`jupyter --config-dir`) as `{"mcpServers": {NAME: {"command", "args", '
            '"env"} | {"url", "headers"}}}`, or set `c.ThinkConfig.mcp_servers`.'
        )
    lines = ["| server | state | tools | calls | from |", "|---|---|---|--:|---|"]
    for row in rows:
        state = row["state"]
        if row["error"]:
            state = f"{state}: {row['error']}"
        target = f"<br>{code_span(row['target'])}" if row["target"] else ""
        tools = ", ".join(code_span(t) + (f" ({m})" if m else "") for t, m in row["tools"]) or "—"
        cells = [f"**{row['name']}**{target}", state, tools, str(row["calls"]), row["source"]]
        cells = [c.replace("|", "\\|").replace("\n", " ") for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    note = (
        "\n\nServers start on first use and stop with the kernel; they run unsandboxed, as you. "
        "`%think_mcp refresh` restarts them."
    )
    return CommandReply("\n".join(lines) + note)


async def think_doctor(rt: Any, arg: str) -> CommandReply:
    """Try the sandbox's containment for real (network, files, secrets, store, other sessions,
    launcher, limits) on this machine; ``all`` probes every tier it can run."""
    from ..sandbox import Tier, available_tiers
    from ..sandbox.probes import run_probes

    here = available_tiers(rt.sandbox_config.bwrap_path)
    if arg.strip() == "all":
        tiers = here
    else:
        current = getattr(rt.sandbox, "tier", None)
        tiers = [current or (Tier(rt.sandbox_config.force_tier) if rt.sandbox_config.force_tier
                             else here[0])]  # fmt: skip
    parts = [f"Sandbox tiers this machine can run: {', '.join(str(int(t)) for t in here)}."]
    for tier in tiers:
        report = await run_probes(tier, rt.sandbox_config)
        verdict = "every attack contained" if report.all_contained else "**not all contained**"
        parts.append(f"{report.markdown()}\n\n{verdict} ({report.seconds:.1f} s)")
    return CommandReply("\n\n".join(parts))


async def think_tasks(rt: Any, arg: str) -> CommandReply:
    """The task tree of this session's last planned request with progress (``all``: every
    request's)."""
    from ..tasks.shape import markdown

    if rt.store is None:
        await rt.start()
    await rt.recover_subagents()  # a subagent a dead kernel left is shown as it is
    board = rt.subagents.board
    tasks = await board.session_flat(rt.session_id)
    if arg.strip() != "all":
        planned = [t["parent_id"] for t in tasks if t["depth"] == 1]
        last = (
            planned[-1]
            if planned
            else next((t["id"] for t in reversed(tasks) if not t["parent_id"]), None)
        )
        tasks = await board.request_tasks(last) if last else []
    if not tasks:
        return CommandReply("No tasks in this session yet: a request the agent plans has some.")
    text = markdown(tasks)
    return CommandReply(text, value=text)


HELP = """\
**Think**: type a request in a cell and the agent answers, calling tools as it goes.

| command | does |
|---|---|
| `%%python` / `%%bash` | run the cell's code (sandboxed when a sandbox is available) |
| `%think_session [ID\\|new]` | show, resume or start the agent session |
| `%think_sessions` | list sessions |
| `%think_model [NAME\\|ROLE=NAME]` | this session's models (`fast=`, `summarizer=`, `vision=`) |
| `%think_attach [PATH\\|-]` | attach a file or image to the next request (`-` clears) |
| `%think_output [CALL_ID]` | the whole output of a tool call (the last one by default) |
| `%think_tasks [all]` | the task tree of the last planned request (or all), with progress |
| `%think_instructions [TEXT\\|-]` | extra instructions for this session |
| `%think_config [key=value]` | show or change settings |
| `%think_approve [MODE\\|RULE\\|reset]` | which tool calls wait for your approval |
| `%think_status` | models, context window, endpoint, sandbox limits, tokens and cost per role |
| `%think_doctor [all]` | try the sandbox's containment here (`jupyter think doctor`) |
| `%think_mcp [refresh]` | MCP servers, their state and tools (`refresh` restarts them) |

Interrupt (the stop button) cancels a run; the kernel keeps its state."""


async def think_help(rt: Any, arg: str) -> CommandReply:
    """The list of commands."""
    return CommandReply(HELP)


COMMANDS: dict[str, Callable[[Any, str], Awaitable[CommandReply]]] = {
    "think_session": think_session,
    "think_sessions": think_sessions,
    "think_model": think_model,
    "think_instructions": think_instructions,
    "think_config": think_config,
    "think_status": think_status,
    "think_approve": think_approve,
    "think_attach": think_attach,
    "think_output": think_output,
    "think_tasks": think_tasks,
    "think_doctor": think_doctor,
    "think_mcp": think_mcp,
    "think_help": think_help,
}


async def run_command(rt: Any, name: str, arg: str) -> CommandReply:
    """Run ``%name arg``; raises CommandError (unknown command, bad argument)."""
    func = COMMANDS.get(name)
    if func is None:
        known = ", ".join(f"%{n}" for n in COMMANDS)
        raise CommandError(f"unknown magic `%{name}`; known: {known}, %%python, %%bash.")
    return await func(rt, arg)
