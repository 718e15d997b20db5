"""``%think_model``, ``%think_instructions``, ``%think_config``, ``%think_approve``: the
session's settings."""

from __future__ import annotations

import ast
from typing import Any

from ...agent.calls import ROLES
from ..render import code_span
from .reply import CommandError, CommandReply

PROPS = {"model", "instructions", "max_steps"}
# Credentials and values baked into the model client at start need a restart, not a magic.
RESTART_ONLY = {"api_key", "base_url", "store_path", "request_timeout"}


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


async def think_approve(rt: Any, arg: str) -> CommandReply:
    """Show or change this session's approval policy.

    ``auto|default|strict`` sets the mode; ``ask TOOL [ARG~REGEX|ARG=GLOB|ARG!=GLOB]`` and
    ``allow TOOL`` add a rule (checked before the mode); ``reset`` drops the session's
    changes (config applies again).
    """
    from ...approvals import MODES, PolicyError, Rule

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
