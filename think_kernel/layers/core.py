"""The core layer's tools: every session has them, and no layer can replace or remove them.

registry = layers.tools(CORE_TOOLS)    # the core, then each layer's additions
"""

from __future__ import annotations

from ..apps.tools import APP_TOOLS
from ..jobs.tools import JOB_TOOLS
from ..memory.tools import MEMORY_TOOLS
from ..questions.tool import QUESTION_TOOLS
from ..schedules.tools import SCHEDULE_TOOLS
from ..skills.tools import SKILL_TOOLS
from ..subagents.tools import SUBAGENT_TOOLS
from ..tasks.tools import TASK_TOOLS
from ..tools.base import ToolFunc
from ..tools.code import CODE_TOOLS
from ..tools.files import FILE_TOOLS
from ..tools.notebooks import NOTEBOOK_TOOLS
from ..tools.variables import VARIABLE_TOOLS
from ..web import WEB_TOOLS
from ..web.fetch import FETCH_TOOLS

__all__ = ["CORE_TOOLS"]

#: The tools every session has (the core layer), in the order the model sees them.
CORE_TOOLS: list[ToolFunc] = [
    *FILE_TOOLS,
    *NOTEBOOK_TOOLS,
    *VARIABLE_TOOLS,
    *CODE_TOOLS,
    *JOB_TOOLS,
    *APP_TOOLS,
    *FETCH_TOOLS,
    *WEB_TOOLS,
    *TASK_TOOLS,
    *QUESTION_TOOLS,
    *SUBAGENT_TOOLS,
    *SCHEDULE_TOOLS,
    *SKILL_TOOLS,
    *MEMORY_TOOLS,
]
