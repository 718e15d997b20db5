"""Which MCP servers a session may use: ``c.ThinkConfig.mcp_servers`` merged with ``mcp.json``.

Pure: no process is started here. The common form, as Claude Desktop, Claude Code and Cursor
write it:

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "some-mcp-server"], "env": {"K": "${K}"}},
        "docs":  {"url": "https://example.org/mcp", "headers": {"Authorization": "Bearer ${T}"}}
    }}

    specs, problems = load_servers(config.mcp_servers, config_files(), os.environ)

``mcp.json`` is read from every Jupyter config directory (``jupyter --paths``); a directory
earlier in that list wins, and the traitlet wins over every file, server by server. Never
from the workspace: sandboxed code can write there, and a server runs unsandboxed.
``${VAR}`` and ``${VAR:-default}`` are expanded from the kernel's environment in ``command``,
``args``, ``env``, ``cwd``, ``url`` and ``headers``; an unset variable without a default
makes that server a problem (shown by ``%think_mcp``), not the others.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HTTP_TYPES = ("http", "streamable-http", "streamable_http", "streamableHttp")
VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ConfigError(ValueError):
    """One server's entry cannot be used; the message says why."""


@dataclass(frozen=True)
class ServerSpec:
    """One MCP server, resolved: a command to run (stdio) or a URL (streamable HTTP)."""

    name: str
    transport: str  # "stdio" | "http"
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str = ""
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float | None = None  # seconds per call; None: the configured default
    source: str = ""

    def fingerprint(self) -> str:
        """A hash of everything that decides which server this is (keys the tool cache)."""
        data = [self.transport, self.command, list(self.args), sorted(self.env.items()),
                self.cwd, self.url, sorted(self.headers.items())]  # fmt: skip
        return hashlib.sha256(json.dumps(data).encode()).hexdigest()[:32]

    def describe(self) -> str:
        """One line for ``%think_mcp`` (never a header or env value: they hold secrets)."""
        if self.transport == "http":
            return self.url
        return " ".join([self.command, *self.args])


@dataclass(frozen=True)
class Problem:
    """A configured server that was left out, and why."""

    name: str
    source: str
    message: str


def config_files() -> list[Path]:
    """``mcp.json`` in each Jupyter config directory, highest priority first."""
    from jupyter_core.paths import jupyter_config_path

    return [Path(d) / "mcp.json" for d in jupyter_config_path()]


def servers_of(raw: Any) -> dict[str, Any]:
    """The ``{NAME: entry}`` map of a config value: ``{"mcpServers": {...}}`` or the map."""
    if not isinstance(raw, Mapping):
        raise ConfigError("expected a JSON object with an 'mcpServers' object")
    inner = raw.get("mcpServers") if "mcpServers" in raw else raw
    if not isinstance(inner, Mapping):
        raise ConfigError("'mcpServers' must be an object of server entries")
    return dict(inner)


def load_servers(
    configured: Mapping[str, Any] | None,
    files: Iterable[Path],
    environ: Mapping[str, str],
) -> tuple[list[ServerSpec], list[Problem]]:
    """Merge the files (highest priority first) and the traitlet, then resolve each entry."""
    entries: dict[str, tuple[Any, str]] = {}
    problems: list[Problem] = []
    for path in reversed(list(files)):  # lowest priority first: later ones replace entries
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        except OSError as e:
            problems.append(Problem("*", str(path), f"cannot read it: {e}"))
            continue
        try:
            found = servers_of(json.loads(text))
        except (ValueError, ConfigError) as e:
            problems.append(Problem("*", str(path), f"not a valid MCP config: {e}"))
            continue
        entries.update((name, (entry, str(path))) for name, entry in found.items())
    if configured:
        try:
            found = servers_of(configured)
        except ConfigError as e:
            problems.append(Problem("*", "c.ThinkConfig.mcp_servers", str(e)))
        else:
            entries.update((n, (e, "c.ThinkConfig.mcp_servers")) for n, e in found.items())
    specs: list[ServerSpec] = []
    for name, (entry, source) in entries.items():
        try:
            spec = resolve(str(name), entry, environ, source)
        except ConfigError as e:
            problems.append(Problem(str(name), source, str(e)))
            continue
        if spec is not None:
            specs.append(spec)
    return specs, problems


def resolve(
    name: str, entry: Any, environ: Mapping[str, str], source: str = ""
) -> ServerSpec | None:
    """One entry as a ServerSpec (None when it is ``"disabled": true``); ConfigError if bad."""
    if not name.strip():
        raise ConfigError("a server needs a non-empty name")
    if not isinstance(entry, Mapping):
        raise ConfigError("a server entry must be an object with 'command' or 'url'")
    if entry.get("disabled") is True:
        return None
    kind = str(entry.get("type") or entry.get("transport") or "")
    timeout = _timeout(entry.get("timeout"))
    if "url" in entry or kind in HTTP_TYPES:
        if kind == "sse" or kind and kind not in HTTP_TYPES:
            raise ConfigError(f"transport {kind!r} is not supported; use stdio or streamable HTTP")
        url = expand(_text(entry.get("url"), "url"), environ)
        if not re.match(r"https?://", url):
            raise ConfigError(f"url must start with http:// or https://, got {url!r}")
        headers = _strings(entry.get("headers"), "headers", environ)
        return ServerSpec(name, "http", url=url, headers=headers, timeout=timeout, source=source)
    if kind not in ("", "stdio"):
        raise ConfigError(f"transport {kind!r} is not supported; use stdio or streamable HTTP")
    command = expand(_text(entry.get("command"), "command"), environ)
    raw_args = entry.get("args") or []
    if not isinstance(raw_args, list) or any(
        not isinstance(a, (str, int, float)) for a in raw_args
    ):
        raise ConfigError("args must be a list of strings")
    args = tuple(expand(str(a), environ) for a in raw_args)
    env = _strings(entry.get("env"), "env", environ)
    cwd = expand(str(entry.get("cwd") or ""), environ)
    return ServerSpec(name, "stdio", command, args, env, cwd=cwd, timeout=timeout, source=source)


def expand(text: str, environ: Mapping[str, str]) -> str:
    """``${VAR}`` / ``${VAR:-default}`` from ``environ``; ConfigError names an unset one."""

    def one(m: re.Match[str]) -> str:
        value = environ.get(m.group(1))
        if value is None or (value == "" and m.group(2) is not None):
            if m.group(2) is None:
                raise ConfigError(f"${{{m.group(1)}}} is not set in the kernel's environment")
            return m.group(2)
        return value

    return VAR.sub(one, text)


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{what} must be a non-empty string")
    return value


def _strings(value: Any, what: str, environ: Mapping[str, str]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, (str, int, float)) for k, v in value.items()
    ):
        raise ConfigError(f"{what} must be an object of strings")
    return {k: expand(str(v), environ) for k, v in value.items()}


def _timeout(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ConfigError("timeout must be a positive number of seconds")
    return float(value)


def scrubbed_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """What a stdio server inherits from the kernel: where things are and the locale, never
    a credential (keys, tokens, the kernel's and server's variables); its ``env`` adds more."""
    environ = os.environ if environ is None else environ
    keep = {"HOME", "LOGNAME", "USER", "PATH", "SHELL", "TERM", "LANG", "LANGUAGE", "TZ",
            "TMPDIR", "SYSTEMROOT", "VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONIOENCODING"}  # fmt: skip
    return {
        k: v
        for k, v in environ.items()
        if (k in keep or k.startswith(("LC_", "XDG_"))) and not v.startswith("()")
    }
