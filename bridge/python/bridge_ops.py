"""What Hermes Studio asks of an agent besides a turn: context estimates,
model switches, slash commands, goals, titles, skills, and MCP servers
(those in bridge_mcp).

Two entry points, both taking and returning JSON text so that either host
(embedded, or a worker process) forwards them without knowing the ops:
`session_call` works on a session's AIAgent, `profile_call` only needs the
profile's environment. A failure the client should see as an answer (not
as an exception) comes back as {"ok": false, "error": ...}, the way Studio's
bridge answers it; anything raised becomes an error answer in the daemon.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from bridge_agent_calls import DBS
from bridge_json import plain, to_json
from bridge_mcp import MCP_OPS
from bridge_profiles import GATE, load_config, section
from bridge_workspace import bound_workspace, needs_terminal_cwd

# --------------------------------------------------------------------------
# Context estimates (Studio's bridge.context.ready and context_estimate).


def _tool_names(tools: Any) -> list[str]:
    names = []
    for tool in tools if isinstance(tools, list) else []:
        name = ""
        if isinstance(tool, dict):
            function = tool.get("function")
            name = str(function.get("name") or "") if isinstance(function, dict) else ""
            name = name or str(tool.get("name") or "")
        else:
            name = str(getattr(tool, "name", "") or "")
        if name:
            names.append(name)
    return names


def _system_prompt(agent: Any, instructions: Any) -> str:
    cached = str(getattr(agent, "_cached_system_prompt", "") or "")
    if cached:
        return cached
    build = getattr(agent, "_build_system_prompt", None)
    if callable(build):
        with contextlib.suppress(Exception):
            return str(build(instructions) or "")
    return str(instructions or "")


def context_info(agent: Any, messages: Any, instructions: Any) -> dict[str, Any]:
    """Token counts of what the agent would send; {} for an agent that
    cannot estimate (no agent.model_metadata)."""
    try:
        from agent.model_metadata import estimate_request_tokens_rough as estimate
    except Exception:
        return {}
    prompt = _system_prompt(agent, instructions)
    tools = getattr(agent, "tools", None) or []
    listed = messages if isinstance(messages, list) else []
    try:
        fixed = estimate([], system_prompt=prompt, tools=tools or None)
        # (Every turn announces its context with no messages: the same sum.)
        total = estimate(listed, system_prompt=prompt, tools=tools or None) if listed else fixed
        system = estimate([], system_prompt=prompt, tools=None)
    except Exception:
        return {}
    names = _tool_names(tools)
    mcp = sorted(n for n in names if n.startswith("mcp_"))

    def count(value: Any, minimum: int) -> int | None:
        return int(value) if isinstance(value, (int, float)) and value >= minimum else None

    return {
        "token_count": count(total, 1),
        "fixed_context_tokens": count(fixed, 0),
        "system_prompt_tokens": count(system, 0),
        "tool_tokens": max(0, int(fixed or 0) - int(system or 0)),
        "message_count": len(listed),
        "tool_count": len(tools) if isinstance(tools, list) else 0,
        "tool_names": names,
        "mcp_tool_count": len(mcp),
        "mcp_tool_names": mcp,
        "system_prompt_chars": len(prompt),
    }


def estimated_tokens(agent: Any, messages: Any, instructions: Any) -> int | None:
    return context_info(agent, messages, instructions).get("token_count")


# --------------------------------------------------------------------------
# Session operations.


def _context_estimate(session: Any, args: dict[str, Any]) -> dict[str, Any]:
    workspace = args.get("workspace") or None
    legacy_cwd = workspace if workspace and needs_terminal_cwd() else None
    with GATE.hold(session.profile, terminal_cwd=legacy_cwd):
        with bound_workspace(session, workspace):
            return context_info(session.agent, args.get("messages") or [], args.get("instructions"))


def model_switch_note(old_model: str, new_model: str, provider: str) -> str:
    return (f"[Note: model was just switched from {old_model or 'unknown'} to {new_model} via "
            f"{provider or 'configured provider'}. Adjust your self-identification accordingly.]")


def _switch_model(session: Any, args: dict[str, Any]) -> dict[str, Any]:
    """agent.switch_model with the runtime the profile resolves for the new
    model; the next turn is told (as Studio's bridge tells it)."""
    model = str(args.get("model") or "").strip()
    provider = str(args.get("provider") or "").strip()
    if not model:
        raise ValueError("model is required")
    switch = getattr(session.agent, "switch_model", None)
    if not callable(switch):
        raise RuntimeError("loaded agent does not support switch_model")
    old_model = str(getattr(session.agent, "model", "") or "")
    with GATE.hold(session.profile):
        from hermes_cli.runtime_provider import resolve_runtime_provider
        runtime = resolve_runtime_provider(requested=provider or None, target_model=model)
    resolved = str(runtime.get("provider") or provider or "")
    switch(new_model=model, new_provider=resolved, api_key=runtime.get("api_key") or "",
           base_url=runtime.get("base_url") or "", api_mode=runtime.get("api_mode") or "")
    if args.get("announce", True):
        session.pending_note = model_switch_note(old_model, model, resolved)
    return {"model": model, "provider": resolved, "base_url": runtime.get("base_url"),
            "api_mode": runtime.get("api_mode")}


SESSION_OPS = {
    "context_estimate": _context_estimate,
    "switch_model": _switch_model,
}


def session_call(session: Any, op: str, args_json: str) -> str:
    handler = SESSION_OPS.get(op)
    if handler is None:
        raise ValueError(f"unknown session operation: {op}")
    return to_json(plain(handler(session, json.loads(args_json or "{}"))))


# --------------------------------------------------------------------------
# Slash commands and goals (hermes_cli.goals, agent.skill_commands).


def _goal_manager(session_id: str) -> Any:
    from hermes_cli.goals import GoalManager
    try:
        max_turns = int(section(load_config(read_only=True), "goals").get("max_turns", 20) or 20)
    except (TypeError, ValueError):
        max_turns = 20
    return GoalManager(session_id=session_id, default_max_turns=max_turns)


def _goal_command(session_id: str, arg: str) -> dict[str, Any]:
    mgr = _goal_manager(session_id)
    text = arg.strip()
    word = text.lower()
    out: dict[str, Any] = {"session_id": session_id, "command": "goal", "handled": True, "type": "goal"}
    if not text or word == "status":
        return {**out, "action": "goal_status", "message": mgr.status_line()}
    if word == "pause":
        state = mgr.pause(reason="user-paused")
        return {**out, "action": "pause", "message": f"⏸ Goal paused: {state.goal}" if state else "No goal set.",
                "clear_goal_continuations": True}
    if word == "resume":
        state = mgr.resume()
        return {**out, "action": "resume",
                "message": f"▶ Goal resumed: {state.goal}" if state else "No goal to resume.",
                "kickoff_prompt": mgr.next_continuation_prompt() if state else None,
                "max_turns": state.max_turns if state else None}
    if word in ("clear", "stop", "done"):
        had = mgr.has_goal()
        mgr.clear()
        return {**out, "action": "clear", "message": "✓ Goal cleared." if had else "No active goal.",
                "clear_goal_continuations": True}
    try:
        state = mgr.set(text)
    except ValueError as exc:
        return {**out, "action": "set", "message": f"Invalid goal: {exc}"}
    return {**out, "action": "set",
            "message": (f"⊙ Goal set ({state.max_turns}-turn budget): {state.goal}\n"
                        "After each turn, a judge model will check if the goal is done. "
                        "Hermes keeps working until it is, you pause/clear it, or the budget is exhausted."),
            "kickoff_prompt": state.goal, "max_turns": state.max_turns}


def _subgoal_command(session_id: str, arg: str) -> dict[str, Any]:
    mgr = _goal_manager(session_id)
    out: dict[str, Any] = {"session_id": session_id, "command": "subgoal", "handled": True, "type": "goal"}
    text = arg.strip()
    if not mgr.has_goal():
        return {**out, "action": "subgoal", "message": "No active goal. Set one with /goal <text>."}
    if not text:
        return {**out, "action": "subgoal_status", "message": f"{mgr.status_line()}\n{mgr.render_subgoals()}"}
    verb, _, rest = text.partition(" ")
    if verb.lower() == "remove":
        if not rest.strip():
            return {**out, "action": "subgoal_remove", "message": "Usage: /subgoal remove <n>"}
        try:
            index = int(rest.split()[0])
            message = f"✓ Removed subgoal {index}: {mgr.remove_subgoal(index)}"
        except ValueError:
            message = "/subgoal remove: <n> must be an integer (1-based index)."
        except (IndexError, RuntimeError) as exc:
            message = f"/subgoal remove: {exc}"
        return {**out, "action": "subgoal_remove", "message": message}
    if verb.lower() == "clear":
        try:
            count = mgr.clear_subgoals()
            message = (f"✓ Cleared {count} subgoal{'s' if count != 1 else ''}." if count
                       else "No subgoals to clear.")
        except RuntimeError as exc:
            message = f"/subgoal clear: {exc}"
        return {**out, "action": "subgoal_clear", "message": message}
    try:
        added = mgr.add_subgoal(text)
        message = f"✓ Added subgoal {len(mgr.state.subgoals) if mgr.state else 0}: {added}"
    except (ValueError, RuntimeError) as exc:
        message = f"/subgoal: {exc}"
    return {**out, "action": "subgoal_add", "message": message}


def _skill_command(session_id: str, name: str, arg: str) -> dict[str, Any] | None:
    out: dict[str, Any] = {"session_id": session_id, "command": name, "handled": True}
    with contextlib.suppress(ImportError):
        from agent.skill_bundles import build_bundle_invocation_message, resolve_bundle_command_key
        key = resolve_bundle_command_key(name)
        built = build_bundle_invocation_message(key, arg, task_id=session_id) if key else None
        if built:
            message, loaded, missing = built
            return {**out, "type": "bundle", "message": message, "loaded": loaded, "missing": missing}
    from agent.skill_commands import build_skill_invocation_message, resolve_skill_command_key
    key = resolve_skill_command_key(name)
    if not key:
        return None
    message = build_skill_invocation_message(
        key, arg, task_id=session_id,
        runtime_note=("If you need user clarification, call the clarify tool. "
                      "Do not output raw JSON question/choices payloads as the final response."))
    return {**out, "type": "skill", "message": message} if message else None


def _command(profile: str, args: dict[str, Any]) -> dict[str, Any]:
    session_id = str(args.get("session_id") or "")
    raw = str(args.get("command") or "").strip()
    raw = raw[1:].strip() if raw.startswith("/") else raw
    if not raw:
        raise ValueError("command is required")
    head, _, arg = raw.partition(" ")
    name = head.lstrip("/").strip().lower()
    arg = arg.strip()
    if name == "goal":
        return _goal_command(session_id, arg)
    if name == "subgoal":
        return _subgoal_command(session_id, arg)
    if name == "learn":
        try:
            from agent.learn_prompt import build_learn_prompt
        except ImportError:
            return {"session_id": session_id, "command": name, "handled": False, "type": "learn",
                    "message": "/learn requires a newer Hermes Agent runtime with agent.learn_prompt."}
        return {"session_id": session_id, "command": name, "handled": True, "type": "learn",
                "message": build_learn_prompt(arg)}
    if name in ("reload-skills", "reload_skills"):
        from agent.skill_commands import reload_skills
        return {"session_id": session_id, "command": name, "handled": True, "type": "reload-skills",
                "action": "reload-skills", **plain(reload_skills())}
    try:
        found = _skill_command(session_id, name, arg)
    except Exception as exc:
        raise RuntimeError(f"skill command dispatch failed: {exc}") from exc
    if found:
        return found
    return {"session_id": session_id, "command": name, "handled": False,
            "message": f"not a supported bridge command: /{name}"}


def _goal_evaluate(profile: str, args: dict[str, Any]) -> dict[str, Any]:
    session_id = str(args.get("session_id") or "")
    mgr = _goal_manager(session_id)
    if not mgr.is_active():
        return {"session_id": session_id, "handled": True, "active": False, "should_continue": False,
                "continuation_prompt": None, "message": "", "verdict": "inactive"}
    decision = mgr.evaluate_after_turn(str(args.get("final_response") or ""), user_initiated=True)
    return {"session_id": session_id, "handled": True, "active": mgr.is_active(), **plain(decision)}


def _goal_pause(profile: str, args: dict[str, Any]) -> dict[str, Any]:
    session_id = str(args.get("session_id") or "")
    reason = str(args.get("reason") or "").strip() or "paused"
    mgr = _goal_manager(session_id)
    state = mgr.pause(reason=reason)
    return {"session_id": session_id, "command": "goal", "handled": True, "type": "goal",
            "action": "pause", "active": mgr.is_active(), "status": state.status if state else None,
            "reason": reason, "message": f"⏸ Goal paused: {state.goal}" if state else "No goal set.",
            "clear_goal_continuations": True}


def _session_title(profile: str, args: dict[str, Any]) -> dict[str, Any]:
    session_id = str(args.get("session_id") or "")
    db = DBS.for_profile(profile)
    title = None
    if db is not None and hasattr(db, "get_session_title"):
        with contextlib.suppress(Exception):
            title = db.get_session_title(session_id)
    return {"session_id": session_id, "title": str(title or "")}


def _skills_reload(profile: str, args: dict[str, Any]) -> dict[str, Any]:
    from agent.skill_commands import reload_skills
    return {"ok": True, "action": "reload-skills", **plain(reload_skills())}


PROFILE_OPS = {
    "command": _command,
    "goal_evaluate": _goal_evaluate,
    "goal_pause": _goal_pause,
    "session_title": _session_title,
    "skills_reload": _skills_reload,
    **MCP_OPS,
}


def profile_call(profile: str, op: str, args_json: str) -> str:
    handler = PROFILE_OPS.get(op)
    if handler is None:
        raise ValueError(f"unknown profile operation: {op}")
    profile = profile or "default"
    with GATE.hold(profile):
        return to_json(plain(handler(profile, json.loads(args_json or "{}"))))
