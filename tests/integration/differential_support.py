"""Machinery of the differential test (test_differential.py): running one
scenario against the seed bridge and ours, recording every answer, and the
normalisation that makes them comparable (ids, times, our extra events)."""

from __future__ import annotations

import contextlib
import copy
import json
import math
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import DEFAULT_CONFIG, Bridge  # noqa: E402

# ---------------------------------------------------------------------------
# Normalisation helpers
# ---------------------------------------------------------------------------

EXTRA_EVENTS = {"stream.delta", "turn.boundary", "step",  # ours only (difference 1)
                # ...and what Hermes Studio's current bridge adds (difference 12)
                "bridge.context.ready", "session.title.updated"}
# Fields Hermes Studio's current bridge added to the seed's answers and
# events (difference 12): dropped from ours before comparing with the seed.
STUDIO_PING_KEYS = ("mode", "broker", "workers", "worker_details", "active_sessions", "running_sessions",
                    "sessions_by_profile", "running_sessions_by_profile")
STUDIO_LIST_KEYS = ("profile", "worker_key")
# Ours alone: where the agent runs, its interpreter and versions (issue 14),
# and this build's versions (issue 25), in ping and status; dropped before
# comparing with either reference.
OUR_PING_KEYS = ("agent", "version")
SEED_TERMINAL_TIMEOUT_MS, STUDIO_TERMINAL_TIMEOUT_MS = 60_000, 120_000
TIME_KEYS = {"time", "started_at", "ended_at", "created_at", "last_used_at"}
ID_KEYS = {"run_id", "current_run_id", "approval_id", "request_id", "session_id", "requested_session_id",
           "clarify_id"}
HEX32 = re.compile(r"[0-9a-f]{32}")
RAW_TIME = re.compile(r'("(?:time|started_at|ended_at|created_at|last_used_at)": )(-?[0-9][0-9.eE+-]*)')
SEED_GATEWAY_TIMEOUT_MS = 300_000


def python_dumps(raw: bytes) -> bytes:
    """What the seed would write for the same content: json.dumps(..., ensure_ascii=False) + newline."""
    return (json.dumps(json.loads(raw), ensure_ascii=False) + "\n").encode()


# Compared with Hermes Studio's bridge instead, ours has fewer extras: Studio
# emits stream.delta, turn.boundary, bridge.context.ready and titles too.
STUDIO_VIEW_EXTRAS = {"step",  # the seed defined it; Studio's bridge never registers the callback
                      "clarify.resolved"}  # Studio's UI makes up its own; ours logs the answer
# Events whose place depends on a race in Studio's bridge: hermes titles a
# session on a thread of its own, and Studio's bridge logs the title
# whenever it comes (mostly after `done`); ours logs it before `done` when it
# comes quickly (asserted in test_studio_protocol).
TIMING_EVENTS = {"session.title.updated"}
# Studio's session config counts MCP tools at construction and copies the
# last bridge.context.ready into it; ours has that event in the run only.
STUDIO_CONFIG_ONLY = ("mcp_tool_count", "active_mcp_tool_count", "context_info")


def is_extra(event: Any, extras: set = EXTRA_EVENTS) -> bool:
    return isinstance(event, dict) and event.get("event") in extras


def seed_visible_count(full_events: list[dict], cursor: int, extras: set = EXTRA_EVENTS) -> int:
    """How many events the seed would have logged among ours' first `cursor` events."""
    return sum(1 for e in full_events[:max(0, cursor)] if not is_extra(e, extras))


def ours_position(full_events: list[dict], seed_cursor: int) -> int:
    """The index in ours' event log that corresponds to the seed's event_cursor."""
    if seed_cursor <= 0:
        return seed_cursor
    seen = 0
    for i, e in enumerate(full_events):
        if not is_extra(e):
            seen += 1
            if seen == seed_cursor:
                return i + 1
    return len(full_events) + (seed_cursor - seen)


