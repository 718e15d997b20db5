"""Row ids: a time prefix and random hex, so ids sort roughly by creation."""

from __future__ import annotations

import time
import uuid


def new_id(prefix: str = "") -> str:
    """A sortable-enough unique id (time prefix + random), e.g. ``msg_18c3...``."""
    return f"{prefix}{int(time.time() * 1000):x}{uuid.uuid4().hex[:12]}"
