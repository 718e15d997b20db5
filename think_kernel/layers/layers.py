"""The layers of a session's agent, lowest first: core, the runtime class, extensions, config
and the session's props. Each adds instructions and tools, and may name models for roles.

    layers = Layers(config, instructions=Runtime.instructions, tools=Runtime.extra_tools,
                    models=Runtime.models, extensions=load_extensions())
    registry = layers.tools(CORE_TOOLS)
    prompt = layers.system_prompt(props)
    layers.named_model(props, "fast")      # "" when no layer names one
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..agent.prompt import build_system_prompt
from ..tools.base import ToolFunc, ToolRegistry

if TYPE_CHECKING:
    from ..config import ThinkConfig


class Layers:
    """What the runtime class and the extensions add to the core, and the session on top."""

    def __init__(
        self,
        config: ThinkConfig,
        *,
        instructions: str = "",
        tools: Sequence[ToolFunc] = (),
        models: dict[str, str] | None = None,
        extensions: Sequence[Any] = (),
    ) -> None:
        self.config = config
        self.instructions = instructions
        self.extra_tools = list(tools)
        self.models = dict(models or {})
        self.extensions = list(extensions)

    def tools(self, core: Sequence[ToolFunc]) -> ToolRegistry:
        """The core tools (never replaced), then the class's and the extensions'."""
        registry = ToolRegistry(core, core=True)
        for func in self.extra_tools:
            registry.add(func)
        for ext in self.extensions:
            for func in getattr(ext, "tools", ()):
                registry.add(func)
        return registry

    def hooks(self) -> list[Any]:
        """The extensions' lifecycle hooks, in the order the extensions were loaded."""
        found: list[Any] = []
        for ext in self.extensions:
            found += list(getattr(ext, "hooks", None) or ())
        return found

    def system_prompt(self, props: dict[str, Any], *more: str) -> str:
        """Core prompt + class + extensions + config + session instructions (+ ``more``)."""
        layers = [self.instructions]
        layers += [getattr(ext, "instructions", "") for ext in self.extensions]
        layers += [self.config.instructions, str(props.get("instructions") or "")]
        return build_system_prompt(*layers, *more)

    def named_model(self, props: dict[str, Any], role: str) -> str:
        """The model a layer names for a role: props > class > extension ("" if none)."""
        if role == "primary" and props.get("model"):
            return str(props["model"])
        session_models = props.get("models")
        if isinstance(session_models, dict) and session_models.get(role):
            return str(session_models[role])
        if self.models.get(role):
            return self.models[role]
        for ext in self.extensions:
            if getattr(ext, "models", {}).get(role):
                return str(ext.models[role])
        return ""
