"""Unit tests for the embedded Python adapter modules (bridge/python), run
with Debian's python3 directly: JSON sanitising, .env parsing, profile
environment isolation (the seed's _profile_env semantics) and its gate."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
import time
import types
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bridge" / "python"))

import bridge_json  # noqa: E402
import bridge_agent_calls  # noqa: E402
import bridge_profiles  # noqa: E402


class JsonTests(unittest.TestCase):
    def test_plain_makes_anything_json_safe(self):
        value = {"nan": float("nan"), "inf": float("-inf"), "text": "a\ud800b", 3: (1, 2),
                 "obj": Path("x")}
        out = bridge_json.plain(value)
        self.assertIsNone(out["nan"])
        self.assertIsNone(out["inf"])
        self.assertEqual(out["text"], "a\ufffdb")
        self.assertEqual(out["3"], [1, 2])
        self.assertIsInstance(out["obj"], str)
        self.assertEqual(bridge_json.to_json({"a": [1.5, None]}), '{"a": [1.5, null]}')

    def test_clean_text_keeps_valid_text(self):
        self.assertEqual(bridge_json.clean_text("héllo 😀"), "héllo 😀")

    def test_dumps_pieces_join_to_dumps_with_long_texts_apart_and_shared_pieces_reused(self):
        long = "é\"x\n" * (bridge_json.LONG_TEXT // 2)
        messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": long,
                                                        "tool_calls": [{"args": {"text": long}}]}]
        values = [{}, [], "short", long, 1.5, None, [long, long, [{"a": long}]], {"a": {"b": [1, {"c": "d"}]}},
                  {"final_response": long, "messages": messages, "api_calls": 2, "flags": [True, None]}]
        for value in values:
            pieces = bridge_json.dumps_pieces(value)
            self.assertEqual(b"".join(pieces).decode(), bridge_json.dumps(value))
        # A long text is a piece of its own; what has none is one piece.
        self.assertIn(bridge_json.dumps(long).encode(), bridge_json.dumps_pieces({"x": [long]}))
        self.assertEqual(len(bridge_json.dumps_pieces({"a": {"b": [1, "c"]}})), 1)
        # Nothing but the caller holds them (a reference cycle would keep a
        # big run's pieces until the next garbage collection).
        held = bridge_json.dumps_pieces({"x": [long]})
        self.assertEqual(sys.getrefcount(held), 2)
        # The history's pieces are the result's own objects, not copies.
        result = {"final_response": long, "messages": messages, "n": 1}
        history = bridge_json.dumps_pieces(messages)
        pieces = bridge_json.dumps_pieces(result, {id(messages): history})
        self.assertEqual(b"".join(pieces).decode(), bridge_json.dumps(result))
        self.assertTrue(all(any(p is h for p in pieces) for h in history))

        # A shared value is not walked again (a long session's history was,
        # once more per turn, for nothing).
        class Untouchable(list):
            def __iter__(self):
                raise AssertionError("walked into a value whose pieces were given")
        shared = Untouchable()
        pieces = bridge_json.dumps_pieces({"messages": shared, "n": 2}, {id(shared): [b"[1]"]})
        self.assertEqual(b"".join(pieces), b'{"messages": [1], "n": 2}')


class DotenvTests(unittest.TestCase):
    def test_parsing_rules(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / ".env"
            path.write_text("# comment\nexport A=1\nB = ' two '\nC=\"3\"\n1BAD=x\nBAD-KEY=y\nnoequals\nD=\n")
            self.assertEqual(bridge_profiles.read_dotenv(path), {"A": "1", "B": " two ", "C": "3", "D": ""})
            self.assertEqual(bridge_profiles.read_dotenv(Path(tmp) / "missing"), {})


class ProfileEnvTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        base = Path(self.tmp.name)
        (base / "config.yaml").write_text("{}")
        (base / ".env").write_text("BASE_ONLY_TOKEN=base\nSHARED=from-base\n")
        work = base / "profiles" / "work"
        work.mkdir(parents=True)
        (work / "config.yaml").write_text("{}")
        (work / ".env").write_text("WORK_KEY=w\nSHARED=from-work\n")
        other = base / "profiles" / "other"
        other.mkdir()
        (other / ".env").write_text("OPENAI_API_KEY=other-secret\n")
        self.base = base
        self.saved = dict(os.environ)
        os.environ["HERMES_AGENT_BRIDGE_BASE_HOME"] = str(base)
        os.environ["HERMES_HOME"] = str(base)
        os.environ["OPENAI_API_KEY"] = "inherited"
        os.environ.pop("HERMES_EXEC_ASK", None)

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.saved)
        self.tmp.cleanup()

    def test_named_profile_sees_only_its_own_env(self):
        gate = bridge_profiles.ProfileGate()
        with gate.hold("work"):
            self.assertEqual(os.environ["HERMES_HOME"], str(self.base / "profiles" / "work"))
            self.assertEqual(os.environ["WORK_KEY"], "w")
            self.assertEqual(os.environ["SHARED"], "from-work")
            self.assertNotIn("BASE_ONLY_TOKEN", os.environ)
            self.assertNotIn("OPENAI_API_KEY", os.environ)  # seen in another profile's .env
        self.assertEqual(os.environ["HERMES_HOME"], str(self.base))
        self.assertEqual(os.environ["OPENAI_API_KEY"], "inherited")
        self.assertNotIn("WORK_KEY", os.environ)
        self.assertNotIn("SHARED", os.environ)

    def test_default_profile_keeps_inherited_env_and_overlays_base(self):
        gate = bridge_profiles.ProfileGate()
        with gate.hold("default"):
            self.assertEqual(os.environ["OPENAI_API_KEY"], "inherited")
            self.assertEqual(os.environ["BASE_ONLY_TOKEN"], "base")
            self.assertEqual(os.environ["SHARED"], "from-base")
        self.assertNotIn("BASE_ONLY_TOKEN", os.environ)

    def test_a_profile_without_a_directory_is_refused_not_run_on_the_base_home(self):
        gate = bridge_profiles.ProfileGate()
        with self.assertRaises(KeyError) as caught:
            with gate.hold("ghost"):
                self.fail("entered a profile that does not exist")
        self.assertIn("unknown profile: ghost", str(caught.exception))
        self.assertEqual(os.environ["HERMES_HOME"], str(self.base))
        self.assertFalse((self.base / "profiles" / "ghost").exists())
        with gate.hold("work"):  # the refusal left the gate as it was
            self.assertEqual(os.environ["WORK_KEY"], "w")

    def test_a_profile_that_is_a_path_or_leads_outside_is_a_value_error(self):
        outside = self.base.parent / (self.base.name + "-outside")
        outside.mkdir()
        self.addCleanup(shutil.rmtree, outside, True)
        (outside / "config.yaml").write_text("{}")
        (outside / ".env").write_text("STOLEN=1\n")
        (self.base / "profiles" / "link").symlink_to(outside, target_is_directory=True)
        for profile in (str(outside), "/tmp/x", "../..", "a/b", "..", ".", ".env", "-x", "link",
                        "../" + outside.name):
            with self.subTest(profile=profile):
                with self.assertRaises(ValueError):
                    bridge_profiles._profile_home(profile)
                with self.assertRaises(ValueError):
                    with bridge_profiles.ProfileGate().hold(profile):
                        self.fail("entered")
                self.assertNotIn("STOLEN", os.environ)
        self.assertEqual(sorted(p.name for p in outside.iterdir()), [".env", "config.yaml"])

    def test_profile_homes(self):
        profiles = self.base / "profiles"
        self.assertEqual(bridge_profiles._profile_home("default"), self.base)
        self.assertEqual(bridge_profiles._profile_home(""), self.base)
        self.assertEqual(bridge_profiles._profile_home("work"), profiles / "work")
        (profiles / "alias").symlink_to(profiles / "work", target_is_directory=True)
        self.assertEqual(bridge_profiles._profile_home("alias"), profiles / "work")  # inside: allowed
        (profiles / "afile").write_text("")
        with self.assertRaises(KeyError):
            bridge_profiles._profile_home("afile")

    def test_exec_ask_is_reference_counted(self):
        gate = bridge_profiles.ProfileGate()
        with gate.hold("default", exec_ask=True):
            with gate.hold("default", exec_ask=True):
                self.assertEqual(os.environ["HERMES_EXEC_ASK"], "1")
            self.assertEqual(os.environ["HERMES_EXEC_ASK"], "1")
        self.assertNotIn("HERMES_EXEC_ASK", os.environ)

    def test_same_profile_shares_and_other_profile_waits(self):
        gate = bridge_profiles.ProfileGate()
        order: list[str] = []
        entered = threading.Event()

        def work_run():
            with gate.hold("work"):
                order.append("work-in")
                entered.set()
                time.sleep(0.2)
                order.append("work-out")

        def other_run():
            entered.wait()
            with gate.hold("default"):
                order.append("default-in")
                self.assertEqual(os.environ.get("SHARED"), "from-base")

        def second_work_run():
            entered.wait()
            with gate.hold("work"):
                order.append("work2-in")

        threads = [threading.Thread(target=f) for f in (work_run, other_run, second_work_run)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(5)
        self.assertLess(order.index("work2-in"), order.index("work-out"))
        self.assertGreater(order.index("default-in"), order.index("work-out"))


class KwargsTests(unittest.TestCase):
    def test_only_accepted_kwargs_pass(self):
        def narrow(a, b=1):
            return a

        def wide(a, **kw):
            return a

        self.assertEqual(bridge_agent_calls.accepted_kwargs(narrow, {"a": 1, "b": 2, "c": 3}), {"a": 1, "b": 2})
        self.assertEqual(bridge_agent_calls.accepted_kwargs(wide, {"a": 1, "c": 3}), {"a": 1, "c": 3})


class WorkspaceTests(unittest.TestCase):
    """The terminal tool's per-task cwd, on the fake agent's terminal tool."""

    def setUp(self):
        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "fake_agent"))
        self.addCleanup(sys.path.pop, 0)
        import bridge_workspace
        from tools import terminal_tool
        self.ops, self.tool = bridge_workspace, terminal_tool

    def bind(self, session, workspace):
        with self.ops.bound_workspace(session, workspace):
            pass

    def test_a_session_forgets_only_its_own_workspace(self):
        old, new = types.SimpleNamespace(session_id="s"), types.SimpleNamespace(session_id="s")
        self.bind(old, "/tmp/a")
        self.assertEqual(self.tool.terminal_cwd("s"), "/tmp/a")  # it outlives the turn
        self.ops.forget_workspace(old)
        self.assertNotEqual(self.tool.terminal_cwd("s"), "/tmp/a")
        # A worker forgets at the release frame, and the release's own forget
        # comes later on another thread, after a new session of the same id
        # took its workspace: that one stays.
        self.bind(old, "/tmp/a")
        self.ops.forget_workspace(old)
        self.bind(new, "/tmp/b")
        self.ops.forget_workspace(old)
        self.assertEqual(self.tool.terminal_cwd("s"), "/tmp/b")
        self.ops.forget_workspace(new)
        self.assertNotEqual(self.tool.terminal_cwd("s"), "/tmp/b")

    def test_a_context_estimate_binds_the_sessions_workspace(self):
        import bridge_ops
        from run_agent import AIAgent
        session = types.SimpleNamespace(session_id="ctx", profile="default", agent=AIAgent(model="m"))
        answer = json.loads(bridge_ops.session_call(session, "context_estimate",
                                                    '{"workspace": "/tmp/ctx-w", "messages": []}'))
        self.assertIn("token_count", answer)
        self.assertEqual(self.tool.terminal_cwd("ctx"), "/tmp/ctx-w")
        self.ops.forget_workspace(session)


if __name__ == "__main__":
    unittest.main()


class StateDbMirrorTests(unittest.TestCase):
    """A turn reaches hermes' state.db once: the agent's own rows, or the
    bridge's copy (bridge_adapter._mirror_turn) when the agent wrote none;
    on the fake agent's SessionDB."""

    def setUp(self):
        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "fake_agent"))
        self.addCleanup(sys.path.pop, 0)
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        import bridge_adapter
        import bridge_session
        from hermes_state import SessionDB
        self.adapter = bridge_adapter
        self.db = SessionDB(db_path=Path(tmp.name) / "state.db")
        self.addCleanup(self.db._conn.close)
        found = bridge_adapter.DBS.for_profile
        bridge_adapter.DBS.for_profile = lambda profile: self.db
        self.addCleanup(setattr, bridge_adapter.DBS, "for_profile", found)
        self.session = bridge_session.Session("s", "default")
        self.session.agent = types.SimpleNamespace(model="m")
        self.db.create_session(session_id="s", source="cli")

    def turn(self, agent_writes, earlier=0):
        before = self.adapter._state_db_count(self.session)
        new = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
        if agent_writes:
            for msg in new:
                self.db.append_message(session_id="s", role=msg["role"], content=msg["content"])
        history = [{"role": "user", "content": str(i)} for i in range(earlier)]
        self.adapter._mirror_turn(self.session, before, "hi", {"messages": history + new}, earlier)

    def roles(self):
        return [m["role"] for m in self.db.get_messages("s")]

    def test_a_turn_the_agent_wrote_is_not_written_again(self):
        self.turn(agent_writes=True)
        self.assertEqual(self.roles(), ["user", "assistant"])

    def test_a_turn_the_agent_did_not_write_is_written_once(self):
        self.turn(agent_writes=False)
        self.assertEqual(self.roles(), ["user", "assistant"])

    def test_a_turn_that_archived_rows_as_it_wrote_is_not_written_again(self):
        # Compaction inside a turn (hermes' archive_and_compact): older rows go
        # inactive while the turn's own are added, so the active count can stay
        # the same; every row counts.
        for i in range(3):
            self.db.append_message(session_id="s", role="user", content=f"old {i}")
        before = self.adapter._state_db_count(self.session)
        self.db._conn.execute("UPDATE messages SET active = 0 WHERE session_id = 's'")
        for role, text in (("user", "summary"), ("user", "hi"), ("assistant", "hello")):
            self.db.append_message(session_id="s", role=role, content=text)
        self.adapter._mirror_turn(self.session, before, "hi", {"messages": [
            {"role": "user", "content": "summary"}, {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"}]}, 1)
        self.assertEqual(self.roles(), ["user", "user", "assistant"])

    def stamping_agent(self):
        """An agent whose module names hermes' stamp, as run_agent 0.18+ does;
        the SessionDB's count is watched: such a turn must not need it."""
        module = types.ModuleType("stamping_run_agent")
        module._DB_PERSISTED_MARKER = "_db_persisted"
        sys.modules[module.__name__] = module
        self.addCleanup(sys.modules.pop, module.__name__)
        self.session.agent = type("AIAgent", (), {"__module__": module.__name__, "model": "m"})()
        self.counts = 0
        count = self.db.message_count

        def counted(*args):
            self.counts += 1
            return count(*args)
        self.db.message_count = counted

    def stamped_turn(self, agent_writes, history):
        before = self.adapter._rows_before(self.session)
        new = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
        if agent_writes:
            for msg in new:
                self.db.append_message(session_id="s", role=msg["role"], content=msg["content"])
                msg["_db_persisted"] = True
        self.adapter._mirror_turn(self.session, before, "hi", {"messages": history + new}, len(history))

    def test_an_agent_that_stamps_its_rows_is_told_by_the_stamps_not_by_counting(self):
        self.stamping_agent()
        self.stamped_turn(agent_writes=True, history=[])
        self.assertEqual(self.roles(), ["user", "assistant"])
        self.assertEqual(self.counts, 0)

    def test_a_stamping_agent_s_turn_that_compressed_its_history_is_not_written_again(self):
        self.stamping_agent()
        history = [{"role": "user", "content": str(i), "_db_persisted": True} for i in range(4)]
        before = self.adapter._rows_before(self.session)
        summary = {"role": "user", "content": "summary"}  # a compaction's fresh copy: no stamp
        new = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
        for msg in new:
            self.db.append_message(session_id="s", role=msg["role"], content=msg["content"])
            msg["_db_persisted"] = True
        self.adapter._mirror_turn(self.session, before, "hi", {"messages": [summary] + new}, len(history))
        self.assertEqual(self.roles(), ["user", "assistant"])
        self.assertEqual(self.counts, 0)

    def test_a_stamping_agent_s_turn_with_no_stamp_of_its_own_is_written_once(self):
        self.stamping_agent()
        # (the history's stamps are the turns before's)
        self.stamped_turn(agent_writes=False, history=[{"role": "user", "content": "0", "_db_persisted": True}])
        self.assertEqual(self.roles(), ["user", "assistant"])
        self.assertEqual(self.counts, 0)

    def test_a_session_db_without_message_count_is_counted_by_its_messages(self):
        self.db.message_count = None  # as an agent whose SessionDB has none
        self.assertEqual(self.adapter._state_db_count(self.session), 0)
        self.turn(agent_writes=True, earlier=0)
        self.assertEqual(self.adapter._state_db_count(self.session), 2)
        self.turn(agent_writes=False, earlier=2)
        self.assertEqual(self.roles(), ["user", "assistant", "user", "assistant"])


class TitleTests(unittest.TestCase):
    """hermes titles a session on a thread of its own after its first
    exchanges; once it has, the bridge starts no more title threads."""

    def setUp(self):
        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "fake_agent"))
        self.addCleanup(sys.path.pop, 0)
        import bridge_adapter
        import bridge_session
        from agent import title_generator
        self.adapter = bridge_adapter
        found = bridge_adapter.DBS.for_profile
        bridge_adapter.DBS.for_profile = lambda profile: object()
        self.addCleanup(setattr, bridge_adapter.DBS, "for_profile", found)
        self.asked = []

        def maybe_auto_title(db, session_id, user_message, final, messages, **kw):
            self.asked.append(user_message)
            kw["title_callback"]("A title")  # (the real one calls back from its thread)
        real = title_generator.maybe_auto_title
        title_generator.maybe_auto_title = maybe_auto_title
        self.addCleanup(setattr, title_generator, "maybe_auto_title", real)
        self.session = bridge_session.Session("s", "default")
        self.session.agent = types.SimpleNamespace(model="m")
        self.events = []
        self.sink = types.SimpleNamespace(event=self.events.append)

    def test_a_titled_session_starts_no_more_title_threads(self):
        result = {"final_response": "hello", "messages": []}
        self.adapter._title_after(self.session, self.sink, "first", result)
        self.assertEqual([json.loads(e)["title"] for e in self.events], ["A title"])
        self.adapter._title_after(self.session, self.sink, "second", result)
        self.assertEqual(len(self.asked), 1)
        fresh = type(self.session)("t", "default")
        fresh.agent = self.session.agent
        self.adapter._title_after(fresh, self.sink, "other", result)  # another session still asks
        self.assertEqual(len(self.asked), 2)

