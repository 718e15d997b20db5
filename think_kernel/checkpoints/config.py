"""Settings of checkpoints (``c.CheckpointConfig.*``)."""

from __future__ import annotations

from traitlets import Bool, Float, Int
from traitlets.config import Configurable


class CheckpointConfig(Configurable):
    """Whether checkpoints are recorded, and how long they are kept."""

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
