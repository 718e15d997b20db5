"""``%think_serve [NAME -- COMMAND | stop NAME]``: a live app of this session, from a cell
(as the agent's ``serve_app``: in the sandbox, reachable through the server's proxy)."""

from __future__ import annotations

from typing import Any

from ...apps import App, AppError
from .reply import CommandError, CommandReply

USAGE = "usage: %think_serve NAME -- COMMAND  |  %think_serve stop NAME  |  %think_serve"


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
            name, sep, command = text.partition("--")
            if not sep or not command.strip():
                raise CommandError(USAGE)
            app = await apps.start(rt.session_id, command.strip(), name.strip(), store=rt.store)
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
