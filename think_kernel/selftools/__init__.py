"""Tools the agent writes for itself: ``<workspace>/.think/tools/*.py``.

Each public, typed and documented top-level function of such a file is a tool. The kernel reads
its schema from the syntax tree (:mod:`.schema`) and never imports the file; a person approves
each new or changed content (:mod:`.approval`, unless ``c.ThinkConfig.trust_workspace_tools``);
the tools join the session's registry at the next model step (:mod:`.library`) and run in the
session's sandbox, in its warm Python worker (:mod:`.runner`).
"""

from .config import SelfToolsConfig
from .library import TOOLS_DIR, SelfTools
from .schema import FileSpec, Problem, ToolDef, parse_tool_file
from .wiring import open_selftools, step_hook

__all__ = [
    "TOOLS_DIR",
    "FileSpec",
    "Problem",
    "SelfTools",
    "SelfToolsConfig",
    "ToolDef",
    "open_selftools",
    "parse_tool_file",
    "step_hook",
]
