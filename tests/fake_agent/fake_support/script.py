"""The test script language carried in the user message text.

"script:<step>;<step>;..." where a step is "<verb> <argument...>".
Anything else is a plain echo turn.
"""

import re

SCRIPT_PREFIX = "script:"


def message_text(user_message) -> str:
    """A str as-is; a list of content blocks -> its text blocks joined by " "."""
    if isinstance(user_message, list):
        return " ".join(
            str(block.get("text", ""))
            for block in user_message
            if isinstance(block, dict) and block.get("type") == "text"
        )
    return "" if user_message is None else str(user_message)


def parse(text):
    """Return [(verb, arg), ...]; a non-script message is one ("echo", text) step."""
    stripped = text.lstrip()
    if not stripped.startswith(SCRIPT_PREFIX):
        return [("echo", text)]
    steps = []
    for raw in stripped[len(SCRIPT_PREFIX):].split(";"):
        raw = raw.strip()
        if raw:
            verb, _, arg = raw.partition(" ")
            steps.append((verb, arg.strip()))
    return steps


def word_chunks(text) -> list:
    """"hello big world" -> ["hello ", "big ", "world"]: each word with its trailing space."""
    return re.findall(r"\S+\s*", text)


def split_first(arg):
    """"terminal ls -l" -> ("terminal", "ls -l")."""
    head, _, rest = arg.partition(" ")
    return head, rest.strip()
