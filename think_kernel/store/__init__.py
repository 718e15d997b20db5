"""The durable SQLite store shared by the think kernel and the server extension."""

from .ids import new_id
from .store import Store

__all__ = ["Store", "new_id"]
