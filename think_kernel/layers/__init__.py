"""A session's agent in layers: core, the runtime class, installed extensions, config, props."""

from .extensions import ENTRY_POINT_GROUP, AgentExtension, load_extensions
from .layers import Layers

__all__ = ["ENTRY_POINT_GROUP", "AgentExtension", "Layers", "load_extensions"]
