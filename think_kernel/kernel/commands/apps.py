"""``%think_serve [NAME [--port N] -- COMMAND | stop NAME]``: a live app of this session,
from a cell (as the agent's ``serve_app``: in the sandbox, reachable through the server's
proxy; ``--port N``: the app binds port N itself, on sandbox tier 1)."""

from __future__ import annotations

import re
from typing import Any

from ...apps import App, AppError
from .reply import CommandError, CommandReply

USAGE = ("usage: %think_serve NAME [--port N] -- COMMAND  |  %think_serve stop NAME  |  "
         "%think_serve")  # fmt: skip
_START = re.compile(r"^(?P<name>[^\s-]\S*)?\s*(?:--port[= ](?P<port>\d+)\s*)?--\s(?P<command>.*)$",
                    re.S)  # fmt: skip


def _row(app: App) -> str:
    code = f", exit code {app.exit_code}" if app.exit_code is not None else ""
    return f"| `{app.name}` | {app.state}{code} | [{app.url}]({app.url}) | `{app.command[:80]}` |"


async def think_serve(rt: Any, arg: str) -> CommandReply:
    """Start a live app (its command serves HTTP on ``$THINK_APP_FD``), stop one, or list."""
    text = arg.strip()
    apps = rt.apps
    try:
        if text.startswith("stop "):
            app = await apps.stop(rt.session_id, text[5:].strip(), "stopped from a cell")
            return CommandReply(f"App `{app.name}`: {app.state}.")
        if text:
            m = _START.match(text)
            if m is None or not m["command"].strip():
                raise CommandError(USAGE)
            port = int(m["port"]) if m["port"] else None
            app = await apps.start(rt.session_id, m["command"].strip(), m["name"] or "",
                                   port=port, store=rt.store)  # fmt: skip
        else:
            rows = [_row(a) for a in apps.of(rt.session_id)]
            if not rows:
                return CommandReply("No live apps in this session.\n\n" + USAGE)
            head = "| app | state | address | command |\n|---|---|---|---|"
            return CommandReply("\n".join([head, *rows]))
    except AppError as e:
        raise CommandError(str(e)) from None
    if app.state == "running":
        return CommandReply(f"App `{app.name}` is running at [{app.url}]({app.url}) (the "
                            "sidebar's Apps list opens it in a tab).")  # fmt: skip
    tail = app.log_tail(20) or "(no output)"
    raise CommandError(f"app {app.name} did not start: {app.state} ({app.error})\n{tail}")
