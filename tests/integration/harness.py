"""Starts a bridge (ours or the seed) on a private socket with the fake
hermes-agent, and talks to it the way clients do: one JSON line per
connection. Stdlib only."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FAKE_AGENT = REPO / "tests" / "fake_agent"
PYTHON = "/usr/bin/python3"


def bridge_binary() -> Path:
    env = os.environ.get("HERMES_BRIDGE_BIN")
    path = Path(env) if env else REPO / "build" / "hermes-bridge"
    if not path.exists():
        raise unittest.SkipTest(f"hermes-bridge binary not built at {path}")
    return path


def seed_script() -> Path:
    env = os.environ.get("HERMES_BRIDGE_SEED")
    # ../shared next to the checkout, or next to a directory above it (a
    # worktree such as /work/wt/NAME shares /work/shared with /work/main).
    found = [p / "shared" / "seeds" / "hermes_bridge.py" for p in REPO.parents]
    path = Path(env) if env else next((p for p in found if p.exists()), found[0])
    if not path.exists():
        raise unittest.SkipTest(f"seed bridge not found at {path} (set HERMES_BRIDGE_SEED)")
    return path


def studio_script() -> Path:
    """Hermes Studio's own Python bridge (its hermes_bridge.py), from a snapshot
    that scripts/studio-oracle extracts from a fetched mirror."""
    env = os.environ.get("HERMES_STUDIO_BRIDGE")
    if not env:
        raise unittest.SkipTest("Hermes Studio's bridge is not available: set HERMES_STUDIO_BRIDGE to its "
                                "hermes_bridge.py (scripts/studio-oracle prints the path)")
    path = Path(env)
    if not path.exists():
        raise unittest.SkipTest(f"HERMES_STUDIO_BRIDGE names {path}, which does not exist")
    return path


DEFAULT_CONFIG = {"model": {"default": "fake-model", "provider": "fake"}, "approvals": {"timeout": 3}}


class Bridge:
    """One bridge process in its own temporary HERMES_HOME."""

    def __init__(self, kind: str = "ours", transport: str = "ipc", config: dict | None = None,
                 args: list[str] | None = None, env: dict[str, str] | None = None) -> None:
        self.kind = kind
        self.dir = Path(tempfile.mkdtemp(prefix=f"hb-{kind}-"))
        self.home = self.dir / "home"
        self.home.mkdir()
        (self.home / "config.yaml").write_text(json.dumps(config or DEFAULT_CONFIG))
        self.agent_log = self.dir / "fake-agent.log"
        if transport == "ipc":
            self.endpoint = f"ipc://{self.dir}/bridge.sock"
        else:
            self.endpoint = f"tcp://127.0.0.1:{free_port()}"
        self.args = args or []
        self.env = env or {}
        self.proc: subprocess.Popen | None = None
        self.ready_line = ""

    # -- process ------------------------------------------------------------
    def command(self) -> list[str]:
        common = ["--endpoint", self.endpoint, "--agent-root", str(FAKE_AGENT),
                  "--hermes-home", str(self.home)]
        if self.kind == "seed":
            return [PYTHON, str(seed_script())] + common
        if self.kind == "studio":
            return [PYTHON, str(studio_script())] + common
        host = os.environ.get("HB_TEST_AGENT_HOST")  # run a suite with another --agent-host
        extra = ["--agent-host", host] if host and "--agent-host" not in self.args else []
        return [str(bridge_binary())] + common + extra + self.args

    def start(self, timeout: float = 30.0) -> "Bridge":
        env = dict(os.environ)
        env.pop("HERMES_AGENT_ROOT", None)
        env.update({"PYTHONDONTWRITEBYTECODE": "1"})
        if not os.environ.get("HB_NO_AGENT_LOG"):
            env["FAKE_AGENT_LOG"] = str(self.agent_log)
        if self.kind == "ours":
            # Its own runtime directory: the workers of a daemon a test kills
            # wait there for the next daemon of the same test, never another's.
            runtime = self.dir / "run"
            runtime.mkdir(mode=0o700, exist_ok=True)
            env["XDG_RUNTIME_DIR"] = str(runtime)
        env.update(self.env)
        self.stderr_path = self.dir / f"stderr-{id(self)}.log"  # a successor in the same dir has its own
        with open(self.stderr_path, "wb") as stderr:
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=stderr, env=env, cwd=self.dir)
        deadline = time.monotonic() + timeout
        line = self.proc.stdout.readline().decode()
        if not line:
            self.proc.wait(10)  # gone for good: stop() must not talk to its endpoint
            raise AssertionError(f"{self.kind} bridge exited before ready: {self.stderr()}")
        self.ready_line = line
        while time.monotonic() < deadline:
            try:
                self.request({"action": "ping"}, timeout=2)
                return self
            except OSError:
                time.sleep(0.02)
        raise AssertionError(f"{self.kind} bridge never answered ping: {self.stderr()}")

    def stderr(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""

    def stdout_rest(self) -> str:
        """Whatever the process wrote to stdout after the ready line (call after it exited)."""
        return self.proc.stdout.read().decode(errors="replace")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            try:
                self.request({"action": "shutdown"}, timeout=2)
            except OSError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc and self.proc.stdout:
            self.proc.stdout.close()
        self.kill_orphaned_workers()
        shutil.rmtree(self.dir, ignore_errors=True)

    def kill_orphaned_workers(self) -> None:
        """Workers still waiting for a daemon (this one was killed and not
        started again) would outlive the test by their orphan timeout."""
        for record in (self.dir / "run").glob("hermes-bridge/workers/worker-*.json"):
            try:
                os.kill(int(json.loads(record.read_text())["pid"]), signal.SIGKILL)
            except (OSError, ValueError, KeyError):
                pass

    def signal(self, sig: int = signal.SIGTERM) -> None:
        self.proc.send_signal(sig)

    def __enter__(self) -> "Bridge":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- talking --------------------------------------------------------------
    def connect(self, timeout: float = 30.0) -> socket.socket:
        if self.endpoint.startswith("ipc://"):
            path = self.endpoint[len("ipc://"):]
            deadline = time.monotonic() + timeout
            delay = 0.001
            while True:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(timeout)
                try:
                    sock.connect(path)
                    break
                except BlockingIOError:
                    # A timeout makes the socket non-blocking, so a full listen
                    # backlog (many clients at once against a slow accept loop)
                    # shows as EAGAIN rather than a wait: retry until the deadline.
                    sock.close()
                    if time.monotonic() + delay > deadline:
                        raise
                    time.sleep(delay)
                    delay = min(delay * 2, 0.05)
                except OSError:
                    sock.close()
                    raise
        else:
            host, port = self.endpoint[len("tcp://"):].rsplit(":", 1)
            sock = socket.create_connection((host, int(port)), timeout=timeout)
            sock.settimeout(timeout)
        return sock

    def raw(self, payload: bytes, timeout: float = 30.0) -> bytes:
        """Sends bytes, returns everything the bridge wrote before closing."""
        with self.connect(timeout) as sock:
            sock.sendall(payload)
            chunks = []
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                if chunk.endswith(b"\n"):
                    break
            return b"".join(chunks)

    def raw_json(self, payload: bytes, timeout: float = 30.0) -> dict:
        return json.loads(self.raw(payload, timeout))

    def request(self, obj: Any, timeout: float = 30.0) -> dict:
        reply = self.raw((json.dumps(obj) + "\n").encode(), timeout)
        if not reply:
            raise ConnectionError("bridge closed the connection without an answer")
        return json.loads(reply)

    # -- conveniences -----------------------------------------------------------
    def chat(self, session_id: str, message: Any, **fields: Any) -> dict:
        return self.request({"action": "chat", "session_id": session_id, "message": message, **fields})

    def wait_done(self, run_id: str, timeout: float = 30.0) -> dict:
        """Polls get_output like Hermes Studio (but faster) until done; returns
        the last answer plus the concatenated deltas and events seen."""
        cursor = event_cursor = 0
        text, events = "", []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self.request({"action": "get_output", "run_id": run_id, "cursor": cursor,
                                "event_cursor": event_cursor})
            assert out["ok"], out
            text += out["delta"]
            events += out["events"]
            cursor, event_cursor = out["cursor"], out["event_cursor"]
            if out["done"]:
                out["seen_text"], out["seen_events"] = text, events
                return out
            time.sleep(0.02)
        raise AssertionError(f"run {run_id} not done after {timeout}s")

    def wait_event(self, run_id: str, name: str, timeout: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self.request({"action": "get_output", "run_id": run_id})
            for ev in out["events"]:
                if ev.get("event") == name:
                    return ev
            if out["done"]:
                raise AssertionError(f"run ended without {name}: {out['events']}")
            time.sleep(0.02)
        raise AssertionError(f"no {name} within {timeout}s")

    def half_close(self, payload: bytes, timeout: float = 30.0) -> bytes:
        """Sends bytes, then EOF (shutdown(SHUT_WR)); returns everything the
        bridge wrote before closing."""
        with self.connect(timeout) as sock:
            sock.sendall(payload)
            sock.shutdown(socket.SHUT_WR)
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
            return b"".join(chunks)

    # -- the process, seen from outside -------------------------------------------
    def status_kb(self, field: str) -> int:
        """A /proc/<pid>/status field in kB, e.g. VmRSS or VmHWM."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
        raise AssertionError(f"no {field} in /proc/{self.proc.pid}/status")

    def rss_mb(self) -> float:
        return self.status_kb("VmRSS") / 1024

    def open_fds(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def log_has(self, text: str, timeout: float = 30.0) -> bool:
        """Waits until the daemon's stderr contains `text`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.stderr():
                return True
            time.sleep(0.05)
        return text in self.stderr()

    def agent_log_entries(self) -> list[dict]:
        try:
            return [json.loads(line) for line in self.agent_log.read_text().splitlines() if line.strip()]
        except OSError:
            return []


def start_refused(test, b: "Bridge") -> str:
    """Starts `b`, which must refuse to start; returns what it said."""
    with test.assertRaises(AssertionError) as refused:
        b.start()
    b.stop()
    return str(refused.exception)


def wait_for(predicate, timeout: float = 10.0, what: str = "condition"):
    """predicate()'s first truthy value, polled; fails after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def sanitized_build() -> bool:
    """True for an AddressSanitizer build (HB_SANITIZE=1, or a binary built
    with -DHB_SANITIZE=ON): its allocator keeps freed memory in quarantine,
    so memory measurements mean nothing there, and everything runs slower."""
    if os.environ.get("HB_SANITIZE", "") not in ("", "0"):
        return True
    try:
        cache = (bridge_binary().parent / "CMakeCache.txt").read_text(errors="replace")
    except OSError:
        return False
    return "HB_SANITIZE:BOOL=ON" in cache


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def events_named(events: list[dict], name: str) -> list[dict]:
    return [e for e in events if e.get("event") == name]


# -- what a process tree does while nobody talks to it --------------------------------

def process_tree(pid: int) -> list[int]:
    """`pid` and its descendants (the daemon's worker processes)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            # The command may contain spaces and parentheses: the ppid follows the last ')'.
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo += children.get(p, [])
    return tree


def thread_activity(pid: int) -> dict[str, tuple[int, int]]:
    """Per thread of `pid` and its descendants: (CPU time in ns, times it was
    put on a CPU), keyed "pid/tid name". Both come from
    /proc/<pid>/task/<tid>/schedstat (on-CPU time, wait time, timeslices
    run); a thread that sleeps until something wakes it adds one timeslice
    per wake-up, so the sum over a quiet interval counts wake-ups."""
    out: dict[str, tuple[int, int]] = {}
    for p in process_tree(pid):
        try:
            tids = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for tid in tids:
            base = f"/proc/{p}/task/{tid}"
            try:
                on_cpu, _, slices = Path(f"{base}/schedstat").read_text().split()[:3]
                name = Path(f"{base}/comm").read_text().strip()
            except (OSError, ValueError):
                continue  # the thread ended meanwhile
            out[f"{p}/{tid} {name}"] = (int(on_cpu), int(slices))
    return out


def idle_activity(pid: int, seconds: float) -> dict[str, Any]:
    """What the process tree of `pid` does over `seconds` while left alone:
    CPU in % of one core, wake-ups per second, and the threads that woke."""
    before = thread_activity(pid)
    started = time.monotonic()
    time.sleep(seconds)
    after = thread_activity(pid)
    wall = time.monotonic() - started
    cpu_ns = wakeups = 0
    busiest: dict[str, int] = {}
    for key, (ns, slices) in after.items():
        ns0, slices0 = before.get(key, (0, 0))  # a thread started meanwhile counts from zero
        cpu_ns += ns - ns0
        wakeups += slices - slices0
        if slices > slices0:
            busiest[key] = slices - slices0
    return {"seconds": wall, "cpu_pct": 100.0 * cpu_ns / (wall * 1e9), "wakeups_per_s": wakeups / wall,
            "processes": len(process_tree(pid)), "threads": len(after),
            "woken": dict(sorted(busiest.items(), key=lambda kv: -kv[1]))}
