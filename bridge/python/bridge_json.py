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


def to_json(value: Any) -> str:
    return dumps(plain(value))


