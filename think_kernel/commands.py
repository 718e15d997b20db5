"""The ``%think_*`` commands, shared by the think kernel and the ``%think`` magics.

    reply = await run_command(runtime, "think_session", "new")
    reply.markdown        # what to show in the cell
    reply.session_changed # True when the kernel should remember the new session id

Each command is a small async function over a :class:`~think_kernel.runtime.Runtime`; they
return Markdown and never raise for user mistakes (a :class:`CommandError` carries the message).
"""

from __future__ import annotations

import ast
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

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
    """Set (or with no argument show) the primary model of this session."""
    name = arg.strip()
    props = await rt.props()
    if not name:
        return CommandReply(f"Model: {code_span(rt.model_name(props))}.")
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
    from .sandbox import describe_limits, detect_tier, markdown_table

    if rt.sandbox is not None:
        return markdown_table(rt.sandbox.limits())
    sc = rt.sandbox_config
    tier = detect_tier(sc.bwrap_path)
    root = os.geteuid() == 0
    ids = (sc.uid_range_start if sc.session_uids else sc.sandbox_uid, sc.sandbox_gid)
    rows = describe_limits(sc, tier, ids if root else None, root and sc.session_uids, None, [],
                           started=False)  # fmt: skip
    return markdown_table(rows)


async def think_status(rt: Any, arg: str) -> CommandReply:
    """Model, endpoint (never the key), session, workspace, sandbox tier and its limits."""
    props = await rt.props()
    cfg = rt.config
    configured = bool(cfg.api_key or cfg.base_url)
    tier = getattr(getattr(rt.sandbox, "tier", None), "description", None)
    if tier is None:
        from .sandbox import detect_tier

        tier = f"{detect_tier(rt.sandbox_config.bwrap_path).description} (starts on first use)"
    rows = [
        ("model", code_span(rt.model_name(props))),
        ("endpoint", code_span(cfg.base_url or "https://api.openai.com/v1")),
        ("API key", "set" if cfg.api_key else "not set"),
        ("configured", "yes" if configured else "**no**: see `%think_help`"),
        ("session", code_span(rt.session_id)),
        ("workspace", code_span(str(rt.workspace.root))),
        ("sandbox", tier or "none (code cells run in a plain subprocess)"),
    ]
    text = "\n".join(f"- **{k}**: {v}" for k, v in rows)
    return CommandReply(f"{text}\n\n**Sandbox limits**\n\n{_sandbox_limits(rt)}")


async def think_doctor(rt: Any, arg: str) -> CommandReply:
    """Try the sandbox's containment for real (network, files, secrets, store, other sessions,
    launcher, limits) on this machine; ``all`` probes every tier it can run."""
    from .sandbox import Tier, available_tiers
    from .sandbox.probes import run_probes

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


HELP = """\
**Think**: type a request in a cell and the agent answers, calling tools as it goes.

| command | does |
|---|---|
| `%%python` / `%%bash` | run the cell's code (sandboxed when a sandbox is available) |
| `%think_session [ID\\|new]` | show, resume or start the agent session |
| `%think_sessions` | list sessions |
| `%think_model [NAME]` | model for this session (`default` resets) |
| `%think_instructions [TEXT\\|-]` | extra instructions for this session |
| `%think_config [key=value]` | show or change settings |
| `%think_status` | model, endpoint, session, workspace, sandbox and its limits |
| `%think_doctor [all]` | try the sandbox's containment here (`jupyter think doctor`) |

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
    "think_doctor": think_doctor,
    "think_help": think_help,
}


async def run_command(rt: Any, name: str, arg: str) -> CommandReply:
    """Run ``%name arg``; raises CommandError (unknown command, bad argument)."""
    func = COMMANDS.get(name)
    if func is None:
        known = ", ".join(f"%{n}" for n in COMMANDS)
        raise CommandError(f"unknown magic `%{name}`; known: {known}, %%python, %%bash.")
    return await func(rt, arg)
