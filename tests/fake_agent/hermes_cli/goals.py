"""Standing goals (hermes_cli/goals.py): a goal per session that a judge
checks after each turn. The real one keeps its state in state.db and asks a
model; this one keeps it in $HERMES_HOME/goals/<session>.json and judges a
turn done when its final response contains "GOAL DONE"."""

import json
from dataclasses import asdict, dataclass, field
from typing import Optional

from hermes_constants import get_hermes_home

DEFAULT_MAX_TURNS = 20


@dataclass
class GoalState:
    goal: str
    status: str = "active"  # active | paused | done | cleared
    turns_used: int = 0
    max_turns: int = DEFAULT_MAX_TURNS
    paused_reason: Optional[str] = None
    subgoals: list = field(default_factory=list)


def _path(session_id):
    return get_hermes_home() / "goals" / f"{session_id}.json"


def load_goal(session_id) -> Optional[GoalState]:
    try:
        return GoalState(**json.loads(_path(session_id).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def save_goal(session_id, state: GoalState) -> None:
    path = _path(session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(state)), encoding="utf-8")


class GoalManager:
    def __init__(self, session_id, *, default_max_turns=DEFAULT_MAX_TURNS):
        self.session_id = session_id
        self.default_max_turns = int(default_max_turns or DEFAULT_MAX_TURNS)
        self._state = load_goal(session_id)

    @property
    def state(self):
        return self._state

    def _save(self):
        save_goal(self.session_id, self._state)

    def is_active(self) -> bool:
        return self._state is not None and self._state.status == "active"

    def has_goal(self) -> bool:
        return self._state is not None and self._state.status in ("active", "paused")

    def status_line(self) -> str:
        s = self._state
        if s is None or s.status == "cleared":
            return "No active goal. Set one with /goal <text>."
        meta = f"{s.turns_used}/{s.max_turns} turns"
        if s.status == "active":
            return f"⊙ Goal (active, {meta}): {s.goal}"
        if s.status == "paused":
            extra = f" — {s.paused_reason}" if s.paused_reason else ""
            return f"⏸ Goal (paused, {meta}{extra}): {s.goal}"
        return f"✓ Goal done ({meta}): {s.goal}"

    def set(self, goal, *, max_turns=None):
        goal = (goal or "").strip()
        if not goal:
            raise ValueError("goal text is empty")
        self._state = GoalState(goal=goal, max_turns=int(max_turns or self.default_max_turns))
        self._save()
        return self._state

    def pause(self, reason="user-paused"):
        if self._state is None:
            return None
        self._state.status, self._state.paused_reason = "paused", reason
        self._save()
        return self._state

    def resume(self, *, reset_budget=True):
        if self._state is None:
            return None
        self._state.status, self._state.paused_reason = "active", None
        if reset_budget:
            self._state.turns_used = 0
        self._save()
        return self._state

    def clear(self) -> None:
        if self._state is not None:
            self._state.status = "cleared"
            self._save()

    def next_continuation_prompt(self):
        return f"Continue working on: {self._state.goal}" if self.is_active() else None

    def add_subgoal(self, text):
        if not self.has_goal():
            raise RuntimeError("no active goal")
        self._state.subgoals.append(text.strip())
        self._save()
        return text.strip()

    def remove_subgoal(self, index_1based):
        if not self.has_goal():
            raise RuntimeError("no active goal")
        if not 1 <= index_1based <= len(self._state.subgoals):
            raise IndexError(f"no subgoal {index_1based}")
        removed = self._state.subgoals.pop(index_1based - 1)
        self._save()
        return removed

    def clear_subgoals(self) -> int:
        if not self.has_goal():
            raise RuntimeError("no active goal")
        count = len(self._state.subgoals)
        self._state.subgoals = []
        self._save()
        return count

    def render_subgoals(self) -> str:
        subs = self._state.subgoals if self._state else []
        return "\n".join(f"  {i}. {s}" for i, s in enumerate(subs, 1)) or "  (no subgoals)"

    def evaluate_after_turn(self, final_response, user_initiated=True) -> dict:
        s = self._state
        if s is None or s.status != "active":
            return {"status": s.status if s else None, "should_continue": False,
                    "continuation_prompt": None, "verdict": "inactive",
                    "reason": "no active goal", "message": ""}
        s.turns_used += 1
        if "GOAL DONE" in str(final_response or ""):
            s.status = "done"
            self._save()
            return {"status": "done", "should_continue": False, "continuation_prompt": None,
                    "verdict": "done", "reason": "judge: done", "message": f"✓ Goal achieved: {s.goal}"}
        if s.turns_used >= s.max_turns:
            s.status, s.paused_reason = "paused", "budget exhausted"
            self._save()
            return {"status": "paused", "should_continue": False, "continuation_prompt": None,
                    "verdict": "continue", "reason": "budget exhausted",
                    "message": f"⏸ Goal paused (budget exhausted): {s.goal}"}
        self._save()
        return {"status": "active", "should_continue": True,
                "continuation_prompt": self.next_continuation_prompt(), "verdict": "continue",
                "reason": "judge: not yet", "message": f"↻ Continuing toward goal ({s.turns_used}/{s.max_turns})"}