class IdMap:
    """Maps random ids to placeholders in order of first appearance."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.counts: dict[str, int] = {}

    def name(self, value: str, kind: str) -> str:
        if value not in self.names:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            self.names[value] = f"<{kind}{self.counts[kind]}>"
        return self.names[value]

    def sub(self, text: str) -> str:
        return HEX32.sub(lambda m: self.name(m.group(0), "id"), text)


def id_kind(key: str) -> str:
    return key.removeprefix("current_").removeprefix("requested_").removesuffix("_id")


PERSISTED_STAMP = "_db_persisted"


def mask(obj: Any, ids: IdMap, key: str | None = None) -> Any:
    """Masks times (keeping the type) and renames 32-hex ids, recursively.
    The agent's persistence stamp is left out: the agent puts it on its live
    message dicts when it writes them to state.db, and the seed encodes an
    event's messages when it is read, ours when it is sent."""
    if isinstance(obj, dict):
        return {k: mask(v, ids, k) for k, v in obj.items() if k != PERSISTED_STAMP}
    if isinstance(obj, list):
        return [mask(v, ids) for v in obj]
    if key in TIME_KEYS and obj is not None:
        return f"<{type(obj).__name__}>"
    if isinstance(obj, str):
        if key in ID_KEYS and HEX32.fullmatch(obj):
            return ids.name(obj, id_kind(key))
        return ids.sub(obj)
    if isinstance(obj, float) and math.isnan(obj):
        return "<nan>"
    return obj


def unstamped(obj: Any) -> Any:
    """The value without the agent's persistence stamp, recursively."""
    if isinstance(obj, dict):
        return {k: unstamped(v) for k, v in obj.items() if k != PERSISTED_STAMP}
    if isinstance(obj, list):
        return [unstamped(v) for v in obj]
    return obj


def mask_raw(raw: bytes, ids: IdMap) -> str:
    """The raw reply as text with times and 32-hex ids masked (nothing else)."""
    text = raw.decode("utf-8", errors="backslashreplace")
    text = RAW_TIME.sub(lambda m: m.group(1) + "<num>", text)
    return ids.sub(text)


def filter_extras(obj: Any, full_events: dict[str, list], extras: set = EXTRA_EVENTS) -> Any:
    """Ours -> the seed's view: drop stream.delta / turn.boundary / step and
    translate event_cursor values into the seed's numbering."""
    if isinstance(obj, list):
        return [filter_extras(v, full_events, extras) for v in obj if not is_extra(v, extras)]
    if not isinstance(obj, dict):
        return obj
    out = {k: filter_extras(v, full_events, extras) for k, v in obj.items()}
    run_events = full_events.get(obj.get("run_id"))
    if "event_cursor" in out and run_events is not None and isinstance(out["event_cursor"], int):
        out["event_cursor"] = seed_visible_count(run_events, out["event_cursor"], extras)
    return out


# What differs between two processes by nature (Studio's worker pid, its
# endpoint) and ours' config key of its own (the sticky workspace).
PROCESS_KEYS = ("pid", "endpoint", "hermes_home", "agent_root")


def studio_view(obj: Any, kind: str) -> Any:
    """Both bridges as compared with Hermes Studio's: error_type left out
    (Studio's broker drops it for everything a worker raised; ours always
    sends it, the seed's floor), ping's agent_root (Studio's broker has
    none) and the config fields only Studio's keeps."""
    if isinstance(obj, list):
        return [studio_view(v, kind) for v in obj]
    if not isinstance(obj, dict):
        return obj
    out = {k: studio_view(v, kind) for k, v in obj.items()}
    if out.get("ok") is False:
        out.pop("error_type", None)
    if out.get("pong") is True:
        out.pop("agent_root", None)
    if out.get("pong") is True or "exists" in out:  # ping, status
        for key in OUR_PING_KEYS:
            out.pop(key, None)
    if kind == "studio" and isinstance(out.get("config"), dict):
        for key in STUDIO_CONFIG_ONLY:
            out["config"].pop(key, None)
    if kind == "ours" and isinstance(out.get("config"), dict):
        out["config"].pop("workspace", None)  # ours keeps the session's workspace; Studio keeps none
    if "worker_profile" in out or "broker" in out:  # worker_ping, ping: process facts
        for key in PROCESS_KEYS:
            if key in out:
                out[key] = "<process>"
        for key in ("broker", "workers", "worker_details"):  # which processes, and their pids
            if key in out:
                out[key] = "<process>"
    return out


