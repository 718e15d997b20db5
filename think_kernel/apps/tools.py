"""The live app tools: ``serve_app``, ``app_logs``, ``stop_app``.

An app runs in the session's sandbox like a background job (same isolation, uid, no
network) and serves HTTP on a socket the kernel hands it; the Jupyter server proxies it,
authenticated, at ``/api/think/sessions/{id}/apps/{name}/``. ``serve_app`` goes through the
approval policy as ``bash`` does.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from ..tools.base import ToolContext, ToolError, ToolOutput, optional, read_only
from ..tools.summarize import for_model
from .app import App, AppError
from .registry import Apps


def _apps(ctx: ToolContext) -> Apps:
    apps = ctx.services.apps
    if apps is None:
        raise ToolError("live apps are not available in this session", "NO_APPS")
    return apps


@contextlib.asynccontextmanager
async def _files_saved(ctx: ToolContext, seconds: float) -> AsyncIterator[None]:
    """Open documents saved to disk first (the app reads the files), as for a run."""
    files = ctx.services.files
    if files is None:
        yield
        return
    async with files.run(hold=seconds + 10):
        yield


def _line(app: App) -> str:
    code = f", exit code {app.exit_code}" if app.exit_code is not None else ""
    why = f" ({app.error})" if app.error and not app.alive else ""
    return f"{app.name}: {app.state}{code}{why} at {app.url}"


# The three go together and the model can do without them: on a context window too small
# for every tool's spec, they are not offered.
@optional
async def serve_app(
    ctx: ToolContext,
    command: str,
    name: str = "",
    restart_on_change: bool = False,
    port: int = 0,
) -> ToolOutput:
    """Run a web app (a dashboard, a demo page, an API) in the sandbox and show it to the
    person: returns once it answers HTTP, with its address on the Jupyter server, or with
    its log when it exits or does not answer. The app gets NO port and cannot open one: it
    must serve on the listening socket it is handed as file descriptor $THINK_APP_FD.
    Static files: `python -m think_app DIR`. Python's http.server: `import think_app;
    think_app.serve(MyHandler)`. uvicorn: `uvicorn mod:app --fd $THINK_APP_FD`; gunicorn:
    `--bind fd://$THINK_APP_FD`. A server that only binds a port of its own (`python -m
    http.server $PORT`, streamlit, voila, panel serve) needs `port`: it gets $PORT and may
    listen on it inside the sandbox (sandbox tier 1 only; elsewhere it is refused). Links
    in its pages must be relative (it is served under a path). It has no internet access.
    Check it with browse_url or screenshot on its address (or app://NAME/); read its
    output with app_logs; stop it with stop_app.

    Args:
        command: the command line, run with `bash -c` in the workspace
        name: a short name, part of its address (default app, app-2, ...)
        restart_on_change: restart it when the files its command names change (the
            workspace's top files when it names none)
        port: the port the app binds itself, inside the sandbox (0: none, it serves on
            $THINK_APP_FD)
    """
    apps = _apps(ctx)
    try:
        async with _files_saved(ctx, apps.config.start_timeout):
            wake = ctx.services.reminders.wake if ctx.services.reminders is not None else None
            app = await apps.start(ctx.session_id, command, name, store=ctx.store,
                                   restart_on_change=restart_on_change,
                                   port=int(port) or None, wake_scheduler=wake)  # fmt: skip
    except AppError as e:
        raise ToolError(str(e), "BAD_APP") from None
    if app.state == "running":
        text = (f"App {app.name!r} is running at {app.url} (the person opens it from the "
                f"Apps list). Look at it yourself with browse_url or screenshot on that "
                f"address, or on app://{app.name}/. app_logs({app.name!r}) shows its output, "
                f"stop_app({app.name!r}) ends it.")  # fmt: skip
        return ToolOutput(text=text, summary=f"app {app.name} running")
    tail = app.log_tail(40) or "(no output)"
    text = f"App {app.name!r} did not start: {_line(app)}\n[its last output]\n{for_model(tail)}"
    return ToolOutput(text=text, summary=f"app {app.name} {app.state}", ok=False,
                      error=text)  # fmt: skip


@optional
@read_only
async def app_logs(ctx: ToolContext, name: str, tail: int = 50) -> ToolOutput:
    """The last lines of a live app's output (stdout and stderr as they came), with its
    state. Without a name: every app of this session and its state.

    Args:
        name: the app's name (empty: list the apps)
        tail: how many of the last lines (default 50)
    """
    apps = _apps(ctx)
    if not name:
        rows = [_line(a) for a in apps.of(ctx.session_id)]
        return ToolOutput(text="\n".join(rows) or "No apps in this session.",
                          summary=f"{len(rows)} apps")  # fmt: skip
    app = apps.get(ctx.session_id, name)
    if app is None:
        raise ToolError(f"no app {name!r} in this session", "NO_SUCH_APP")
    tail = max(1, min(int(tail), 5000))
    body = app.job.log.tail(tail) if app.job is not None else ""
    head = _line(app)
    text = f"{head}\n{for_model(body)}" if body else f"{head}\n(no output yet)"
    return ToolOutput(text=text, summary=f"{app.name}: {app.state}", full=f"{head}\n{body}")


@optional
async def stop_app(ctx: ToolContext, name: str) -> ToolOutput:
    """Stop a live app (its whole process group is killed); `all` stops every one.

    Args:
        name: the app's name, or `all`
    """
    apps = _apps(ctx)
    try:
        if name == "all":
            stopped = await apps.stop_all(ctx.session_id, "stopped by the agent")
            return ToolOutput(text=f"Stopped {len(stopped)} apps.", summary="apps stopped")
        app = await apps.stop(ctx.session_id, name, "stopped by the agent")
    except AppError as e:
        raise ToolError(str(e), "NO_SUCH_APP") from None
    return ToolOutput(text=_line(app), summary=f"{app.name}: {app.state}")


APP_TOOLS = [serve_app, app_logs, stop_app]
