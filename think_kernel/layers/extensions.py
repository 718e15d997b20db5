"""Extensions published by installed packages: the "class" layer of a session's agent.

    [project.entry-points."think_kernel.extensions"]
    sql = "my_pkg.think:SqlExtension"          # an AgentExtension (class or instance)

:func:`load_extensions` finds and loads them; a broken one is logged, never fatal.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from ..entrypoints import published
from ..tools.base import ToolFunc

log = logging.getLogger(__name__)
ENTRY_POINT_GROUP = "think_kernel.extensions"


class AgentExtension:
    """Adds instructions, tools, model choices and lifecycle hooks (the "class" layer), e.g.
    from a package:

    [project.entry-points."think_kernel.extensions"]
    sql = "my_pkg.think:SqlExtension"
    """

    name: ClassVar[str] = ""
    instructions: ClassVar[str] = ""
    tools: ClassVar[list[ToolFunc]] = []
    models: ClassVar[dict[str, str]] = {}
    #: :class:`think_kernel.hooks.Hook` objects, run in this order after earlier extensions'.
    hooks: ClassVar[list[Any]] = []


def load_extensions() -> list[type[AgentExtension] | AgentExtension]:
    """Load every AgentExtension published under the entry-point group (bad ones are logged)."""
    found: list[type[AgentExtension] | AgentExtension] = []
    for ep in published(ENTRY_POINT_GROUP):
        try:
            found.append(ep.load())
        except Exception:  # a broken third-party extension must not stop the kernel
            log.exception("could not load think extension %s", ep.name)
    return found
