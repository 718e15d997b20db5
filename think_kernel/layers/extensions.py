"""Extensions published by installed packages: the "class" layer of a session's agent.

    [project.entry-points."think_kernel.extensions"]
    sql = "my_pkg.think:SqlExtension"          # an AgentExtension (class or instance)

:func:`load_extensions` finds and loads them; a broken one is logged, never fatal.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from importlib.metadata import Distribution, PathDistribution, distributions
from pathlib import Path
from typing import Any, ClassVar

from ..tools.base import ToolFunc

log = logging.getLogger(__name__)
ENTRY_POINT_GROUP = "think_kernel.extensions"


class AgentExtension:
    """Adds instructions, tools and model choices (the "class" layer), e.g. from a package:

    [project.entry-points."think_kernel.extensions"]
    sql = "my_pkg.think:SqlExtension"
    """

    name: ClassVar[str] = ""
    instructions: ClassVar[str] = ""
    tools: ClassVar[list[ToolFunc]] = []
    models: ClassVar[dict[str, str]] = {}


def _naming(header: str) -> Iterator[Distribution]:
    """The installed distributions whose ``entry_points.txt`` has the section ``header``.

    Each folder on ``sys.path`` is listed and its ``*.dist-info`` / ``*.egg-info`` files read
    directly: ``distributions()`` makes a few pathlib objects per file, which with a
    JupyterLab's worth of packages adds up on every new runtime's path to its
    first request. Anything else on ``sys.path`` (a zip) is searched the usual way.
    """
    want = header.encode()
    for entry in sys.path:
        folder = entry or "."
        try:
            names = os.listdir(folder)
        except NotADirectoryError:
            for dist in distributions(path=[entry]):
                if header in (dist.read_text("entry_points.txt") or ""):
                    yield dist
            continue
        except OSError:
            continue
        for name in names:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            try:
                with open(os.path.join(folder, name, "entry_points.txt"), "rb") as f:
                    text = f.read()
            except OSError:
                continue
            if want in text:
                yield PathDistribution(Path(folder, name))


def _published() -> list[Any]:
    """The entry points of our group. ``entry_points(group=...)`` parses the entry points of
    every installed distribution (slow with a JupyterLab's worth of packages, on every
    new runtime's path to its first request); only those whose file names our group are
    parsed here."""
    found, seen = [], set()
    for dist in _naming(f"[{ENTRY_POINT_GROUP}]"):
        for ep in dist.entry_points.select(group=ENTRY_POINT_GROUP):
            if (ep.name, ep.value) not in seen:  # a distribution seen twice on sys.path
                seen.add((ep.name, ep.value))
                found.append(ep)
    return found


def load_extensions() -> list[type[AgentExtension] | AgentExtension]:
    """Load every AgentExtension published under the entry-point group (bad ones are logged)."""
    found: list[type[AgentExtension] | AgentExtension] = []
    for ep in _published():
        try:
            found.append(ep.load())
        except Exception:  # a broken third-party extension must not stop the kernel
            log.exception("could not load think extension %s", ep.name)
    return found
