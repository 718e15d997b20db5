"""Time travel: a checkpoint per user message, and rewinds of files and conversation.

The recorder (:mod:`.recorder`) runs in the kernel, beside the tools; the plan of a restore
(:mod:`.restore`) is pure; the server applies it through the rooms (``jupyter_ext/rewind.py``).
"""

from .config import CheckpointConfig
from .recorder import Checkpoints, around_tool

__all__ = ["CheckpointConfig", "Checkpoints", "around_tool"]
