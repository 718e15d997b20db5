"""Loading many modules into a kernel that already holds a large heap.

    with old_objects_frozen():
        from .runtime import Runtime

Importing the runtime creates tens of thousands of objects, and the cyclic collector's
passes that this triggers walk every tracked object of the process: IPython's and the
user's as well as the new ones. While the objects that existed before are frozen
(:func:`gc.freeze`) the passes skip them; afterwards they are collected as before.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def old_objects_frozen() -> Iterator[None]:
    """Leave the objects that exist now out of the collector's passes until the block ends."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
