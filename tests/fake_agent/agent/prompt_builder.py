"""Platform hints keyed by platform name.

run_agent re-exports this very dict object: bridges pop entries from one
and expect the other to change too.
"""

PLATFORM_HINTS = {
    "cli": "You are running in a terminal (fake hint).",
    "webui": "You are running behind a web UI (fake hint).",
    "telegram": "You are chatting on Telegram (fake hint).",
}
