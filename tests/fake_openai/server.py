"""A stdlib stand-in for an OpenAI-compatible endpoint, for running the REAL
hermes-agent offline (by hand, or for benchmarks; no test depends on it).

    python3 tests/fake_openai/server.py [--port 0] [--words 20] [--delay-ms 0]

Prints {"port": N} once it listens. GET /v1/models (and the other model
probes hermes-agent makes) answers one model with a 131072-token context;
any POST answers a chat completion: streamed as server-sent events when the
request asks for "stream", else one JSON body. The reply is `--words` words
("w0 w1 ..."), echoing the last user message's first word first, so a
client can tell turns apart.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "fake-model"


def reply_words(body: dict, n: int) -> list[str]:
    first = ""
    for msg in reversed(body.get("messages") or []):
        if isinstance(msg, dict) and msg.get("role") == "user":
            content = msg.get("content")
            if isinstance(content, list):
                content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            first = (str(content or "").split() or [""])[0]
            break
    return [first or "hello"] + [f"w{i}" for i in range(1, n)]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    words = 20
    delay = 0.0

    def log_message(self, *args) -> None:  # quiet
        pass

    def send_json(self, obj: dict, status: int = 200) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        model = {"id": MODEL, "object": "model", "owned_by": "fake", "context_length": 131072}
        if self.path.rstrip("/").endswith("/models"):
            self.send_json({"object": "list", "data": [model]})
        else:
            self.send_json(model)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            body = {}
        words = reply_words(body, self.words)
        created = int(time.time())
        usage = {"prompt_tokens": 10, "completion_tokens": len(words), "total_tokens": 10 + len(words)}
        if not body.get("stream"):
            self.send_json({"id": "c1", "object": "chat.completion", "created": created, "model": MODEL,
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": " ".join(words)}}],
                            "usage": usage})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()

        def chunk(delta: dict, finish: str | None = None, extra: dict | None = None) -> None:
            obj = {"id": "c1", "object": "chat.completion.chunk", "created": created, "model": MODEL,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            obj.update(extra or {})
            self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
            self.wfile.flush()

        chunk({"role": "assistant", "content": ""})
        for i, w in enumerate(words):
            if self.delay:
                time.sleep(self.delay)
            chunk({"content": (" " if i else "") + w})
        chunk({}, "stop")
        self.wfile.write(b"data: " + json.dumps({"id": "c1", "object": "chat.completion.chunk", "created": created,
                                                  "model": MODEL, "choices": [], "usage": usage}).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--words", type=int, default=20)
    parser.add_argument("--delay-ms", type=float, default=0)
    args = parser.parse_args()
    Handler.words, Handler.delay = args.words, args.delay_ms / 1000
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(json.dumps({"port": server.server_address[1]}), flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
