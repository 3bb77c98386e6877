"""SessionDB: a small subset of the real state.db, on stdlib sqlite3.

One connection per instance shared across threads (check_same_thread=False)
with a lock around every statement, WAL when the filesystem allows it, and
foreign keys on, so appending to a session that was never created fails
like it does for the real agent.
"""

import json
import os
import re
import sqlite3
import threading
import time
from pathlib import Path

from hermes_constants import get_hermes_home

_JSON_PREFIX = "\x00json:"  # how the real DB marks list/dict content

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, source TEXT, model TEXT, system_prompt TEXT,
    parent_session_id TEXT, started_at REAL, ended_at REAL, end_reason TEXT,
    message_count INTEGER DEFAULT 0, tool_call_count INTEGER DEFAULT 0, title TEXT
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT,
    tool_name TEXT, timestamp REAL, finish_reason TEXT, reasoning TEXT,
    active INTEGER DEFAULT 1
);
CREATE TABLE IF NOT EXISTS session_turn_leases (
    conversation_id TEXT PRIMARY KEY, holder TEXT NOT NULL,
    acquired_at REAL NOT NULL, expires_at REAL NOT NULL
);
"""


def _encode_content(content):
    if isinstance(content, (list, dict)):
        return _JSON_PREFIX + json.dumps(content)
    return content


def _decode_content(content):
    if isinstance(content, str) and content.startswith(_JSON_PREFIX):
        return json.loads(content[len(_JSON_PREFIX):])
    return content


def _holder_is_dead(holder):
    """Like hermes-agent 0.20: only a `pid=N` holder whose process is gone
    (never this process's own) may be reclaimed before its lease expires."""
    match = re.search(r"pid=(\d+)", holder or "")
    if not match or int(match.group(1)) in (0, os.getpid()):
        return False
    try:
        os.kill(int(match.group(1)), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


class SessionDB:
    def __init__(self, db_path=None, read_only=False):
        self.db_path = Path(db_path) if db_path else get_hermes_home() / "state.db"
        self.read_only = read_only
        self._lock = threading.Lock()
        if read_only:
            uri = "file:" + str(self.db_path) + "?mode=ro"
            self._conn = sqlite3.connect(uri, uri=True, check_same_thread=False,
                                         timeout=1.0, isolation_level=None)
        else:
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.db_path), check_same_thread=False,
                                         timeout=1.0, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA foreign_keys=ON")
        if not read_only:
            try:
                self._conn.execute("PRAGMA journal_mode=WAL")
            except sqlite3.DatabaseError:
                pass  # e.g. filesystems without shared memory: keep the default journal
            self._conn.executescript(_SCHEMA)

    def _write(self, fn):
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(self._conn)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            return result

    def _read(self, sql, params=()):
        with self._lock:
            return [dict(row) for row in self._conn.execute(sql, params).fetchall()]

    def create_session(self, session_id, source, model=None, system_prompt=None,
                       parent_session_id=None, **kw):
        """Upsert: a new row, or fill only the NULL columns of an existing one."""
        def op(conn):
            conn.execute(
                "INSERT OR IGNORE INTO sessions (id, source, started_at) VALUES (?, ?, ?)",
                (session_id, source, time.time()))
            conn.execute(
                "UPDATE sessions SET source = COALESCE(source, ?), model = COALESCE(model, ?),"
                " system_prompt = COALESCE(system_prompt, ?),"
                " parent_session_id = COALESCE(parent_session_id, ?) WHERE id = ?",
                (source, model, system_prompt, parent_session_id, session_id))
            return session_id
        return self._write(op)

    def append_message(self, session_id, role, content=None, tool_name=None, tool_calls=None,
                       tool_call_id=None, finish_reason=None, reasoning=None, timestamp=None,
                       **kw) -> int:
        def op(conn):
            cur = conn.execute(
                "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls,"
                " tool_name, timestamp, finish_reason, reasoning) VALUES (?,?,?,?,?,?,?,?,?)",
                (session_id, role, _encode_content(content), tool_call_id,
                 json.dumps(tool_calls) if tool_calls is not None else None,
                 tool_name, timestamp or time.time(), finish_reason,
                 reasoning if isinstance(reasoning, str) else None))
            conn.execute(
                "UPDATE sessions SET message_count = message_count + 1,"
                " tool_call_count = tool_call_count + ? WHERE id = ?",
                (len(tool_calls) if isinstance(tool_calls, list) else 0, session_id))
            return cur.lastrowid
        return self._write(op)

    def get_session(self, session_id):
        rows = self._read("SELECT * FROM sessions WHERE id = ?", (session_id,))
        return rows[0] if rows else None

    def get_session_title(self, session_id):
        rows = self._read("SELECT title FROM sessions WHERE id = ?", (session_id,))
        return rows[0]["title"] if rows else None

    def set_session_title(self, session_id, title) -> bool:
        def op(conn):
            return conn.execute("UPDATE sessions SET title = ? WHERE id = ?",
                                (title, session_id)).rowcount > 0
        return self._write(op)

    def end_session(self, session_id, end_reason) -> None:
        # First reason wins, like the real one.
        self._write(lambda conn: conn.execute(
            "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL",
            (time.time(), end_reason, session_id)))

    # -- session turn leases (hermes-agent 0.20+) ------------------------------

    def _lease_key(self, conn, session_id):
        """Compression children share their lineage root's lease."""
        current, seen = session_id, {session_id}
        while True:
            row = conn.execute("SELECT parent_session_id, end_reason FROM sessions WHERE id = ?",
                               (current,)).fetchone()
            parent = row["parent_session_id"] if row else None
            if not parent or parent in seen:
                return current
            up = conn.execute("SELECT end_reason FROM sessions WHERE id = ?", (parent,)).fetchone()
            if not up or up["end_reason"] != "compression":
                return current
            seen.add(parent)
            current = parent

    def try_acquire_session_turn_lease(self, session_id, holder, *, ttl_seconds=300.0, patience_s=None):
        if not session_id or not holder:
            return False
        now = time.time()

        def op(conn):
            key = self._lease_key(conn, session_id)
            row = conn.execute("SELECT holder, expires_at FROM session_turn_leases"
                               " WHERE conversation_id = ?", (key,)).fetchone()
            if row is not None and (row["expires_at"] <= now or _holder_is_dead(row["holder"])):
                conn.execute("DELETE FROM session_turn_leases WHERE conversation_id = ? AND holder = ?",
                             (key, row["holder"]))
            conn.execute("INSERT OR IGNORE INTO session_turn_leases VALUES (?, ?, ?, ?)",
                         (key, holder, now, now + max(0.1, float(ttl_seconds))))
            owner = conn.execute("SELECT holder FROM session_turn_leases WHERE conversation_id = ?",
                                 (key,)).fetchone()
            return owner is not None and owner["holder"] == holder
        return bool(self._write(op))

    def acquire_session_turn_lease(self, session_id, holder, *, ttl_seconds=300.0, wait_seconds=1800.0,
                                   poll_interval_seconds=1.0, on_wait=None,
                                   wait_notice_interval_seconds=15.0, should_abort=None,
                                   acquire_patience_s=0.5):
        """Polls without holding a lock; on_wait(elapsed) at the first miss and
        then every wait_notice_interval_seconds; should_abort() ends the wait."""
        deadline = time.monotonic() + max(0.0, float(wait_seconds))
        started = last_notice = None
        while True:
            if should_abort is not None and should_abort():
                return False
            if self.try_acquire_session_turn_lease(session_id, holder, ttl_seconds=ttl_seconds):
                return True
            now = time.monotonic()
            if now >= deadline:
                return False
            started = now if started is None else started
            if on_wait is not None and (last_notice is None or now - last_notice >= wait_notice_interval_seconds):
                try:
                    on_wait(max(0.0, now - started))
                except Exception:
                    pass
                last_notice = now
            time.sleep(min(max(0.01, float(poll_interval_seconds)), deadline - now))

    def release_session_turn_lease(self, session_id, holder):
        if not session_id or not holder:
            return

        def op(conn):
            conn.execute("DELETE FROM session_turn_leases WHERE conversation_id = ? AND holder = ?",
                         (self._lease_key(conn, session_id), holder))
        self._write(op)

    def get_messages(self, session_id, include_inactive=False, **kw) -> list:
        sql = "SELECT * FROM messages WHERE session_id = ?"
        if not include_inactive:
            sql += " AND active = 1"
        rows = self._read(sql + " ORDER BY id", (session_id,))
        for row in rows:
            row["content"] = _decode_content(row["content"])
            if row["tool_calls"] is not None:
                row["tool_calls"] = json.loads(row["tool_calls"])
        return rows

    def message_count(self, session_id=None) -> int:
        """As hermes-agent 0.18.2's: every row, rewound (inactive) ones included."""
        if session_id:
            return self._read("SELECT COUNT(*) AS n FROM messages WHERE session_id = ?", (session_id,))[0]["n"]
        return self._read("SELECT COUNT(*) AS n FROM messages")[0]["n"]

    def get_messages_as_conversation(self, session_id, **kw) -> list:
        """OpenAI-style dicts, suitable as conversation_history."""
        out = []
        for row in self.get_messages(session_id):
            msg = {"role": row["role"], "content": row["content"]}
            for key in ("tool_calls", "tool_call_id", "tool_name"):
                if row[key] is not None:
                    msg[key] = row[key]
            out.append(msg)
        return out

    def close(self) -> None:
        with self._lock:
            self._conn.close()
