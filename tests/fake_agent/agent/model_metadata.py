"""Token estimates (agent/model_metadata.py): the real rough estimate counts
about four characters per token over messages, system prompt and tool schemas.
As the real one, a tool list's estimate is cached by the list's identity
(checked against its length and first and last names): asked every turn, the
schemas are measured once."""

import json

_TOOLS_CACHE: dict = {}  # id(tools) -> (len, first name, last name, chars)


def _name(tool) -> str:
    fn = tool.get("function") if isinstance(tool, dict) else None
    return str(fn.get("name") or "") if isinstance(fn, dict) else ""


def _tools_chars(tools) -> int:
    if not tools:
        return 0
    shape = (len(tools), _name(tools[0]), _name(tools[-1]))
    hit = _TOOLS_CACHE.get(id(tools))
    if hit is not None and hit[:3] == shape:
        return hit[3]
    chars = sum(len(json.dumps(t, ensure_ascii=False)) for t in tools)
    if len(_TOOLS_CACHE) >= 256:
        _TOOLS_CACHE.pop(next(iter(_TOOLS_CACHE)))
    _TOOLS_CACHE[id(tools)] = (*shape, chars)
    return chars


def estimate_request_tokens_rough(messages, system_prompt="", tools=None) -> int:
    chars = len(system_prompt or "")
    chars += sum(len(json.dumps(m, ensure_ascii=False)) for m in (messages or []))
    chars += _tools_chars(tools)
    return chars // 4
