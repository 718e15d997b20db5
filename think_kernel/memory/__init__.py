"""Memory across sessions: search over every stored message, and a memory file in the prompt.

notes = MemoryFile(MemoryConfig())     # <user Think folder>/MEMORY.md
notes.prompt()                         # the system prompt's section ("" when empty)
MEMORY_TOOLS                           # search_sessions, remember
"""

from .notes import MemoryConfig, MemoryFile
from .tools import MEMORY_TOOLS

__all__ = ["MEMORY_TOOLS", "MemoryConfig", "MemoryFile"]
