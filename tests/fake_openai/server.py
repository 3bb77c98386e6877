#!/usr/bin/python3
"""A tiny OpenAI-compatible chat completions server (stdlib only), scripted by
the text of the conversation's last user message, for running the real hermes
agent or TUI offline. Not a model: every answer is decided by the rules below.

    /usr/bin/python3 tests/fake_openai/server.py [--port N] [--host H] [--log FILE]

It prints `{"event": "ready", "port": N}` once it listens. Point hermes at it
with `model: {default: fake-model, provider: custom, base_url:
http://127.0.0.1:N/v1}`.

What the last user message starts with decides the answer (when the last
message is a tool result, see `after a tool`):

| message            | answer                                                         |
|--------------------|----------------------------------------------------------------|
| `slow N`           | streams `tick0 ` ... `tick<N-1> ` one per second, then `done`  |
| `tool CMD` / `danger CMD` | one `terminal` tool call with `{"command": CMD}`        |
| `tools N CMD`      | N terminal calls in a row (one per model call), then the text  |
| `clarify Q`        | one `clarify` tool call asking Q; `Q / A,B` offers choices A, B |
| `clarify-some Q / A,B` | the same with `multi_select` (hermes 0.20: check any of them) |
| anything else      | `echo: <message>`                                              |
| after a tool       | `ran <cmd>: <tool output>` (the output includes whatever hermes appended to it, such as a /steer) |

A request without `tools` is an auxiliary call (titles, summaries): it gets
`Fake title` at once. Both `stream: true` (server-sent events, with a usage
chunk) and plain JSON answers are served. `GET /v1/models` lists `fake-model`.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "fake-model"


def text_of(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def last_user_text(messages: list[dict]) -> str:
    for m in reversed(messages):
        if m.get("role") == "user":
            return text_of(m).strip()
    return ""


def tool_calls_since_user(messages: list[dict]) -> int:
    n = 0
    for m in reversed(messages):
        if m.get("role") == "user":
            break
        if m.get("role") == "assistant" and m.get("tool_calls"):
            n += 1
    return n


class Script:
    """The answer to one request: text pieces (with delays) or one tool call."""

    def __init__(self, body: dict, counter: "Counter") -> None:
        messages = body.get("messages") or []
        self.pieces: list[tuple[float, str]] = []  # (seconds to wait first, text)
        self.call: dict | None = None
        if not body.get("tools"):
            self.pieces = [(0, "Fake title")]
            return
        text = last_user_text(messages)
        word, _, rest = text.partition(" ")
        last = messages[-1] if messages else {}
        if word == "tools":
            count, _, cmd = rest.partition(" ")
            wanted = int(count) if count.isdigit() else 1
            if tool_calls_since_user(messages) < wanted:
                self.call = counter.call(cmd or "true")
                return
        if last.get("role") == "tool":
            cmd = rest.partition(" ")[2] if word == "tools" else rest
            self.pieces = [(0, f"ran {cmd}: {text_of(last).strip()}")]
        elif word in ("tool", "danger") and rest:
            self.call = counter.call(rest)
        elif word in ("clarify", "clarify-some") and rest:
            question, _, choices = rest.partition(" / ")
            args = {"question": question.strip()}
            if choices:
                args["choices"] = [c.strip() for c in choices.split(",")]
            if word == "clarify-some":
                args["multi_select"] = True
            self.call = counter.call(args, tool="clarify")
        elif word == "slow" and rest.strip().isdigit():
            self.pieces = [(0 if i == 0 else 1.0, f"tick{i} ") for i in range(int(rest))] + [(1.0, "done")]
        else:
            self.pieces = [(0, f"echo: {text}")]

    def full_text(self) -> str:
        return "".join(p for _, p in self.pieces)


class Counter:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.n = 0

    def call(self, args, tool: str = "terminal") -> dict:
        """A tool call: a terminal command (a string) or the tool's arguments."""
        with self.lock:
            self.n += 1
            n = self.n
        arguments = {"command": args} if isinstance(args, str) else args
        return {"id": f"call_{n}", "type": "function",
                "function": {"name": tool, "arguments": json.dumps(arguments)}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-openai/1"

    def log_message(self, fmt, *args):  # quiet unless --log
        log = self.server.log_path
        if log:
            with open(log, "a", encoding="utf-8") as f:
                f.write(json.dumps({"t": time.time(), "http": fmt % args}) + "\n")

    def send_json(self, status: int, doc: dict) -> None:
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            self.send_json(200, {"object": "list", "data": [
                {"id": MODEL, "object": "model", "created": 0, "owned_by": "fake"}]})
        else:
            self.send_json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self.send_json(400, {"error": {"message": "bad json", "type": "invalid_request_error"}})
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.send_json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
            return
        script = Script(body, self.server.counter)
        if self.server.log_path:
            with open(self.server.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"t": time.time(), "request": body.get("messages", [])[-1:],
                                    "tools": bool(body.get("tools")), "stream": bool(body.get("stream"))}) + "\n")
        created = int(time.time())
        rid = f"chatcmpl-{created}{id(script) % 100000}"
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if not body.get("stream"):
            for delay, _ in script.pieces:
                time.sleep(delay)
            message = {"role": "assistant", "content": None if script.call else script.full_text()}
            if script.call:
                message["tool_calls"] = [script.call]
            self.send_json(200, {"id": rid, "object": "chat.completion", "created": created, "model": MODEL,
                                 "choices": [{"index": 0, "message": message,
                                              "finish_reason": "tool_calls" if script.call else "stop"}],
                                 "usage": usage})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

        def chunk(delta: dict, finish=None, **extra) -> bool:
            doc = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": MODEL,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
            try:
                self.wfile.write(b"data: " + json.dumps(doc).encode() + b"\n\n")
                self.wfile.flush()
                return True
            except OSError:  # the client hung up (an interrupt)
                return False

        if not chunk({"role": "assistant", "content": ""}):
            return
        if script.call:
            call = dict(script.call, index=0)
            if not chunk({"tool_calls": [call]}) or not chunk({}, "tool_calls"):
                return
        else:
            for delay, piece in script.pieces:
                time.sleep(delay)
                if not chunk({"content": piece}):
                    return
            if not chunk({}, "stop"):
                return
        try:
            done = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": MODEL,
                    "choices": [], "usage": usage}
            self.wfile.write(b"data: " + json.dumps(done).encode() + b"\n\ndata: [DONE]\n\n")
            self.wfile.flush()
        except OSError:
            pass


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--log", default="")
    args = ap.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    server.counter = Counter()
    server.log_path = args.log
    print(json.dumps({"event": "ready", "port": server.server_address[1]}), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
