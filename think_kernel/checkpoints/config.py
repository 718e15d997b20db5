"""Settings of checkpoints (``c.CheckpointConfig.*``)."""

from __future__ import annotations

from traitlets import Bool, Float, Int
from traitlets.config import Configurable


class CheckpointConfig(Configurable):
    """Whether checkpoints are recorded, how long they are kept, and how much of the
    workspace is copied ahead for changes the agent's tools did not see coming."""

    enabled = Bool(
        True,
        config=True,
        help="Record a checkpoint per user message (the files its turn changes), so files "
        "can be rewound. Default: True.",
    )
    keep_turns = Int(
        100,
        config=True,
        help="Checkpoints kept per session, the newest; older ones are pruned (their "
        "messages and branches stay). Default: 100.",
    )
    keep_days = Float(
        30.0,
        config=True,
        help="Days a checkpoint is kept; older ones are pruned. Default: 30.",
    )
    prefetch_mb = Int(
        32,
        config=True,
        help="MB of the workspace's small files (each at most prefetch_file_kb) copied into "
        "the store when a session's file watch starts, and kept current by the watch, so a "
        "file that sandboxed code changes without the agent having read it can still be "
        "rewound. Hidden files and folders the watch skips (.git, virtual environments, "
        "node_modules) are not copied. 0 turns it off: such a change is then recorded as "
        "unknown and a rewind leaves that file alone. Default: 32.",
    )
    prefetch_file_kb = Int(
        1024,
        config=True,
        help="Largest file (KB) the prefetch copies (a notebook with plots is often several "
        "hundred KB); bigger files are copied only once the agent reads or changes them with "
        "its tools. Default: 1024.",
    )
