"""The frames between the daemon and this worker process, Python side (the
format is in bridge/worker/FRAMES.md; bridge/worker/frames.cpp is the C++
side): a 4-byte big-endian length, then a UTF-8 JSON object whose "t" names
the kind, then, for a frame with raw fields (Raw), a newline and their JSON
texts. A frame longer than MAX_PART_BYTES goes in parts: every part's
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
FRAMES_VERSION = 5


class FrameError(Exception):
    """The stream cannot be read any further."""


# About what a frame costs beyond its text fields (for queue accounting).
FRAME_OVERHEAD = 48
# The kinds a `batch` frame carries: a turn's, which pile up while the
# writer is busy (FRAMES.md).
BATCH_KINDS = frozenset(("text", "texts", "event", "ask", "notify", "turn_end"))


class Raw:
    """A field's JSON text sent as it is, after the frame's object (FRAMES.md,
    "Raw fields"), not as a JSON string inside it: a long run's result is
    then neither escaped by the worker nor unescaped by the daemon. Held as
    UTF-8 bytes, in the pieces given (bridge_json.dumps_pieces): what a turn
    keeps until its end is committed."""

    __slots__ = ("pieces", "size")

    def __init__(self, json_text: str | list[bytes]) -> None:
        self.pieces = [json_text.encode("utf-8", "replace")] if isinstance(json_text, str) else json_text
        self.size = sum(len(piece) for piece in self.pieces)

    def __len__(self) -> int:
        return self.size


def raw(json_text: str | list[bytes] | None) -> Raw | None:
    return None if json_text is None else Raw(json_text)


def size_hint(body: dict[str, Any]) -> int:
    """About the bytes of a frame body: its text fields' lengths."""
    return FRAME_OVERHEAD + sum(len(v) for v in body.values() if isinstance(v, (str, Raw)))


def encode(kind: str, fields: dict[str, Any]) -> bytes:
    return encode_body({"t": kind, **fields})


def encode_items(items: list[tuple]) -> list[Any]:
    """Numbered frames, (turn id or 0, seq, kind, fields) in order, as the
    buffers to send, in order (a `texts` frame's fields are its list of
    texts). Each run of turn frames goes as one `batch` frame (a lone one as
    itself), every other frame as itself, where it stood; so does a turn
    frame with raw fields, which a batch cannot hold. Small frames come
    joined, for one write; a big raw field comes as views of its bytes."""
    chunks: list[Any] = []
    run: list[dict[str, Any]] = []

    def end_run() -> None:
        if run:
            chunks.extend(encode_chunks(run[0] if len(run) == 1 else {"t": "batch", "frames": list(run)}))
            run.clear()

    for turn, seq, kind, fields in items:
        if kind == "texts":  # keys in this order: the daemon reads this spelling fastest (FRAMES.md)
            run.append({"t": "texts", "turn": turn, "seq": seq, "texts": fields})
        elif turn and not _has_raw(fields):
            run.append({"t": kind, "turn": turn, "seq": seq, **fields})
        else:
            end_run()
            head = {"t": kind, "turn": turn, "seq": seq} if turn else {"t": kind}
            chunks.extend(encode_chunks({**head, **fields}))
    end_run()
    return _joined_small(chunks)


def _has_raw(fields: dict[str, Any]) -> bool:
    return any(isinstance(v, Raw) for v in fields.values())


def _joined_small(chunks: list[Any]) -> list[Any]:
    out: list[Any] = []
    small: list[Any] = []
    for chunk in chunks:
        if len(chunk) < (1 << 20):
            small.append(chunk)
            continue
        if small:
            out.append(b"".join(small))
            small = []
        out.append(chunk)
    if small:
        out.append(b"".join(small))
    return out


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
    return b"".join(encode_chunks(body))


def encode_chunks(body: dict[str, Any]) -> list[Any]:
    """A frame as buffers to write in order: each part's length, then its
    bytes (views of a raw field's, not copies)."""
    # The longest last: the daemon gives the frame's buffer to the last one.
    raws = sorted(((key, value) for key, value in body.items() if isinstance(value, Raw)), key=lambda kv: len(kv[1]))
    if raws:
        body = {key: value for key, value in body.items() if not isinstance(value, Raw)}
        body["raw"] = [[key, len(value)] for key, value in raws]
    pieces = [_json_bytes(body)]
    if raws:
        pieces.append(b"\n")
        for _, value in raws:
            pieces += value.pieces
    return _parts(pieces)


def _json_bytes(body: dict[str, Any]) -> bytes:
    # Text reaching here was cleaned of lone surrogates (bridge_json.clean_text);
    # "replace" only keeps a stray one from killing the worker.
    return json.dumps(body, ensure_ascii=False).encode("utf-8", "replace")


def _parts(pieces: list[bytes]) -> list[Any]:
    total = sum(len(piece) for piece in pieces)
    if total > MAX_FRAME_BYTES:
        raise FrameError(f"frame of {total} bytes is over the limit")
    if total <= MAX_PART_BYTES:
        return [struct.pack(">I", total), *pieces]
    out: list[Any] = []
    left, in_part = total, 0
    for piece in pieces:
        view, at = memoryview(piece), 0
        while at < len(view):
            if in_part == 0:
                in_part = min(MAX_PART_BYTES, left)
                left -= in_part
                out.append(struct.pack(">I", in_part | (MORE_PARTS if left else 0)))
            take = min(in_part, len(view) - at)
            out.append(view[at:at + take])
            at += take
            in_part -= take
    return out


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
    """A frame's body as the frame it holds; a raw field as its JSON text,
    as if it had come as a string."""
    end = body.find(b"\n")
    try:
        frame = json.loads(body[:end if end >= 0 else len(body)].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise FrameError(f"frame body is not JSON: {exc}") from None
    if not isinstance(frame, dict) or not isinstance(frame.get("t"), str):
        raise FrameError("frame without a kind")
    if end >= 0:
        _take_raw_fields(frame, memoryview(body)[end + 1:])
    return frame


def _take_raw_fields(frame: dict[str, Any], tail: memoryview) -> None:
    names = frame.pop("raw", None)
    if not isinstance(names, list):
        raise FrameError("frame with bytes after its object but no raw list")
    at = 0
    for entry in names:
        if (not isinstance(entry, list) or len(entry) != 2 or not isinstance(entry[0], str) or entry[0] == "t"
                or not isinstance(entry[1], int) or not 0 <= entry[1] <= len(tail) - at):
            raise FrameError("frame: raw is not a list of [field, byte count] within the frame")
        try:
            frame[entry[0]] = str(tail[at:at + entry[1]], "utf-8")
        except UnicodeDecodeError as exc:
            raise FrameError(f"frame: raw field {entry[0]} is not UTF-8: {exc}") from None
        at += entry[1]
    if at != len(tail):
        raise FrameError("frame: bytes after its raw fields")
