"""The reporting half of scripts/bench: medians of the repetitions, the
"ours vs seed" rows and their targets, the before/ours pair-by-pair sign test,
and the Markdown tables they are printed as.

A module of its own so that scripts/bench (which runs the workloads) and
scripts/bench-hosts (which runs them on other agent hosts) print their tables
with the same code. It starts nothing and measures nothing: importing it needs
neither the daemon nor tests/integration/harness.py.
"""

from __future__ import annotations

import math
import statistics
import sys
from typing import Any


def median_metrics(runs: list[dict]) -> dict:
    keys = sorted({k for r in runs for k in r})
    return {k: statistics.median([r[k] for r in runs if r.get(k) is not None]) for k in keys
            if any(r.get(k) is not None for r in runs)}


def better_direction(key: str) -> str | None:
    """Which way a metric is better ("higher"/"lower"), None for counts and sizes of the workload itself."""
    if key.endswith("rps") or (key.endswith("per_s") and "wakeups" not in key):
        return "higher"
    if key.endswith(("_us", "_ms", "_s", ".s", "_mb", "cpu_pct", "wakeups_per_s", "seconds")):
        return "lower"
    return None


def sign_test_p(wins: int, losses: int) -> float:
    """Two-sided exact sign test (ties dropped): how likely a split at least this uneven is by chance."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def paired_rows(name: str, before: list[dict], ours: list[dict]) -> list[list[str]]:
    """Before and ours repetition by repetition (they ran back to back, so each pair shares the
    machine's state): medians, how many pairs ours won, and the sign test's p. One median of a
    few runs on a shared machine moves by a fifth; a split of 12 to 3 does not happen by chance."""
    rows = []
    keys = sorted({k for r in ours for k in r} & {k for r in before for k in r})
    for key in keys:
        way = better_direction(key)
        pairs = [(b.get(key), o.get(key)) for b, o in zip(before, ours)]
        pairs = [(b, o) for b, o in pairs if isinstance(b, (int, float)) and isinstance(o, (int, float))]
        if way is None or not pairs:
            continue
        wins = sum((o > b) if way == "higher" else (o < b) for b, o in pairs)
        losses = sum((o < b) if way == "higher" else (o > b) for b, o in pairs)
        mb, mo = statistics.median(b for b, _ in pairs), statistics.median(o for _, o in pairs)
        change = (mo / mb - 1) * 100 if mb else 0.0
        rows.append([name, key, f"{mb:,.3g}", f"{mo:,.3g}", f"{change:+.0f} %", f"{wins} of {len(pairs)}",
                     f"{sign_test_p(wins, losses):.3f}", way])
    return rows


def print_markdown(head: list[str], body: list[list[Any]], out=sys.stdout) -> None:
    widths = [max(len(str(x[i])) for x in [head] + body) for i in range(len(head))]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"
    print(line(head), file=out)
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|", file=out)
    for cells in body:
        print(line(cells), file=out)


def fmt(v: float | None, unit: str = "") -> str:
    if v is None:
        return "n/a"
    if unit == "rps":
        return f"{v:,.0f}/s"
    if unit == "ms":
        return f"{v:.3f} ms" if v < 1 else f"{v:.1f} ms" if v < 100 else f"{v:,.0f} ms"
    if unit == "us":
        return f"{v:,.0f} us"
    if unit == "s":
        return f"{v:.2f} s"
    if unit == "MB":
        return f"{v:.1f} MB"
    if unit == "kB":
        return f"{v:,.1f} kB"
    return f"{v:,.0f}{unit}"


def factor(seed: float | None, ours: float | None, better: str) -> float | None:
    if seed is None or ours is None or seed <= 0 or ours <= 0:
        return None
    return ours / seed if better == "higher" else seed / ours


# Targets that only mean something at the full sizes: shorter W3 runs are
# mostly start-up, and a smaller W7 run is not much bigger than the daemon's
# fixed costs (SQLite caches, allocator arenas).
JUDGED_IN_FULL = " (target judged in the full run only: at this size fixed costs dominate)"


def full_size(P: dict, full_sizes: dict, key: str) -> bool:
    return P[key] >= full_sizes[key]


def rows_for(name: str, seed: dict, ours: dict, P: dict, ctx: dict, *, full_sizes: dict) -> list[dict]:
    """The table rows of one workload, from the medians of the seed and of ours.
    P is the sizes the run used; full_sizes is scripts/bench's FULL (passed in:
    the sizes are the runner's), and a target marked JUDGED_IN_FULL is judged
    only where P is at least that large."""
    rows: list[dict] = []

    def row(measure: str, s: Any, o: Any, ratio: float | None, target: str = "", met: bool | None = None,
            note: str = "") -> None:
        rows.append({"workload": name, "measure": measure, "seed": s, "ours": o,
                     "ratio": None if ratio is None else round(ratio, 3), "target": target, "met": met,
                     "note": note})

    if name == "W0":
        s, o = seed.get("cpu_pct"), ours.get("cpu_pct")
        row(f"CPU, % of one core, over {P['w0_seconds']:g} s", f"{s:.3f} %" if s is not None else "n/a",
            f"{o:.3f} %" if o is not None else "n/a", factor(s, o, "lower"), "< 0.1 %",
            None if o is None else o < 0.1,
            f"the whole process tree: seed {seed.get('processes', 0):.0f} process(es), "
            f"{seed.get('threads', 0):.0f} threads; ours {ours.get('processes', 0):.0f} "
            f"(the daemon and its default worker), {ours.get('threads', 0):.0f} threads")
        s, o = seed.get("wakeups_per_s"), ours.get("wakeups_per_s")
        row("wake-ups/s (timeslices run, all threads)", f"{s:.1f}/s" if s is not None else "n/a",
            f"{o:.1f}/s" if o is not None else "n/a", factor(s, o, "lower"), "< 10/s",
            None if o is None else o < 10)
    elif name == "W1":
        for req in ("ping", "get_output"):
            for c in P["w1_clients"]:
                sk = f"{req}.c{c}.connection"
                for mode in ("connection", "keepalive"):
                    ok = f"{req}.c{c}.{mode}"
                    s_rps, o_rps = seed.get(f"{sk}.rps"), ours.get(f"{ok}.rps")
                    ratio = factor(s_rps, o_rps, "higher")
                    target, met = "", None
                    if c == 16 and ratio is not None:
                        target = ">=20x rps, p99 < 1 ms"
                        met = ratio >= 20 and ours.get(f"{ok}.p99_us", 1e9) < 1000
                    label = f"{req}, {c} client{'s' * (c > 1)}, " + (
                        "1 req/connection" if mode == "connection" else "ours keepalive vs seed 1 req/conn")
                    cell = lambda m, k: (f"{fmt(m.get(k + '.rps'), 'rps')} (p50 {fmt(m.get(k + '.p50_us'), 'us')}, "
                                         f"p99 {fmt(m.get(k + '.p99_us'), 'us')})") if m.get(k + ".rps") else "n/a"
                    errors = (seed.get(f"{sk}.errors") or 0) + (ours.get(f"{ok}.errors") or 0)
                    row(label, cell(seed, sk), cell(ours, ok), ratio, target, met,
                        f"{errors:.0f} errors" if errors else "")
    elif name == "W2":
        for n in sorted(set(P["w2_sessions"]) | set(P["w2_seed_sessions"])):
            s, o = seed.get(f"s{n}.makespan_s"), ours.get(f"s{n}.makespan_s")
            note = ""
            s_cell = fmt(s, "s") if n in P["w2_seed_sessions"] else "not run"
            if seed.get(f"s{n}.projected"):
                s_cell = f"~{fmt(s, 's')} (projected)"
                note = (f"seed capped at {P['w2_seed_cap']:g} s: {seed.get(f's{n}.done', 0):.0f} of {n} runs done; "
                        f"projected as n x time per run (its runs are serialised)")
            target, met = ("<= 1.3 s", o is not None and o <= 1.3) if n == 64 else ("", None)
            row(f"{n} session{'s' * (n > 1)} x {P['w2_deltas']} deltas {P['w2_ms']} ms apart, all done",
                s_cell, fmt(o, "s"), factor(s, o, "lower"), target, met, note)
    elif name == "W3":
        raw = ctx["log"].get("raw_deltas_per_s")
        o_rate = ours.get("deltas_per_s")
        s_rate = seed.get("deltas_per_s")
        full = full_size(P, full_sizes, "w3_deltas")
        row(f"{P['w3_sessions']} sessions x {P['w3_deltas']} deltas, deltas/s, the seed's in memory only "
            "(client saw done)",
            fmt(s_rate, "rps"), fmt(o_rate, "rps"), factor(s_rate, o_rate, "higher"),
            ">= the seed", None if not (s_rate and o_rate) or not full else o_rate >= s_rate,
            JUDGED_IN_FULL * (not full))
        row("the same, against raw SQLite's rate for our deltas", "", fmt(o_rate, "rps"), None,
            ">= 0.5x raw SQLite", None if not (raw and o_rate) or not full else o_rate >= 0.5 * raw,
            (f"ours = {o_rate / raw:.2f}x raw" if raw and o_rate else "") + JUDGED_IN_FULL * (not full))
        row("raw SQLite bulk insert of our deltas, a row each (hb_log_bench, one transaction)", "",
            fmt(raw, "rps"), None)
        writer = ctx["log"].get("writer64_deltas_per_s")
        row("log writer actor alone, 64 runs appending (hb_log_bench)", "", fmt(writer, "rps"), None,
            note=f"{writer / raw:.2f}x raw: the daemon's ceiling without the agent" if writer and raw else "")
        if ctx.get("agent_ceiling"):
            row(f"fake agent alone, same {P['w3_sessions']} concurrent streams, no bridge (deltas/s)", "",
                fmt(ctx["agent_ceiling"], "rps"), None,
                note=f"{P['w3_sessions']} Python threads sharing the GIL; the seed runs its turns one at a "
                     "time, which is why it can exceed this")
    elif name == "W4":
        s50, s99 = seed.get("poll100.p50_ms"), seed.get("poll100.p99_ms")
        for mode, label in (("subscribe", "subscription"), ("longpoll", "long-poll")):
            for q in ("p50", "p99"):
                o = ours.get(f"{mode}.{q}_ms")
                s = s50 if q == "p50" else s99
                target, met = ("< 5 ms", o is not None and o < 5) if q == "p99" else ("", None)
                first = not rows
                row(f"{q}, ours {label} vs seed polling at 100 ms", fmt(s, "ms"), fmt(o, "ms"),
                    factor(s, o, "lower"), target, met,
                    f"{P['w4_deltas']} deltas {P['w4_ms']} ms apart per session; seed: "
                    f"{seed.get('poll100.sessions', 0):.0f} sessions (its runs are serialised), ours: "
                    f"{ours.get(f'{mode}.sessions', 0):.0f}; deltas emitted before their client first asked "
                    f"are left out (they waited for the client): seed {seed.get('poll100.early', 0):.0f}, ours "
                    f"{ours.get(f'{mode}.early', 0):.0f}" if first else "")
    elif name == "W5":
        n = P["w5_deltas"]
        for key, label, target in (("tail", "tail get_output (seed request: full output included)", "< 1 ms"),
                                   ("tail_no_output", "tail get_output, include_output: false", "< 1 ms"),
                                   ("cursor0", "get_output at cursor 0", "")):
            s, o = seed.get(f"{key}.p50_ms"), ours.get(f"{key}.p50_ms")
            row(f"{n:,} deltas: {label}, p50", fmt(s, "ms"), fmt(o, "ms"), factor(s, o, "lower"), target,
                (o < 1) if target and o is not None else None,
                f"answer size seed {fmt(seed.get(key + '.kb'), 'kB')}, ours {fmt(ours.get(key + '.kb'), 'kB')}")
        o = ours.get("replay.s")
        row(f"{n:,} deltas: replay --json --instant, whole run", "", fmt(o, "s"), None, "< 1 s",
            None if o is None else o < 1, f"{fmt(ours.get('replay.kb'), 'kB')} of JSON lines; the seed keeps no runs")
    elif name == "W6":
        log = ctx["log"]
        o = ours.get("log.ready_ms")
        row(f"ours on a {log.get('events', 0):,}-event log ({log.get('log_mb', 0):.0f} MB); "
            "seed: nothing to recover", fmt(seed.get("empty.ready_ms"), "ms"), fmt(o, "ms"),
            factor(seed.get("empty.ready_ms"), o, "lower"), "< 1 s", None if o is None else o < 1000)
        row("empty state", fmt(seed.get("empty.ready_ms"), "ms"), fmt(ours.get("empty.ready_ms"), "ms"),
            factor(seed.get("empty.ready_ms"), ours.get("empty.ready_ms"), "lower"))
    elif name == "W7":
        s, o = seed.get("idle_per_session_kb"), ours.get("idle_per_session_kb")
        row(f"RSS growth per idle session ({P['w7_sessions']} sessions, one chat each)", fmt(s, "kB"),
            fmt(o, "kB"), factor(s, o, "lower"), "<= 1.5x seed",
            None if s is None or o is None else o <= 1.5 * max(s, 1e-9))
        row("RSS at start (after one chat)", fmt(seed.get("rss_start_mb"), "MB"),
            fmt(ours.get("rss_start_mb"), "MB"), factor(seed.get("rss_start_mb"), ours.get("rss_start_mb"), "lower"))
        mb = P["w7_run_mb"]
        s, o = seed.get("run_streaming_growth_mb"), ours.get("run_streaming_growth_mb")
        row(f"RSS growth while one {mb} MB run streams to a client", fmt(s, "MB"), fmt(o, "MB"),
            factor(s, o, "lower"), "< half the run's text",
            None if o is None or not full_size(P, full_sizes, "w7_run_mb") else o < mb / 2,
            note="ours followed by a subscription, the seed's by get_output every 100 ms; "
                 "while it streams: until 3/4 of its deltas are in (ours: committed; the seed: polled)"
                 + JUDGED_IN_FULL * (not full_size(P, full_sizes, "w7_run_mb")))
        s, o = seed.get("run_peak_growth_mb"), ours.get("run_peak_growth_mb")
        row(f"RSS growth, {mb} MB run, peak including its end", fmt(s, "MB"), fmt(o, "MB"), factor(s, o, "lower"),
            note="at its end the agent returns the text twice in its result (final_response and messages), "
                 "which get_output hands to clients as the seed does")
        s, o = seed.get("run_after_growth_mb"), ours.get("run_after_growth_mb")
        row(f"RSS growth, {mb} MB run, after it ended", fmt(s, "MB"), fmt(o, "MB"), factor(s, o, "lower"),
            note="both keep the session's conversation (the text) for its next turn")
    return rows


def print_table(rows: list[dict], out=sys.stdout) -> None:
    head = ["", "measure", "seed", "ours", "ours vs seed", "target", ""]
    body = []
    for r in rows:
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        met = "" if r["met"] is None else ("met" if r["met"] else "MISSED")
        body.append([r["workload"], r["measure"], r["seed"], r["ours"], ratio, r["target"], met])
    print_markdown(head, body, out)
    notes = [f"{r['workload']} {r['measure']}: {r['note']}" for r in rows if r["note"]]
    if notes:
        print("\nNotes:", file=out)
        for n in notes:
            print(f"- {n}", file=out)
