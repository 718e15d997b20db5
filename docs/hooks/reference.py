"""MkDocs hook: the reference pages, generated from the code at every build.

``reference/configuration.md`` lists every ``Configurable`` of ``think_kernel`` and
``jupyter_ext`` (its own ``config=True`` traits: name, type, default, help);
``reference/rest.md`` renders ``jupyter_ext.openapi.OPENAPI``; ``reference/websocket.md`` lists
every frame of the wire (agent events, session socket, kernel link) with its fields, from
the schemas ``think_kernel.wire.schema`` derives from their one declaration. Nothing is
copied by hand, so the pages stay true as settings, routes and events are added (a build
fails if a class or an operation lacks the help text or summary the pages need).
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import json
import pkgutil
import sys
import textwrap
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("think_kernel", "jupyter_ext")
# Modules that run inside the sandbox (they confine the process on import) are no place to
# look for settings.
SKIP = (".inside", ".__main__")


class ReferenceError_(Exception):
    """A class or operation lacks what the reference needs (the build fails with this)."""


def _modules() -> list[Any]:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    mods = []
    for pkg in PACKAGES:
        top = importlib.import_module(pkg)
        mods.append(top)
        for info in pkgutil.walk_packages(top.__path__, pkg + "."):
            if any(s in info.name for s in SKIP):
                continue
            mods.append(importlib.import_module(info.name))
    return mods


# ---------------------------------------------------------------- configuration


def _where(cls: type) -> str:
    """Which file (or command line) sets this class's traits."""
    from jupyter_server.extension.application import ExtensionApp

    mod = cls.__module__
    if issubclass(cls, ExtensionApp) or mod.startswith("jupyter_ext."):
        return "`jupyter_server_config.py` (or `jupyter lab --{0}.NAME=VALUE`)"
    if mod == "think_kernel.cli":
        return "the command line (`jupyter think doctor --{0}.NAME=VALUE`) or the kernel's file"
    return "`think_kernel_config.py` in a Jupyter config folder, or `ipython_config.py`"


def _default(cls: type, name: str, trait: Any) -> str:
    # A ``@default`` generator (environment, machine, other settings) has no static value.
    if name in getattr(cls, "_trait_default_generators", {}):
        return "computed at start (see the help)"
    return trait.default_value_repr()


def _type(trait: Any) -> str:
    name = type(trait).__name__
    info = getattr(trait, "_trait", None)
    if info is not None:
        name += f"({type(info).__name__})"
    if getattr(trait, "allow_none", False):
        name += " or None"
    return name


def _code(text: str) -> str:
    """A table cell's code span: one line, and no pipe (the tables extension splits cells on
    it, and an escaped one shows its backslash in code): ``A | B`` reads ``A or B``."""
    return " ".join(str(text).split()).replace(" | ", " or ").replace("|", "/")


def _cell(text: str) -> str:
    # One line, pipes escaped, and ``<root_dir>``-style placeholders shown, not taken as HTML.
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text.replace("<", "&lt;").replace(">", "&gt;")


