"""Token estimates (agent/model_metadata.py): the real rough estimate counts
about four characters per token over messages, system prompt and tool schemas."""

import json


def estimate_request_tokens_rough(messages, system_prompt="", tools=None) -> int:
    chars = len(system_prompt or "")
    chars += sum(len(json.dumps(m, ensure_ascii=False)) for m in (messages or []))
    chars += sum(len(json.dumps(t, ensure_ascii=False)) for t in (tools or []))
    return chars // 4
