"""One run_conversation: executes the scripted steps on the turn thread."""

import json
import os
import struct
import sys
import threading
import time

from fake_support import eventlog
from fake_support.script import message_text, parse, split_first, word_chunks
from fake_support.streaming import run_api_call
from tools import approval, terminal_tool

APPROVAL_CHOICES = ("once", "session", "always", "deny")
INTERRUPT_POLL_SECONDS = 0.02


class TurnInterrupted(Exception):
    """Unwinds the step loop when the interrupt flag is seen."""


def _truthy(value) -> bool:
    return str(value or "").strip().lower() in ("1", "true", "yes", "on")


class Turn:
    def __init__(self, agent, user_message, system_message, history, stream_callback,
                 persist_user_message, task_id=None):
        self.agent = agent
        self.task_id = task_id
        self.system_message = system_message
        self.history = list(history or [])
        self.stream_callback = stream_callback
        self.text = message_text(user_message)
        stored = persist_user_message if persist_user_message is not None else user_message
        # History is copied, never mutated, like the real agent.
        self.messages = [dict(m) if isinstance(m, dict) else m for m in self.history]
        self.messages.append({"role": "user", "content": stored})
        self.flush_base = len(self.history)  # rows before this are the caller's history
        self.final_response = ""
        self.api_calls = 0
        self.output_tokens = 0
        self.extra = {}
        self._steps = {
            "echo": lambda arg: self._api_call("echo: " + arg),
            "say": self._api_call,
            "stream": self._step_stream,
            "clock": self._step_clock,
            "flood": self._step_flood,
            "tool": self._step_tool,
            "slow-tool": self._step_slow_tool,
            "danger": lambda arg: self._step_approval(arg, "auto"),
            "approve-cli": lambda arg: self._step_approval(arg, "cli"),
            "approve-gw": lambda arg: self._step_approval(arg, "gw"),
            "compress": self._step_compress,
            "sleep": lambda arg: self._sleep(int(arg), check=True),
            "hang": lambda arg: self._sleep(int(arg), check=False),
            "raise": self._step_raise,
            "status": lambda arg: self.agent._emit("status_callback", *split_first(arg)),
            "think": lambda arg: self.agent._emit("thinking_callback", arg),
            "reason": lambda arg: self.agent._emit("reasoning_callback", arg),
            "env": lambda arg: self._api_call(f"{arg}={os.environ.get(arg, '<unset>')} "),
            "sysmsg": lambda arg: self._api_call(f"system={self.system_message} "),
            "history": lambda arg: self._api_call(f"history={len(self.history)} "),
            "cwd": self._step_cwd,
            "clarify": self._step_clarify,
            "reasoning": lambda arg: self._api_call(
                "reasoning=" + json.dumps(self.agent.reasoning_config, sort_keys=True) + " "),
            "model": lambda arg: self._api_call(f"model={self.agent.model} "),
            "moa": self._step_moa,
            "danger-pair": self._step_danger_pair,
            "surrogate": lambda arg: self._api_call(deltas=["bad\ud800text "]),
            "nan": lambda arg: self.extra.__setitem__("score", float("nan")),
            "steer-wait": self._step_steer_wait,
            "print": lambda arg: print(arg, file=sys.stdout, flush=True),
            "leak-thread": self._step_leak_thread,
            # A tool that takes its whole process down (in a worker host, the worker).
            "exit": lambda arg: self._run_tool("terminal", f"exit {arg}", "", body=lambda: os._exit(int(arg or 0))),
            "pid": lambda arg: self._api_call(f"pid={os.getpid()} "),
            # The MCP servers this process has connected: the tools the model would be offered.
            "mcp": self._step_mcp,
            # Code in a worker can write to its socket (fd 3) itself.
            "rawframe": self._step_rawframe,
        }

    def run(self) -> bool:
        """Run every step; return True if the turn was interrupted."""
        try:
            for verb, arg in parse(self.text):
                self._check_interrupt()  # also catches a stale interrupt from before the turn
                step = self._steps.get(verb)
                if step is None:
                    raise RuntimeError(f"fake agent: unknown script step {verb!r}")
                step(arg)
        except TurnInterrupted:
            return True
        finally:
            # _steps holds bound methods of this turn: without this, every
            # turn (its messages, its whole output) would wait for Python's
            # cyclic GC, which a quiet daemon may not run for a long time.
            self._steps = None
        return False

    def result(self, interrupted) -> dict:
        agent = self.agent
        result = {
            "final_response": self.final_response,
            "last_reasoning": None,
            "messages": self.messages,
            "api_calls": self.api_calls,
            "completed": True,
            "turn_exit_reason": "interrupted_during_api_call" if interrupted else "text_response",
            "failed": False,
            "partial": False,
            "interrupted": interrupted,
            "model": agent.model,
            "provider": agent.provider,
            "session_id": agent.session_id,
            "input_tokens": 10,
            "output_tokens": self.output_tokens,
        }
        result.update(self.extra)
        return result

    # -- building blocks ---------------------------------------------------

    def _check_interrupt(self) -> None:
        if self.agent._interrupt_requested:
            raise TurnInterrupted()

    def _sleep(self, ms, check) -> None:
        if not check:
            time.sleep(ms / 1000.0)  # "hang": deliberately deaf to interrupts
            return
        end = time.monotonic() + ms / 1000.0
        while (left := end - time.monotonic()) > 0:
            time.sleep(min(INTERRUPT_POLL_SECONDS, left))
            self._check_interrupt()

    def _api_call(self, text="", deltas=None, delay_s=0.0) -> None:
        """One streamed model response; becomes an assistant message."""
        self.api_calls += 1
        chunks = word_chunks(text) if deltas is None else deltas
        sent, count, interrupted = run_api_call(self.agent, chunks, delay_s, self.stream_callback)
        self.output_tokens += count
        self.final_response = sent  # partial text when interrupted
        if interrupted:
            raise TurnInterrupted()
        if sent:
            self.messages.append({"role": "assistant", "content": sent})
            self.agent._emit("tool_progress_callback", "reasoning.available", "_thinking",
                             sent[:500], None)

    def _run_tool(self, name, arg, result, running_ms=0, body=None) -> None:
        """Tool execution on the turn thread, with the real callback order;
        `body` runs as the tool's own work (after its start callbacks)."""
        agent = self.agent
        call_id = agent._next_call_id()
        args = {"arg": arg}
        self.messages.append({"role": "assistant", "content": "", "tool_calls": [{
            "id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }]})
        agent._emit("stream_delta_callback", None)  # end-of-segment sentinel
        agent._emit("tool_progress_callback", "tool.started", name, arg[:40], args)
        agent._emit("tool_start_callback", call_id, name, args)
        if body is not None:
            body()
        self._sleep(running_ms, True)
        agent._emit("tool_progress_callback", "tool.completed", name, None, None,
                    duration=0.01, is_error=False, result=result)
        agent._emit("tool_complete_callback", call_id, name, args, result)
        content = result
        steer = agent._drain_steer()
        if steer:  # a steer rides on the tool result, as in the real agent
            content += f"\n\n[OUT-OF-BAND USER MESSAGE]\n{steer}\n[/OUT-OF-BAND USER MESSAGE]"
        self.messages.append({"role": "tool", "content": content, "tool_call_id": call_id,
                              "tool_name": name})
        agent._emit("step_callback", self.api_calls,
                    [{"name": name, "result": result, "arguments": args}])

    # -- steps -------------------------------------------------------------

    def _step_stream(self, arg) -> None:
        count, _, ms = arg.partition(" ")
        deltas = [f"d{i} " for i in range(int(count))]
        self._api_call(deltas=deltas, delay_s=int(ms or 0) / 1000.0)

    def _step_flood(self, arg) -> None:
        """<mb> MiB of text as fast as it goes, in deltas of <kb> KiB (default 64)."""
        mb, _, kb = arg.partition(" ")
        size = int(kb or 64) * 1024
        chunk = "f" * (size - 1) + " "
        count = max(1, int(float(mb) * 1024 * 1024) // size)
        self._api_call(deltas=(chunk for _ in range(count)))

    def _step_clock(self, arg) -> None:
        """Deltas that carry the wall-clock time they were produced at, for
        measuring the delay from the agent to a client."""
        count, _, ms = arg.partition(" ")
        deltas = (f"t={time.time():.6f} " for _ in range(int(count)))
        self._api_call(deltas=deltas, delay_s=int(ms or 0) / 1000.0)

    def _step_tool(self, arg) -> None:
        name, arg_text = split_first(arg)
        self._run_tool(name, arg_text, f"ran {name}: {arg_text}")

    def _step_slow_tool(self, arg) -> None:
        """A tool that runs for <ms> between its start and its result."""
        name, ms = split_first(arg)
        self._run_tool(name, ms, f"ran {name} for {ms} ms", running_ms=int(ms))

    def _step_approval(self, command, mode) -> None:
        choice = self._ask_approval(command, mode)
        self._api_call(f"choice={choice} ")
        result = "BLOCKED: denied" if choice == "deny" else f"ran terminal: {command}"
        self._run_tool("terminal", command, result)

    def _ask_approval(self, command, mode) -> str:
        key = approval.get_current_session_key()
        if mode == "auto":
            # Same precedence as the real guard: gateway queue, then CLI callback,
            # then fail-open when nobody can be asked.
            if _truthy(os.environ.get("HERMES_EXEC_ASK")) and approval.has_gateway_notify(key):
                mode = "gw"
            elif terminal_tool._get_approval_callback() is not None:
                mode = "cli"
            else:
                return "once"
        if mode == "gw":
            data = {"command": command, "pattern_key": "fake_dangerous",
                    "pattern_keys": ["fake_dangerous"], "description": "dangerous command",
                    "allow_permanent": True}
            return approval.wait_for_gateway_decision(
                key, data, lambda: self.agent._interrupt_requested)
        cb = terminal_tool._get_approval_callback()
        if cb is None:
            return "deny"
        eventlog.log_callback("approval_callback")
        try:
            choice = cb(command, "dangerous command", allow_permanent=True)
        except Exception:
            return "deny"  # the real agent treats a failing callback as deny
        return choice if choice in APPROVAL_CHOICES else "deny"

    def _step_mcp(self, arg) -> None:
        from tools import mcp_tool
        with mcp_tool._lock:
            servers = sorted(mcp_tool._servers.items())
        self._api_call("mcp=" + ",".join(f"{name}:" + "+".join(t.name for t in task._tools) +
                                         f"@{task._config.get('command', '')}" for name, task in servers) + " ")

    def _step_cwd(self, arg) -> None:
        """The terminal tool runs `pwd` where it would run any command."""
        cwd = terminal_tool.terminal_cwd(self.task_id)
        self._run_tool("terminal", "pwd", cwd)
        self._api_call(f"cwd={cwd} ")

    def _step_clarify(self, arg) -> None:
        """clarify <question>[|<choice>,<choice>]: the clarify tool asks the user."""
        question, _, choices = arg.partition("|")
        cb = self.agent.clarify_callback
        if cb is None:  # the real tool answers with an error without a callback
            self._run_tool("clarify", question, "Error: clarify is not available here")
            return
        eventlog.log_callback("clarify_callback")
        answer = cb(question.strip(), [c.strip() for c in choices.split(",")] if choices else None)
        self._run_tool("clarify", question, f"user answered: {answer}")
        self._api_call(f"clarified={answer} ")

    def _step_moa(self, arg) -> None:
        """moa <n>: a mixture-of-agents call reports n references, then aggregates."""
        count = int(arg or 2)
        for i in range(count):
            self.agent._emit("tool_progress_callback", "moa.reference", f"ref{i}", f"reference {i}",
                             None, moa_index=i, moa_count=count)
        self.agent._emit("tool_progress_callback", "moa.aggregating", "aggregator", None, None,
                         moa_ref_count=count)
        self._api_call("aggregated ")

    def _step_danger_pair(self, arg) -> None:
        """danger-pair <cmd1>|<cmd2>: two tools of one batch wait for gateway
        approvals at once, as concurrent tool workers do (the session key and
        context propagate to them)."""
        import contextvars

        commands = [c.strip() for c in arg.split("|")]
        choices = [None] * len(commands)

        def ask(i, command):
            choices[i] = self._ask_approval(command, "gw")

        threads = []
        for i, command in enumerate(commands):
            ctx = contextvars.copy_context()
            threads.append(threading.Thread(target=ctx.run, args=(ask, i, command)))
            threads[-1].start()
            time.sleep(0.05)  # a stable order of requests
        for t in threads:
            t.join()
        self._api_call("pair=" + ",".join(f"{c}:{x}" for c, x in zip(commands, choices)) + " ")

    def _step_compress(self, arg) -> None:
        # Attribute lookup, so a bridge's instance-level replacement runs.
        # Exceptions propagate and fail the turn, as in the real agent.
        messages, system_message = self.agent._compress_context(
            list(self.messages), self.system_message, approx_tokens=1234, focus_topic="test")
        self.messages = list(messages)
        self.system_message = system_message
        # The compacted list counts as persisted (the real method writes it to
        # the DB itself); only what follows is flushed at turn end.
        self.flush_base = len(self.messages)
        self.agent._last_flushed_db_idx = len(self.messages)
        self._api_call(f"compressed {len(messages)} system={system_message!r} ")

    def _step_raise(self, arg) -> None:
        raise RuntimeError(arg)

    def _step_steer_wait(self, arg) -> None:
        self._sleep(int(arg), check=True)
        steer = self.agent._drain_steer()
        self._api_call(f"steered={steer if steer else '<none>'} ")

    def _step_rawframe(self, arg) -> None:
        """`rawframe <n> <json>`: <n> frames of that body onto fd 3, in one
        write, after the worker's own writer has had a moment to send what
        it queued (so the two do not interleave)."""
        count, body = split_first(arg)
        data = body.encode("utf-8")
        time.sleep(0.2)
        blob = (struct.pack(">I", len(data)) + data) * int(count)
        view = memoryview(blob)
        while view:
            view = view[os.write(3, view):]

    def _step_leak_thread(self, arg) -> None:
        agent = self.agent

        def _late():
            # Fires after the turn has returned: tests check the bridge copes
            # with callbacks from stray threads.
            time.sleep(0.3)
            agent._emit("stream_delta_callback", "late ")
            agent._emit("status_callback", "lifecycle", "late")

        threading.Thread(target=_late, daemon=True).start()