def configurables() -> list[type]:
    """Every Configurable class defined in think_kernel and jupyter_ext, by module and name."""
    from traitlets.config import Configurable

    seen: dict[str, type] = {}
    for mod in _modules():
        for obj in vars(mod).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, Configurable)
                and obj.__module__ == mod.__name__
            ):
                seen[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return [seen[k] for k in sorted(seen)]


def configuration_page() -> str:
    """Markdown of the configuration reference."""
    out = [
        "# Configuration reference",
        "",
        "Generated from the code at build time: every configurable class of `think_kernel` and",
        "`jupyter_ext` with the settings it defines itself (inherited ones are documented by the",
        "base class's project). Set them as `c.CLASS.NAME = VALUE` in the file named under each",
        "class. Values that say *computed at start* come from the environment or the machine;",
        "the help text gives the rule.",
        "",
    ]
    for cls in configurables():
        traits = cls.class_own_traits(config=True)
        doc = inspect.getdoc(cls)
        if not doc:
            raise ReferenceError_(f"{cls.__module__}.{cls.__name__} has no docstring")
        out += [f"## `{cls.__name__}`", ""]
        out += [doc.splitlines()[0], ""]
        bases = [b for b in cls.__bases__ if b.__module__.split(".")[0] not in PACKAGES]
        base_txt = ", ".join(f"`{b.__module__}.{b.__name__}`" for b in bases)
        out += [f"Module `{cls.__module__}`; inherits from {base_txt}.", ""]
        if not traits:
            out += ["No settings of its own.", ""]
            continue
        out += [f"Set in {_where(cls).format(cls.__name__)}.", ""]
        out += ["| name | type | default | help |", "|---|---|---|---|"]
        for name in sorted(traits):
            trait = traits[name]
            if not trait.help:
                raise ReferenceError_(f"{cls.__name__}.{name} has no help text")
            default = _default(cls, name, trait)
            shown = default if default.startswith("computed") else f"`{_code(default)}`"
            out.append(f"| `{name}` | {_type(trait)} | {shown} | {_cell(trait.help)} |")
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------- REST


@functools.cache
def _frame_anchors() -> dict[str, str]:
    """Component name of each frame -> its anchor on the WebSocket page."""
    from think_kernel.wire.schema import components

    out = {}
    for name, schema in components().items():
        if "oneOf" in schema:
            out[name] = "websocket.md#event-frames"
        elif "type" in schema["properties"]:
            out[name] = "websocket.md#" + schema["properties"]["type"]["enum"][0]
        else:  # an object nested in frames
            out[name] = "websocket.md#" + name.lower()
    return out


def _schema(schema: dict[str, Any], rest: str = "") -> str:
    """One line of Markdown for a schema; ``rest`` is the page of the REST schemas' anchors."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        frame = _frame_anchors().get(name)
        return f"[{name}]({frame})" if frame else f"[{name}]({rest}#{name.lower()})"
    if "oneOf" in schema or "allOf" in schema:
        text = " or ".join(_schema(s, rest) for s in schema.get("oneOf") or schema["allOf"])
        return text + (" or null" if schema.get("nullable") else "")
    kind = schema.get("type", "any")
    if isinstance(kind, list):  # JSON Schema's union of types, e.g. ["string", "integer"]
        kind = " or ".join(kind)
    if kind == "array":
        return f"array of {_schema(schema.get('items', {}), rest)}"
    if kind == "object" and "properties" in schema:
        req = set(schema.get("required", []))
        props = schema["properties"].items()
        parts = [f"`{k}`{'' if k in req else '?'}: {_schema(v, rest)}" for k, v in props]
        return "{" + ", ".join(parts) + "}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {_schema(schema['additionalProperties'], rest)}"
    extra = []
    for key in ("enum", "pattern", "minimum", "maximum", "maxItems", "maxLength", "format"):
        if key in schema:
            extra.append(f"{key} {json.dumps(schema[key])}")
    text = kind + (" or null" if schema.get("nullable") else "")
    return text + (f" ({', '.join(extra)})" if extra else "")


def rest_page() -> str:
    """Markdown of the REST reference, from the OpenAPI document."""
    from jupyter_ext.openapi import OPENAPI

    base = OPENAPI["servers"][0]["url"]
    out = [
        "# REST reference",
        "",
        f"Generated at build time from `jupyter_ext/openapi/` (OpenAPI {OPENAPI['openapi']}),",
        f"which a running server also serves at `{base}/openapi.json`. Every route is",
        "authenticated by jupyter_server (a browser session, or `Authorization: token TOKEN`)",
        "and authorised on the resource `think` (`read` for GET, `write` otherwise): see",
        "[Security](../security.md). Paths are relative to the server's base URL",
        f"(`/user/NAME/` under JupyterHub), under `{base}`. Bodies are JSON; errors are",
        '`{"message": ...}` with the status below. Live frames: [WebSocket](websocket.md).',
        "",
    ]
    for path, ops in OPENAPI["paths"].items():
        for method, op in ops.items():
            if not op.get("summary"):
                raise ReferenceError_(f"{method.upper()} {path} has no summary")
            out += [f"## `{method.upper()} {base}{path}`", "", op["summary"] + ".", ""]
            params = op.get("parameters") or []
            if params:
                out += ["| parameter | in | type |", "|---|---|---|"]
                for p in params:
                    out.append(f"| `{p['name']}` | {p['in']} | {_cell(_schema(p['schema']))} |")
                out.append("")
            body = op.get("requestBody")
            if body:
                for ctype, media in body["content"].items():
                    out += [f"Body (`{ctype}`): {_schema(media['schema'])}", ""]
            out += ["| status | answer |", "|---|---|"]
            for code, resp in sorted(op["responses"].items()):
                media = (resp.get("content") or {}).get("application/json")
                what = _schema(media["schema"]) if media else resp.get("description", "")
                out.append(f"| {code} | {_cell(what)} |")
            out.append("")
    out += ["## Schemas", ""]
    frames = _frame_anchors()  # the frames' schemas are on the WebSocket page
    for name, schema in OPENAPI["components"]["schemas"].items():
        if name in frames:
            continue
        out += [f"### {name}", "", "| field | type |", "|---|---|"]
        req = set(schema.get("required", []))
        for key, sub in schema.get("properties", {}).items():
            mark = " (required)" if key in req else ""
            out.append(f"| `{key}`{mark} | {_cell(_schema(sub))} |")
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------- WebSocket


def _frames(classes: Any, intro: str = "") -> list[str]:
    """A heading, the description and a field table per frame class (from its schema)."""
    from think_kernel.wire.schema import frame_schema

    out = [intro, ""] if intro else []
    for cls in classes:
        if not inspect.getdoc(cls):
            raise ReferenceError_(f"frame {cls.__name__} has no docstring")
        schema = frame_schema(cls)
        names = schema["properties"].get("type", {}).get("enum", [cls.__name__])
        out += [f"### `{names[0]}`" if "type" in schema["properties"] else f"### {names[0]}", ""]
        if len(names) > 1:
            out += ["Sent as " + ", ".join(f"`{n}`" for n in names) + ".", ""]
        out += [_cell(schema["description"]), ""]
        fields = {k: v for k, v in schema["properties"].items() if k != "type"}
        if fields:
            req = set(schema["required"])
            out += ["| field | type |", "|---|---|"]
            for key, sub in fields.items():
                mark = "" if key in req else " (optional)"
                out.append(f"| `{key}`{mark} | {_cell(_schema(sub, 'rest.md'))} |")
            out.append("")
    return out


def websocket_page() -> str:
    """Markdown of the WebSocket reference, from the frame declarations of the wire."""
    from jupyter_ext import websocket
    from think_kernel.agent.events import EVENTS
    from think_kernel.wire import link, session
    from think_kernel.wire.schema import STRUCTS

    out = [
        "# WebSocket reference",
        "",
        "`GET /api/think/sessions/{session_id}/ws` upgrades to a WebSocket of one session,",
        "authenticated like the REST routes (`read` on `think`). Generated at build time from",
        "`jupyter_ext/websocket.py` and the frame declarations of `think_kernel/wire/` and",
        "`think_kernel/agent/events.py` (the same declarations give the schemas of",
        "`/api/think/openapi.json` and the TypeScript types of `labextension/src/wire.ts`).",
        "",
        "## The conversation",
        "",
        textwrap.dedent(inspect.getdoc(websocket) or "").split("\n", 1)[1].strip(),
        "",
        "## Event frames",
        "",
        "Each live frame is a JSON object: the event's fields, `type`, plus `seq` (its",
        "position in the session's stored events), `session_id` and, during a run, `run_id`.",
        "",
        *_frames(EVENTS),
        "## Other frames a tab receives",
        "",
        *_frames(session.SESSION_FRAMES),
        "## Objects in frames",
        "",
        *_frames(STRUCTS),
        "## Frames a tab sends",
        "",
        *_frames(session.CLIENT_FRAMES),
        "## The kernel link",
        "",
        "`/api/think/link` is internal: each think kernel's connection to the server,",
        "authenticated by an HMAC over the kernel's connection key (never a user's token).",
        "",
        textwrap.dedent(inspect.getdoc(link) or "").split("\n", 1)[1].strip(),
        "",
        *_frames(link.LINK_FRAMES),
    ]
    from jupyter_ext import reminders

    out += [
        "## Notifications of every session",
        "",
        "`GET /api/think/notifications?since=EPOCH` upgrades to a user-level WebSocket (same",
        "authentication). " + (inspect.getdoc(reminders.reminder_frame) or ""),
        "",
        textwrap.dedent(inspect.getdoc(reminders) or "").split("\n", 1)[1].strip(),
        "",
    ]
    return "\n".join(out)


# ---------------------------------------------------------------- the hook

PAGES = {
    "reference/configuration.md": configuration_page,
    "reference/rest.md": rest_page,
    "reference/websocket.md": websocket_page,
}


def modules_table() -> str:
    """Markdown table of every module of the two packages and its first docstring line."""
    rows = ["| module | what it is |", "|---|---|"]
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if "inside" in rel.parts and path.name != "__init__.py":
                continue
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
            if doc:
                rows.append(f"| `{rel.as_posix()}` | {_cell(doc.split(chr(10))[0])} |")
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Fill the ``<!-- think:modules -->`` marker."""
    return markdown.replace("<!-- think:modules -->", modules_table())


def on_files(files: Files, config: Any) -> Files:
    """Add the generated reference pages to the site."""
    for uri, build in PAGES.items():
        files.append(File.generated(config, uri, content=build()))
    return files
