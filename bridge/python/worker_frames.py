"""The frames between the daemon and this worker process, Python side (the
format is in bridge/worker/FRAMES.md; bridge/worker/frames.cpp is the C++
side): a 4-byte big-endian length, then a UTF-8 JSON object whose "t" names
the kind. A frame longer than MAX_PART_BYTES goes in parts: every part's
length but the last's has MORE_PARTS set. Stdlib only."""

from __future__ import annotations

import json
import struct
from typing import Any, BinaryIO

MAX_PART_BYTES = 32 << 20
MORE_PARTS = 1 << 31
MAX_FRAME_BYTES = 1 << 30
# This format's version (FRAMES.md, "Versions"): in `ready`, `attach` and
# `attached`.
FRAMES_VERSION = 3


class FrameError(Exception):
    """The stream cannot be read any further."""


# About what a frame costs beyond its text fields (for queue accounting).
FRAME_OVERHEAD = 48
# The kinds a `batch` frame carries: a turn's, which pile up while the
# writer is busy (FRAMES.md).
BATCH_KINDS = frozenset(("text", "texts", "event", "ask", "notify", "turn_end"))


def size_hint(body: dict[str, Any]) -> int:
    """About the bytes of a frame body: its text fields' lengths."""
    return FRAME_OVERHEAD + sum(len(v) for v in body.values() if isinstance(v, str))


def encode(kind: str, fields: dict[str, Any]) -> bytes:
    return encode_body({"t": kind, **fields})


def encode_items(items: list[tuple]) -> bytes:
    """Numbered frames, (turn id or 0, seq, kind, fields) in order, as the
    bytes to send (a `texts` frame's fields are its list of texts). Each run
    of turn frames goes as one `batch` frame (a lone one as itself), every
    other frame as itself, where it stood."""
    chunks: list[bytes] = []
    run: list[dict[str, Any]] = []
    for turn, seq, kind, fields in items:
        if kind == "texts":
            run.append({"t": "texts", "turn": turn, "seq": seq, "texts": fields})
        elif turn:
            run.append({"t": kind, "turn": turn, "seq": seq, **fields})
        else:
            if run:
                chunks.append(_encode_run(run))
                run = []
            chunks.append(encode_body({"t": kind, **fields}))
    if run:
        chunks.append(_encode_run(run))
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _encode_run(run: list[dict[str, Any]]) -> bytes:
    return encode_body(run[0] if len(run) == 1 else {"t": "batch", "frames": run})


def expand(frame: dict[str, Any]) -> list[dict[str, Any]]:
    """A frame as the frames it stands for, one by one: a `batch`'s, and a
    `texts` frame as one `text` frame per text with its own seq."""
    out: list[dict[str, Any]] = []
    for f in frame["frames"] if frame["t"] == "batch" else [frame]:
        if f["t"] == "texts":
            out += [{"t": "text", "turn": f["turn"], "seq": f["seq"] + i, "text": t} for i, t in enumerate(f["texts"])]
        else:
            out.append(f)
    return out


def encode_body(body: dict[str, Any]) -> bytes:
    # Text reaching here was cleaned of lone surrogates (bridge_json.clean_text);
    # "replace" only keeps a stray one from killing the worker.
    data = json.dumps(body, ensure_ascii=False).encode("utf-8", "replace")
    if len(data) > MAX_FRAME_BYTES:
        raise FrameError(f"frame of {len(data)} bytes is over the limit")
    if len(data) <= MAX_PART_BYTES:
        return struct.pack(">I", len(data)) + data
    parts = []
    for at in range(0, len(data), MAX_PART_BYTES):
        part = data[at:at + MAX_PART_BYTES]
        more = MORE_PARTS if at + MAX_PART_BYTES < len(data) else 0
        parts += [struct.pack(">I", len(part) | more), part]
    return b"".join(parts)


def read(stream: BinaryIO) -> dict[str, Any] | None:
    """The next frame, or None at a clean end of the stream."""
    parts: list[bytes] = []
    total = 0
    while True:
        header = stream.read(4)
        if not header and not parts:
            return None
        if len(header) < 4:
            raise FrameError("stream ends inside a frame's length")
        (head,) = struct.unpack(">I", header)
        size, more = head & ~MORE_PARTS, bool(head & MORE_PARTS)
        if size > MAX_PART_BYTES:
            raise FrameError(f"frame part length {size} is over the limit")
        if more and size == 0:
            raise FrameError("an empty frame part")
        total += size
        if total > MAX_FRAME_BYTES:
            raise FrameError(f"frame of more than {MAX_FRAME_BYTES} bytes")
        part = stream.read(size)
        if len(part) < size:
            raise FrameError("stream ends inside a frame")
        parts.append(part)
        if not more:
            break
    return read_body(parts[0] if len(parts) == 1 else b"".join(parts))


def read_body(body: bytes) -> dict[str, Any]:
    """A frame's body as the frame it holds."""
    try:
        frame = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise FrameError(f"frame body is not JSON: {exc}") from None
    if not isinstance(frame, dict) or not isinstance(frame.get("t"), str):
        raise FrameError("frame without a kind")
    return frame
