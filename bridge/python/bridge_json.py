"""JSON that C++ and every client can parse: no NaN, no lone surrogates."""

from __future__ import annotations

import json
import math
import re
from typing import Any

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    return _LONE_SURROGATE.sub("\ufffd", text) if not text.isascii() else text


def plain(value: Any) -> Any:
    """A JSON-safe copy: str keys, finite floats, valid text, str() for the rest."""
    if value is None or isinstance(value, bool) or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(str(k)): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return clean_text(str(value))


def dumps(clean: Any) -> str:
    """JSON text of a value plain() already made safe."""
    return json.dumps(clean, ensure_ascii=False)


# A text longer than this is a piece of its own in dumps_pieces().
LONG_TEXT = 1 << 16
_ENCODER = json.JSONEncoder(ensure_ascii=False)


def dumps_pieces(clean: Any, shared: dict[int, list[bytes]] | None = None) -> list[bytes]:
    """dumps(clean) as UTF-8 in pieces whose join is exactly its bytes: each
    long text (a big run's response) a piece of its own, encoded without the
    C encoder's final join, which holds the whole output twice, and without
    a str of the whole. A value whose id is in `shared` is those pieces,
    not encoded again (the result's `messages` and the history: the same
    bytes). Containers without a long text go to the C encoder whole."""
    shared = shared or {}
    long_inside: set[int] = set()
    _find_long(clean, shared, long_inside)
    pieces = _Pieces()
    _walk(clean, shared, long_inside, pieces)
    return pieces.done()


class _Pieces:
    """Plain functions and this, not closures: a recursive closure is a
    reference cycle, which would keep the pieces until the next collection."""

    def __init__(self) -> None:
        self.out: list[bytes] = []
        self.text: list[str] = []

    def add(self, piece: bytes) -> None:
        self.flush()
        self.out.append(piece)

    def flush(self) -> None:
        if self.text:
            self.out.append("".join(self.text).encode("utf-8", "replace"))
            self.text.clear()

    def done(self) -> list[bytes]:
        self.flush()
        return self.out


def _find_long(value: Any, shared: dict[int, list[bytes]], long_inside: set[int]) -> bool:
    """Whether a long text or a shared value is in `value`; each container
    that holds one goes into `long_inside`."""
    if id(value) in shared:
        return True  # its pieces are made already: nothing inside it is looked at again
    found = isinstance(value, str) and len(value) > LONG_TEXT
    if isinstance(value, dict):
        found = any([_find_long(v, shared, long_inside) for v in value.values()]) or found
    elif isinstance(value, list):
        found = any([_find_long(v, shared, long_inside) for v in value]) or found
    if found and isinstance(value, (dict, list)):
        long_inside.add(id(value))
    return found


def _walk(value: Any, shared: dict[int, list[bytes]], long_inside: set[int], pieces: _Pieces) -> None:
    if id(value) in shared:
        for piece in shared[id(value)]:
            pieces.add(piece)
    elif isinstance(value, str) and len(value) > LONG_TEXT:
        pieces.add(_ENCODER.encode(value).encode("utf-8", "replace"))
    elif id(value) not in long_inside:
        pieces.text.append(_ENCODER.encode(value))
    elif isinstance(value, dict):
        pieces.text.append("{")
        for i, (key, item) in enumerate(value.items()):
            pieces.text.append((", " if i else "") + _ENCODER.encode(key) + ": ")
            _walk(item, shared, long_inside, pieces)
        pieces.text.append("}")
    else:
        pieces.text.append("[")
        for i, item in enumerate(value):
            if i:
                pieces.text.append(", ")
            _walk(item, shared, long_inside, pieces)
        pieces.text.append("]")


def to_json(value: Any) -> str:
    return dumps(plain(value))


