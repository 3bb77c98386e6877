"""A run's deltas read straight from an event log with sqlite3, as
storage/FORMAT.md lays them out: since schema version 6 a row of `deltas`
may hold several (`n`), their texts one after another in `text` and their
byte lengths in `sizes` (LEB128 varints); before it, one per row."""

from __future__ import annotations

import sqlite3


def sizes_of(blob: bytes, n: int) -> list[int]:
    out, value, shift = [], 0, 0
    for byte in blob:
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            out.append(value)
            value, shift = 0, 0
    if len(out) != n:
        raise ValueError(f"sizes hold {len(out)} lengths for {n} deltas")
    return out


def run_deltas(c: sqlite3.Connection, run_no: int) -> list[tuple[int, float, str]]:
    """(seq, at, text) of each of the run's deltas, in order."""
    packed = any(row[1] == "n" for row in c.execute("PRAGMA table_info(deltas)"))
    columns = "seq, at, text, n, sizes" if packed else "seq, at, text, 1, NULL"
    out = []
    for seq, at, text, n, sizes in c.execute(f"SELECT {columns} FROM deltas WHERE run_no=? ORDER BY seq",
                                             (run_no,)):
        if n == 1:
            out.append((seq, at, text))
            continue
        data, start = text.encode("utf-8"), 0
        for i, size in enumerate(sizes_of(sizes, n)):
            out.append((seq + i, at, data[start:start + size].decode("utf-8")))
            start += size
    return out
