"""One fake "API call": deltas delivered from a fresh stream worker thread.

Mirrors the real agent: a daemon `threading.Thread(target=_call)` per call
(so its name is "Thread-N (_call)"), while the turn thread polls it with
join(timeout) and abandons it when interrupted.
"""

import itertools
import threading

JOIN_POLL_SECONDS = 0.05


def run_api_call(agent, deltas, delay_s, stream_callback):
    """Stream `deltas`; return (text_sent, n_sent, interrupted)."""
    lock = threading.Lock()
    stop = threading.Event()
    sent = []

    def _call():
        source = iter(deltas)  # drawn after each pause: lazy deltas see delivery time
        for index in itertools.count():
            if index and delay_s and stop.wait(delay_s):
                return
            delta = next(source, None)
            if delta is None:
                return
            # Decide and record under the lock: whatever the turn snapshots as
            # final_response is exactly what was (or is about to be) delivered.
            with lock:
                if stop.is_set() or agent._interrupt_requested:
                    return
                sent.append(delta)
            agent._deliver_delta(delta, stream_callback)

    worker = threading.Thread(target=_call, daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(timeout=JOIN_POLL_SECONDS)
        if agent._interrupt_requested:
            break  # stop waiting; the worker is told to stop below
    with lock:
        stop.set()
        text = "".join(sent)
        count = len(sent)
    return text, count, bool(agent._interrupt_requested)
