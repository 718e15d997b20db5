"""The task graph: a pure core (:mod:`.graph`), the shape clients see
(:mod:`.shape`), the store adapter that emits ``task_*`` events (:mod:`.board`), the
model's tools (:mod:`.tools`), settings (:mod:`.config`) and the notebook cell's live view
(:mod:`.display`)."""

from .board import TaskBoard
from .config import TasksConfig
from .graph import Limits, Task, TaskError

__all__ = ["Limits", "Task", "TaskBoard", "TaskError", "TasksConfig"]
