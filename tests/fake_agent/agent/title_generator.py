"""Session titles (agent/title_generator.py): generated on a background
thread after the first exchanges, stored in state.db, then reported through
title_callback. The fake "model" titles a session with the first words of
the user's message; FAKE_AGENT_TITLE_DELAY_MS delays it."""

import os
import threading
import time


def generate_title(user_message, assistant_response, failure_callback=None, main_runtime=None):
    words = str(user_message or "").replace("script:", "").split()
    return ("Title: " + " ".join(words[:5])).strip() if words else None


def auto_title_session(session_db, session_id, user_message, assistant_response,
                       failure_callback=None, main_runtime=None, title_callback=None) -> None:
    if not session_db or not session_id:
        return
    try:
        if session_db.get_session_title(session_id):
            return
    except Exception:
        return
    delay_ms = os.environ.get("FAKE_AGENT_TITLE_DELAY_MS")
    if delay_ms:
        time.sleep(int(delay_ms) / 1000.0)
    title = generate_title(user_message, assistant_response)
    if not title:
        return
    try:
        session_db.set_session_title(session_id, title)
    except Exception:
        return
    if title_callback is not None:
        try:
            title_callback(title)
        except Exception:
            pass


def maybe_auto_title(session_db, session_id, user_message, assistant_response,
                     conversation_history, failure_callback=None, main_runtime=None,
                     title_callback=None) -> None:
    """Fire and forget, only for the first two exchanges (as the real one)."""
    if not session_db or not session_id or not user_message or not assistant_response:
        return
    users = sum(1 for m in (conversation_history or []) if isinstance(m, dict) and m.get("role") == "user")
    if users > 2:
        return
    threading.Thread(target=auto_title_session,
                     args=(session_db, session_id, user_message, assistant_response),
                     kwargs={"failure_callback": failure_callback, "main_runtime": main_runtime,
                             "title_callback": title_callback},
                     daemon=True, name="auto-title").start()
