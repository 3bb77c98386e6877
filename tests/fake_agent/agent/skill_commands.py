"""Skill slash commands (agent/skill_commands.py): one command per skill
directory under $HERMES_HOME/skills holding a SKILL.md."""

from hermes_constants import get_hermes_home

_skill_commands: dict = {}


def _scan() -> dict:
    found = {}
    root = get_hermes_home() / "skills"
    for skill in sorted(root.glob("*/SKILL.md")) if root.is_dir() else []:
        name = skill.parent.name
        description = ""
        for line in skill.read_text(encoding="utf-8").splitlines():
            if line.startswith("description:"):
                description = line.partition(":")[2].strip()
        found["/" + name] = {"name": name, "description": description}
    return found


def scan_skill_commands() -> dict:
    _skill_commands.clear()
    _skill_commands.update(_scan())
    return dict(_skill_commands)


def get_skill_commands() -> dict:
    if not _skill_commands:
        scan_skill_commands()
    return dict(_skill_commands)


def reload_skills() -> dict:
    """The diff of a rescan, in the real return shape."""
    before = {k.lstrip("/"): (v or {}).get("description", "") for k, v in _skill_commands.items()}
    after = {k.lstrip("/"): v["description"] for k, v in scan_skill_commands().items()}
    return {
        "added": [{"name": n, "description": after[n]} for n in after if n not in before],
        "removed": [{"name": n, "description": before[n]} for n in before if n not in after],
        "unchanged": [n for n in after if n in before],
        "total": len(after),
        "commands": len(after),
    }


def resolve_skill_command_key(name: str):
    key = "/" + str(name or "").lstrip("/")
    return key if key in get_skill_commands() else None


def build_skill_invocation_message(key, arg, task_id=None, runtime_note=""):
    info = get_skill_commands().get(key)
    if not info:
        return None
    return f"[skill {info['name']}] {arg}".strip()