def without_studio_fields(obj: Any) -> Any:
    """Ours -> the seed's view of answers Studio's bridge extended."""
    if isinstance(obj, list):
        return [without_studio_fields(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    out = {k: without_studio_fields(v) for k, v in obj.items()}
    drop: tuple = ()
    if out.get("pong") is True:
        drop = STUDIO_PING_KEYS + OUR_PING_KEYS
    elif "session_id" in out and "config" in out and "exists" not in out:
        drop = STUDIO_LIST_KEYS  # a list entry
    elif out.get("event") == "approval.requested":
        drop = ("pattern_keys",)
        if out.get("timeout_ms") == STUDIO_TERMINAL_TIMEOUT_MS and "pattern_keys" not in obj:
            out["timeout_ms"] = SEED_TERMINAL_TIMEOUT_MS  # the terminal path waits as long as Studio's
    elif out.get("event") == "bridge.compression.completed":
        drop = ("result_approx_tokens",)
    for key in drop:
        out.pop(key, None)
    return out


def mask_gateway_timeout(obj: Any, expected_ms: int) -> Any:
    """Gateway approval.requested.timeout_ms differs on purpose (difference 2):
    mask it only when it has the value expected for this bridge."""
    if isinstance(obj, list):
        return [mask_gateway_timeout(v, expected_ms) for v in obj]
    if not isinstance(obj, dict):
        return obj
    out = {k: mask_gateway_timeout(v, expected_ms) for k, v in obj.items()}
    if out.get("event") == "approval.requested" and out.get("timeout_ms") == expected_ms:
        out["timeout_ms"] = "<gateway timeout_ms>"
    return out


def mask_traceback(obj: Any) -> Any:
    """A traceback is reduced to its last line (the exception itself)."""
    if isinstance(obj, list):
        return [mask_traceback(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    out = {k: mask_traceback(v) for k, v in obj.items()}
    if isinstance(out.get("traceback"), str):
        lines = [ln for ln in out["traceback"].splitlines() if ln.strip()]
        out["traceback"] = lines[-1] if lines else ""
    return out


def without_text_events(events: Any) -> Any:
    """Events minus the ones that carry streamed text (reasoning.available)."""
    if not isinstance(events, list):
        return events
    return [e for e in events if e.get("event") != "reasoning.available"]


def drop_events(obj: Any, pred) -> Any:
    if isinstance(obj, list):
        return [drop_events(v, pred) for v in obj if not (isinstance(v, dict) and "event" in v and pred(v))]
    if isinstance(obj, dict):
        return {k: drop_events(v, pred) for k, v in obj.items()}
    return obj


def err(error_type: str, error: str) -> dict:
    return {"ok": False, "error": error, "error_type": error_type}


def key_err(prefix: str, value: str) -> dict:
    return err("KeyError", str(KeyError(f"{prefix}: {value}")))


# ---------------------------------------------------------------------------
# Scenario machinery
# ---------------------------------------------------------------------------


class Ref:
    """A value only known while the scenario runs: the n-th run/approval/request id."""

    def __init__(self, kind: str, n: int) -> None:
        self.kind, self.n = kind, n

    def resolve(self, trace: "Trace") -> Any:
        return trace.refs[self.kind][self.n - 1]


class EventCursor(Ref):
    """The seed's event_cursor k for run n; for ours the same position in its longer log."""

    def __init__(self, n: int, k: int) -> None:
        super().__init__("run", n)
        self.k = k

    def resolve(self, trace: "Trace") -> Any:
        if trace.kind == "seed":
            return self.k
        return ours_position(trace.full_events[super().resolve(trace)], self.k)


def RUN(n: int) -> Ref:
    return Ref("run", n)


def APPROVAL(n: int) -> Ref:
    return Ref("approval", n)


def REQUEST(n: int) -> Ref:
    return Ref("request", n)


def resolve(obj: Any, trace: "Trace") -> Any:
    if isinstance(obj, Ref):
        return obj.resolve(trace)
    if isinstance(obj, dict):
        return {k: resolve(v, trace) for k, v in obj.items()}
    if isinstance(obj, list):
        return [resolve(v, trace) for v in obj]
    return obj


class Record:
    def __init__(self, label: str, resp: Any, raw: bytes | None, compare_raw: bool, expect: dict | None):
        self.label, self.resp, self.raw = label, resp, raw
        self.compare_raw, self.expect = compare_raw, expect
        self.norm: Any = None
        self.raw_norm: str | None = None


class Trace:
    """One bridge's run of a scenario: its responses and the ids it made up."""

    def __init__(self, kind: str, bridge: Bridge, config: dict, view: str = "seed") -> None:
        self.kind, self.bridge, self.view = kind, bridge, view  # view: the oracle ours is compared with
        self.gateway_timeout_ms = (SEED_GATEWAY_TIMEOUT_MS if kind in ("seed", "studio")
                                   else int(config["approvals"]["timeout"] * 1000))
        self.refs: dict[str, list] = {"run": [], "approval": [], "request": []}
        self.records: list[Record] = []
        self.full_events: dict[str, list] = {}  # run_id -> the run's events, unfiltered
        self.raw_results: dict[str, bytes] = {}  # run_id -> get_result bytes
        self.torn_reads: list[str] = []  # steps that saw a finished run without its result

    def send(self, payload: bytes) -> tuple[Any, bytes]:
        raw = self.bridge.raw(payload)
        return (json.loads(raw) if raw else None), raw

    def request(self, obj: Any) -> tuple[Any, bytes]:
        return self.send((json.dumps(resolve(obj, self)) + "\n").encode())

    def record(self, label: str, resp: Any, raw: bytes | None = None, compare_raw: bool = False,
               expect: dict | None = None) -> None:
        self.records.append(Record(label, resp, raw, compare_raw, expect))

    def normalise(self) -> None:
        ids, raw_ids = IdMap(), IdMap()
        for rec in self.records:
            resp = copy.deepcopy(rec.resp)
            if self.view == "studio":
                extras = STUDIO_VIEW_EXTRAS | TIMING_EVENTS if self.kind == "ours" else TIMING_EVENTS
                resp = studio_view(filter_extras(resp, self.full_events, extras), self.kind)
            elif self.kind == "ours":
                resp = without_studio_fields(filter_extras(resp, self.full_events))
            resp = mask_traceback(mask_gateway_timeout(resp, self.gateway_timeout_ms))
            rec.norm = mask(resp, ids)
            if rec.compare_raw and rec.raw is not None:
                raw = rec.raw
                if self.kind == "ours" or self.view == "studio":  # the bytes as sent, minus the view's fields
                    view = (lambda o: studio_view(o, self.kind)) if self.view == "studio" else without_studio_fields
                    stripped = view(json.loads(raw))
                    if stripped != json.loads(raw):
                        raw = python_dumps(json.dumps(stripped, ensure_ascii=False).encode())
                rec.raw_norm = mask_raw(raw, raw_ids)

    def by_label(self) -> dict[str, Record]:
        return {r.label: r for r in self.records}


class Req:
    """One request; its answer is compared (raw bytes too unless raw=False)."""

    def __init__(self, label: str, req: Any, expect: dict | None = None, raw: bool = True) -> None:
        self.label, self.req, self.expect, self.raw = label, req, expect, raw

    def execute(self, t: Trace) -> None:
        resp, raw = t.request(self.req)
        t.record(self.label, resp, raw, self.raw, self.expect)


class Raw:
    """Bytes sent as they are (framing and parsing errors)."""

    def __init__(self, label: str, payload: bytes, expect: dict | None = None) -> None:
        self.label, self.payload, self.expect = label, payload, expect

    def execute(self, t: Trace) -> None:
        resp, raw = t.send(self.payload)
        t.record(self.label, resp, raw, True, self.expect)


class Start:
    """chat without wait: registers the next RUN(n)."""

    def __init__(self, label: str, req: dict, expect: dict | None = None) -> None:
        self.label, self.req, self.expect = label, req, expect

    def execute(self, t: Trace) -> None:
        resp, raw = t.request(self.req)
        t.record(self.label, resp, raw, True, self.expect)
        assert resp and resp.get("ok"), f"{t.kind}: {self.label}: {resp}"
        t.refs["run"].append(resp["run_id"])


class Finish:
    """Polls RUN(n) to completion like a client, records what it saw, then get_result."""

    # result/error of the poll that saw done are left out: the seed sets status
    # before result, error and ended_at, so that poll may carry result null
    # (a torn read, counted in Trace.torn_reads; the records below wait for
    # the run to settle).
    SUMMARY_KEYS = ("ok", "run_id", "session_id", "status", "cursor", "output", "done",
                    "event_cursor", "seen_text", "seen_events")

    def __init__(self, label: str, run: Ref, expect: dict | None = None) -> None:
        self.label, self.run, self.expect = label, run, expect

    def execute(self, t: Trace) -> None:
        run_id = self.run.resolve(t)
        out = t.bridge.wait_done(run_id, timeout=20)
        if out["result"] is None:
            t.torn_reads.append(self.label)
        settle(t, run_id)
        t.record(self.label + " (polled)", {k: out[k] for k in self.SUMMARY_KEYS},
                 expect={k: v for k, v in (self.expect or {}).items() if k in self.SUMMARY_KEYS})
        resp, raw = t.request(get_output(run_id, cursor=out["cursor"], event_cursor=out["event_cursor"]))
        t.record(self.label + " (final poll)", resp, raw, False, dict(self.expect or {}, delta="", events=[]))
        resp, raw = t.request({"action": "get_result", "run_id": run_id})
        t.record(self.label + " (get_result)", resp, raw, False, self.expect)
        t.full_events[run_id] = resp["events"]
        t.raw_results[run_id] = raw


def Run(label: str, req: dict, n: int, expect: dict | None = None) -> list:
    """chat + poll to completion; n is the RUN number this chat gets."""
    return [Start(label + " (chat)", req, {"ok": True, "status": "running"}),
            Finish(label, RUN(n), expect)]


def settle(t: Trace, run_id: str) -> tuple[dict, bytes]:
    """Waits until a finished run has its ended_at (the seed sets it last)."""
    deadline = time.monotonic() + 10
    while True:
        resp, raw = t.request({"action": "get_result", "run_id": run_id})
        if resp["ended_at"] is not None or time.monotonic() > deadline:
            return resp, raw
        time.sleep(0.01)


class ChatWait:
    """chat with wait:true; registers the next RUN(n)."""

    def __init__(self, label: str, req: dict, expect: dict | None = None) -> None:
        self.label, self.req, self.expect = label, dict(req, wait=True, timeout=20), expect

    def execute(self, t: Trace) -> None:
        resp, raw = t.request(self.req)
        assert resp and resp.get("ok"), f"{t.kind}: {self.label}: {resp}"
        if resp["status"] != "running" and resp["ended_at"] is None:
            t.torn_reads.append(self.label)
            resp, raw = settle(t, resp["run_id"])
        t.record(self.label, resp, raw, False, self.expect)
        t.refs["run"].append(resp["run_id"])
        t.full_events[resp["run_id"]] = resp["events"]


class AnswerApproval:
    """Waits for approval.requested in RUN(n) and answers it; registers APPROVAL(k)."""

    def __init__(self, label: str, run: Ref, choice: Any, expect: dict | None = None) -> None:
        self.label, self.run, self.choice, self.expect = label, run, choice, expect

    def execute(self, t: Trace) -> None:
        ev = t.bridge.wait_event(self.run.resolve(t), "approval.requested", timeout=10)
        t.refs["approval"].append(ev["approval_id"])
        resp, raw = t.request({"action": "approval_respond", "approval_id": ev["approval_id"],
                               "choice": self.choice})
        t.record(self.label, resp, raw, True, self.expect)


class AnswerCompression:
    """Waits for bridge.compression.requested in RUN(n) and answers it; registers REQUEST(k)."""

    def __init__(self, label: str, run: Ref, expect: dict | None = None, **fields: Any) -> None:
        self.label, self.run, self.fields, self.expect = label, run, fields, expect

    def execute(self, t: Trace) -> None:
        ev = t.bridge.wait_event(self.run.resolve(t), "bridge.compression.requested", timeout=10)
        t.refs["request"].append(ev["request_id"])
        resp, raw = t.request({"action": "compression_respond", "request_id": ev["request_id"],
                               **self.fields})
        t.record(self.label, resp, raw, True, self.expect)


class AnswerClarify:
    """Waits for clarify.requested in RUN(n) and answers it."""

    def __init__(self, label: str, run: Ref, response: Any, expect: dict | None = None) -> None:
        self.label, self.run, self.response, self.expect = label, run, response, expect

    def execute(self, t: Trace) -> None:
        ev = t.bridge.wait_event(self.run.resolve(t), "clarify.requested", timeout=10)
        resp, raw = t.request({"action": "clarify_respond", "clarify_id": ev["clarify_id"],
                               "response": self.response})
        t.record(self.label, resp, raw, True, self.expect)


class WaitEvent:
    """Polls RUN(n) until it has logged an event of that name (nothing recorded)."""

    def __init__(self, run: Ref, name: str) -> None:
        self.run, self.name = run, name

    def execute(self, t: Trace) -> None:
        t.bridge.wait_event(self.run.resolve(t), self.name, timeout=10)


class Shutdown:
    """The shutdown action; then the process must exit and remove its ipc socket."""

    def __init__(self, label: str) -> None:
        self.label = label

    def execute(self, t: Trace) -> None:
        resp, raw = t.request({"action": "shutdown"})
        t.record(self.label, resp, raw, True, {"ok": True, "status": "shutting_down"})
        code = t.bridge.proc.wait(timeout=10)
        socket_left = Path(t.bridge.endpoint.removeprefix("ipc://")).exists()
        t.record(self.label + " (exit)", {"exit_code": code, "socket_left": socket_left},
                 expect={"exit_code": 0, "socket_left": False})


def flatten(steps: list) -> list:
    out = []
    for s in steps:
        out.extend(flatten(s) if isinstance(s, list) else [s])
    return out


def run_scenario(kind: str, steps: list, config: dict | None = None, view: str = "seed") -> Trace:
    config = config or DEFAULT_CONFIG
    with Bridge(kind=kind, config=config) as bridge:
        trace = Trace(kind, bridge, config, view)
        for step in flatten(steps):
            step.execute(trace)
    trace.normalise()
    return trace


def run_both(steps: list, config: dict | None = None) -> tuple[Trace, Trace]:
    return run_scenario("seed", steps, config), run_scenario("ours", steps, config)


def run_with_studio(steps: list, config: dict | None = None) -> tuple[Trace, Trace]:
    """Hermes Studio's own bridge and ours, each seen as compared with Studio's."""
    return (run_scenario("studio", steps, config, view="studio"),
            run_scenario("ours", steps, config, view="studio"))


@contextlib.contextmanager
def both_bridges(config: dict | None = None):
    with Bridge(kind="seed", config=config) as seed, Bridge(kind="ours", config=config) as ours:
        yield seed, ours


def chat(session_id: str, message: Any, **fields: Any) -> dict:
    return {"action": "chat", "session_id": session_id, "message": message, **fields}


def get_output(run: Any, **fields: Any) -> dict:
    return {"action": "get_output", "run_id": run, **fields}


def wait_idle(bridge: Bridge, session_id: str, timeout: float = 10.0) -> dict:
    """Waits (through `list`, which never carries agent text) until a session is idle."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sessions = {s["session_id"]: s for s in bridge.request({"action": "list"})["sessions"]}
        if session_id in sessions and not sessions[session_id]["running"]:
            return sessions[session_id]
        time.sleep(0.02)
    raise AssertionError(f"{bridge.kind}: session {session_id} never became idle")


TOOL_SCRIPT = "script:say a;tool terminal ls;say b"
SUMMARY = [{"role": "user", "content": "summary of the chat"}]
