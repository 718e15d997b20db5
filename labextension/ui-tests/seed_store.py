"""Seed a session of the real store with N messages (for the UI benchmark).

    python seed_store.py <think.db> <session_id> <n>

Ids are ``<session_id>-seed-<i>`` (ids are unique across sessions), alternating user /
assistant, with generated contents.
"""

from __future__ import annotations

import asyncio
import sys

from think_kernel.store import Store


async def main(path: str, session_id: str, n: int) -> None:
    """Append the messages through the store's own API."""
    store = await Store.open(path)
    try:
        for i in range(n):
            user = i % 2 == 0
            content = (
                f"Question {i}?"
                if user
                else f"Answer **{i}** with `code_{i}` and a list:\n\n- one\n- two\n"
            )
            await store.add_message(
                session_id, "user" if user else "assistant", content, id=f"{session_id}-seed-{i}"
            )
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
