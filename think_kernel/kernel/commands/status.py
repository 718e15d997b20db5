"""``%think_status``, ``%think_mcp``, ``%think_doctor``: what the session runs with (models,
endpoint, sandbox and its limits, approvals, MCP servers, usage) and whether it holds."""

from __future__ import annotations

import os
from typing import Any

from ..render import code_span
from .reply import CommandError, CommandReply


def _sandbox_limits(rt: Any) -> str:
    """The limits table of the session's sandbox (configured values if not started yet)."""
    from ...sandbox import describe_limits, detect_tier, markdown_table

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
    from ...approvals import PolicyError

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
        from ...sandbox import detect_tier

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
        ("agent type", rt.agents.status(props)),
        ("hooks", rt.hooks.status()),
        ("MCP servers", _mcp_summary(rt)),
        *rt.skills.status_rows(),  # AGENTS.md files and skills, as the next request reads them
        ("memory", rt.services.memory.status() if rt.services.memory else "none"),
    ]
    web = rt.services.web
    if web is not None:  # search provider, browser, network allowlist, cache
        rows += web.status_rows()
    text = "\n".join(f"- **{k}**: {v}" for k, v in rows)
    usage = usage_table(await rt.store.usage_totals(rt.session_id))
    return CommandReply(f"{text}\n\n{usage}\n\n**Sandbox limits**\n\n{_sandbox_limits(rt)}")


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
    from ...sandbox import Tier, available_tiers
    from ...sandbox.probes import run_probes

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
