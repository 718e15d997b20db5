"""Search over stored sessions: what the index costs a write, and what a search costs.

    python bench/search.py [--quick]

Measured in one run, each figure beside its baseline:

- write: ``Store.add_message`` per message (a few hundred characters, as chat turns are)
  into a store with the full-text index (its triggers index each row in the same
  transaction) and into one whose index triggers were dropped;
- search: ``Store.search_messages`` (FTS5, best 10 by rank, with snippets) at 10,000 and
  100,000 stored messages, against a ``LIKE '%word%'`` scan of the same rows (every word, the
  newest 10), for a rare word, a common word, two words and a prefix;
- size: the database file with and without the index.

Medians of repeated runs (p90 in brackets); ``--quick`` stops at 10,000 messages.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from think_kernel.store import Store  # noqa: E402

WORDS = (
    "data frame column model train test loss metric plot file path notebook cell kernel "
    "value array index merge group filter sort read write parse error fix run check result "
    "table query schema type float string date time window mean median sum count"
).split()
#: Queries: a word in one message, a word in most, two words, a prefix.
QUERIES = ["zanzibar", "model", "merge schema", "pars*"]
DROP_INDEX = "DROP TRIGGER search_insert; DROP TRIGGER search_update; DROP TRIGGER search_delete;"


def text(rng: random.Random, n: int) -> str:
    """A message of ``n`` words."""
    return " ".join(rng.choice(WORDS) for _ in range(n))


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile of the values."""
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def fmt(values: list[float]) -> str:
    """Median and p90 in microseconds or milliseconds."""
    med, p90 = statistics.median(values), pct(values, 0.9)
    if med < 1e-3:
        return f"{med * 1e6:7.1f} µs (p90 {p90 * 1e6:.1f})"
    return f"{med * 1e3:7.2f} ms (p90 {p90 * 1e3:.2f})"


async def write_cost(base: Path, n: int, indexed: bool) -> list[float]:
    """Seconds per ``add_message`` of ``n`` messages."""
    path = base / f"write-{indexed}.db"
    store = await Store.open(path)
    if not indexed:
        for statement in DROP_INDEX.split(";"):
            if statement.strip():
                await store.db.execute(statement)
    sid = (await store.create_session())["id"]
    rng = random.Random(1)
    times = []
    for _ in range(n):
        body = text(rng, 60)
        start = time.perf_counter()
        await store.add_message(sid, "user", body)
        times.append(time.perf_counter() - start)
    await store.close()
    return times


async def fill(store: Store, n: int, rng: random.Random) -> None:
    """``n`` messages over 100 sessions, one of them with the rare word."""
    sids = [(await store.create_session(title=f"s{i}"))["id"] for i in range(100)]
    now = time.time()
    rows = []
    for i in range(n):
        body = text(rng, 60) + (" zanzibar" if i == n // 2 else "")
        sid = sids[i % 100]
        rows.append((f"m_{i}", sid, i // 100 + 1, "user", body, now + i, now + i))
    await store.db.execute("BEGIN")
    await store.db.executemany(
        "INSERT INTO messages (id, session_id, seq, role, content, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    await store.db.execute("COMMIT")


async def like_scan(store: Store, query: str) -> int:
    """The baseline: every word as ``LIKE '%word%'``, the newest 10 rows."""
    words = [w.rstrip("*") for w in query.split()]
    where = " AND ".join("content LIKE ?" for _ in words)
    rows = await store._all(
        f"SELECT id, session_id, content FROM messages WHERE {where}"
        " ORDER BY created_at DESC LIMIT 10",
        [f"%{w}%" for w in words],
    )
    return len(rows)


async def search_figures(base: Path, n: int, runs: int) -> None:
    """Search latency at ``n`` messages, FTS beside the LIKE scan."""
    store = await Store.open(base / f"search-{n}.db")
    start = time.perf_counter()
    await fill(store, n, random.Random(2))
    took = time.perf_counter() - start
    print(f"\n{n:,} messages (stored and indexed in {took:.1f} s)")
    print(f"  {'query':<14} {'FTS5 search_messages':<30} {'LIKE scan (baseline)':<30} ratio")
    for query in QUERIES:
        fts, like = [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            hits = len((await store.search_messages(query, 10)).hits)
            fts.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await like_scan(store, query)
            like.append(time.perf_counter() - t0)
        ratio = statistics.median(like) / statistics.median(fts)
        print(f"  {query:<14} {fmt(fts):<30} {fmt(like):<30} {ratio:5.1f}x  ({hits} hits)")
    await store.close()
    size = (base / f"search-{n}.db").stat().st_size + _wal(base / f"search-{n}.db")
    plain = base / f"plain-{n}.db"
    bare = await Store.open(plain)
    for statement in DROP_INDEX.split(";"):
        if statement.strip():
            await bare.db.execute(statement)
    await fill(bare, n, random.Random(2))
    await bare.close()
    plain_size = plain.stat().st_size + _wal(plain)
    print(f"  size: {size / 2**20:.1f} MiB with the index, {plain_size / 2**20:.1f} MiB without")


def _wal(path: Path) -> int:
    wal = Path(f"{path}-wal")
    return wal.stat().st_size if wal.exists() else 0


async def main(quick: bool) -> None:
    """Print every figure."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        n = 500 if quick else 2000
        indexed = await write_cost(base, n, True)
        bare = await write_cost(base, n, False)
        extra = statistics.median(indexed) - statistics.median(bare)
        print(f"write, per add_message ({n} messages of 60 words)")
        print(f"  with the index:    {fmt(indexed)}")
        print(f"  without (baseline): {fmt(bare)}")
        print(f"  the index adds:    {extra * 1e6:.1f} µs a message")
        for size in (10_000,) if quick else (10_000, 100_000):
            await search_figures(base, size, 10 if quick else 20)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="stop at 10,000 messages")
    asyncio.run(main(parser.parse_args().quick))
