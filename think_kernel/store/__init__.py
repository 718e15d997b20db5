"""The durable SQLite store shared by the think kernel and the server extension."""

from .store import Store, new_id

__all__ = ["Store", "new_id"]
