"""The frames between the daemon and this worker process, Python side (the
format is in bridge/worker/FRAMES.md; bridge/worker/frames.cpp is the C++
side): a 4-byte big-endian length, then a UTF-8 JSON object whose "t" names
the kind. Stdlib only."""

from __future__ import annotations

import json
import struct
from typing import Any, BinaryIO

MAX_FRAME_BYTES = 1 << 30


class FrameError(Exception):
    """The stream cannot be read any further."""


def encode(kind: str, fields: dict[str, Any]) -> bytes:
    body = dict(t=kind)
    body.update(fields)
    # Text reaching here was cleaned of lone surrogates (bridge_json.clean_text);
    # "replace" only keeps a stray one from killing the worker.
    data = json.dumps(body, ensure_ascii=False).encode("utf-8", "replace")
    if len(data) > MAX_FRAME_BYTES:
        raise FrameError(f"frame of {len(data)} bytes is over the limit")
    return struct.pack(">I", len(data)) + data


def read(stream: BinaryIO) -> dict[str, Any] | None:
    """The next frame, or None at a clean end of the stream."""
    header = stream.read(4)
    if not header:
        return None
    if len(header) < 4:
        raise FrameError("stream ends inside a frame's length")
    (size,) = struct.unpack(">I", header)
    if size > MAX_FRAME_BYTES:
        raise FrameError(f"frame length {size} is over the limit")
    body = stream.read(size)
    if len(body) < size:
        raise FrameError("stream ends inside a frame")
    try:
        frame = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise FrameError(f"frame body is not JSON: {exc}") from None
    if not isinstance(frame, dict) or not isinstance(frame.get("t"), str):
        raise FrameError("frame without a kind")
    return frame
