"""A worker process made ready: its allocator tuned as it starts
(tune_malloc), and its warm-up (worker_main.py runs it on a thread of its
own once `ready` is sent): the agent's imports and what a process's first
agent pays once, done before the first session needs them, then the
imports frozen out of the garbage collector's reach (freeze_imports).
Stdlib only."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import os
import sys
import threading
from typing import Any, Callable


# What the first AIAgent of a process and its first turn import beyond
# run_agent (hermes-agent 0.18; a module an agent lacks is skipped): its
# model client and the client's resources (loaded on first use), the
# provider resolution, its init helpers, session store and turn loop.
# Measured on the real agent, after `import run_agent` alone a fresh
# process's first session took 5 s and its first turn 4 s more (later ones
# 0.2 s and 0.15 s): a spare warmed without them makes its first session wait.
FIRST_AGENT_MODULES = (
    "openai", "httpx", "openai.resources", "openai.lib.streaming.chat", "hermes_cli.runtime_provider",
    "agent.agent_init", "hermes_state", "agent.transports.chat_completions", "agent.conversation_loop",
    "agent.system_prompt", "agent.chat_completion_helpers", "agent.turn_context", "agent.turn_finalizer",
    "agent.conversation_compression", "agent.prompt_caching", "agent.display", "agent.title_generator",
    "hermes_cli.skin_engine", "hermes_cli.moa_config")


def pay_first_agent_costs(profile_toolsets: list[str] | None) -> None:
    """What a process's first agent pays once, beyond imports (hermes-agent
    0.18.2, measured in one process with every module above imported):
    its construction's toolset availability checks (each check's first run
    imports, builds SSL contexts, may try a lazy dependency: 0.99 s for a
    first construction, 0.24 s for later ones, 0.37 s after this) and its
    first turn's environment probe (python3 and pip versions, by
    subprocess, cached for the process: 0.62 s of a 0.78 s first turn). Both
    are done here for the toolsets a session of this profile gets, so that
    a spare's first session costs about what later ones do. The same calls
    the first session would make, only earlier: nothing is written, no model
    is called."""
    with contextlib.suppress(Exception):
        import model_tools
        model_tools.get_tool_definitions(enabled_toolsets=profile_toolsets, quiet_mode=True)
    with contextlib.suppress(Exception):
        from tools.env_probe import get_environment_probe_line
        get_environment_probe_line()


def nicer_thread(by: int) -> None:
    """The calling thread, and what it starts from now on (processes, threads),
    `by` nicer (Linux: niceness is a thread's own). The rest of the worker
    keeps its priority: only the warm-up gives way."""
    if by <= 0:
        return
    with contextlib.suppress(OSError, AttributeError):
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + by))


def preimport(profile: str, say_warm: Callable[[], None], nice: int = 0) -> None:
    """Imports run_agent and FIRST_AGENT_MODULES ahead of the first
    create_session (seconds for the real agent), inside the profile's
    environment as create_session would: its module-level code reads
    HERMES_HOME and loads that home's .env; then pays what a first agent
    pays once (pay_first_agent_costs). Then says `warm`: the daemon places new sessions
    only on warm workers. A spare does it `nice` nicer (nicer_thread)."""
    nicer_thread(nice)
    try:
        from bridge_profiles import GATE, PATHS, load_config, toolsets_for
        with GATE.hold(profile or "default"):
            root = PATHS["agent_root"]
            if root is not None and str(root) not in sys.path:
                sys.path.insert(0, str(root))
            import run_agent  # noqa: F401
            for name in FIRST_AGENT_MODULES:
                try:
                    importlib.import_module(name)
                except Exception:
                    pass  # not this agent's, or broken: its first session says so if it matters
            pay_first_agent_costs(toolsets_for(load_config()))
    except BaseException:
        pass  # create_session imports it again and reports what fails
    say_warm()


def tune_malloc() -> None:
    """glibc raises its mmap threshold after each big free, so that later
    big strings (a long run's result, its frame) come from the heap and stay
    in the worker's RSS once freed. A fixed threshold gives them back (the
    daemon does the same).

    glibc also gives a thread that allocates while another does an arena of
    its own, up to eight per core, and a worker runs a thread per turn: what
    turns allocated stays spread over arenas that are never handed back,
    about 1.6 kB per idle session (W7 in tests/bench/RESULTS.md). The
    worker's Python allocates under its GIL, so one arena costs it no
    concurrency. Set here, not through MALLOC_ARENA_MAX, which the agent's
    own commands would inherit; a MALLOC_ARENA_MAX of the user's wins."""
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(-3, 4 << 20)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 8 << 20)  # M_TRIM_THRESHOLD
        if "MALLOC_ARENA_MAX" not in os.environ:
            libc.mallopt(-8, 1)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass  # not glibc


def freeze_imports(worker: Any) -> bool:
    """Takes what the warm-up imported out of the garbage collector's reach
    (gc.freeze) while no session exists yet. hermes-agent 0.18.2 leaves
    ~56,000 tracked objects after its imports; every full collection walked
    them all, holding the GIL 35 to 200 ms while streams on this worker
    waited (measured on real turns, tests/bench/RESULTS.md). Frozen objects
    are never collected, which is why a session's objects must not be among
    them: with one built or being built (a worker_main.Worker's `sessions`
    and `building`, read under its lock), nothing is frozen."""
    with worker.lock:  # a create_session waits for this, rather than be frozen half-built
        if worker.sessions or worker.building:
            return False
        gc.collect()
        gc.freeze()
        return True
