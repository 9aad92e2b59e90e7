#!/usr/bin/python3
"""Compare two bench runs: the same kernel, scenario and step in run A and
run B, the workload's pgscan/s mean ± 95% CI in each, B as % of A, and
Welch's p. An A/A check (the same kernels run twice) should show no small
p-values beyond what chance gives.

usage: compare.py RUN_A RUN_B [--metric KEY]

KEY is a per-window metric of the registry in metrics.py (METRICS):
pgscan/s (default), scanned/s, pgsteal/s, refaults/s, pgmajfault/s,
psi_some%, psi_full%, memory.current, lru_pages, scan_share%, app_rate,
events.low, events.oom_kill, or scan_fraction (in %, compared as B - A in
points).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import analyse  # noqa: E402
import metrics  # noqa: E402
import rundata  # noqa: E402
import stats  # noqa: E402



def compare(a_dir, b_dir, metric="pgscan/s"):
    """(rows, notes): rows of [scenario, kernel, step, A, B, B % of A (or,
    for a fraction, B - A in points), p]."""
    m = metrics.metric(metric)
    a = {sr.scenario: sr for sr in analyse.analyse(rundata.Run(a_dir))}
    b = {sr.scenario: sr for sr in analyse.analyse(rundata.Run(b_dir))}
    rows, notes = [], []
    for scenario in sorted(set(a) | set(b)):
        if scenario not in a or scenario not in b:
            notes.append(f"scenario {scenario} is only in run {'A' if scenario in a else 'B'}")
            continue
        sa, sb = a[scenario], b[scenario]
        for k in sorted(set(sa.kernels) | set(sb.kernels)):
            if k not in sa.kernels or k not in sb.kernels:
                notes.append(f"{scenario}: kernel {k} is only in run {'A' if k in sa.kernels else 'B'}")
                continue
            for n in sorted(set(sa.steps) & set(sb.steps)):
                if sa.steps[n].requested != sb.steps[n].requested:
                    notes.append(f"{scenario} step {n}: {sa.steps[n].requested} in A, "
                                 f"{sb.steps[n].requested} in B; not compared")
                    continue
                xa, xb = sa.values(k, n, metric), sb.values(k, n, metric)
                w = stats.welch(xa, xb)
                cells = [stats.text(stats.summary(x), m.scale, m.digits, m.unit) for x in (xa, xb)]
                if m.compare == "points":
                    cells.append("n/a" if not xa or not xb else
                                 f"{m.scale * (stats.mean(xb) - stats.mean(xa)):+.1f} points")
                else:
                    pct = None
                    if xa and xb and stats.mean(xa) * m.scale >= 1:
                        pct = 100 * stats.mean(xb) / stats.mean(xa)
                    cells.append("n/a" if pct is None else f"{pct:.0f}%")
                rows.append([scenario, k, sa.steps[n].requested] + cells + [
                             "-" if w is None else ("<0.001" if w[2] < 0.001 else f"{w[2]:.3f}")])
    return rows, notes


def main(argv):
    ap = argparse.ArgumentParser(prog="compare.py", description="Compare two bench runs.")
    ap.add_argument("a", help="run A (the reference)")
    ap.add_argument("b", help="run B")
    ap.add_argument("--metric", default="pgscan/s", help="per-window metric (default pgscan/s)")
    args = ap.parse_args(argv[1:])
    try:
        rows, notes = compare(args.a, args.b, args.metric)
    except (rundata.RunError, ValueError) as e:
        print(f"compare.py: {e}", file=sys.stderr)
        return 2
    print(f"A = {args.a}\nB = {args.b}\nthe workload's {args.metric}, mean ± 95% CI (repeats)\n")
    head = ["scenario", "kernel", "step", "A", "B",
            "B - A" if metrics.metric(args.metric).compare == "points" else "B % of A", "p"]
    stats.print_table(head, rows)
    small = sum(1 for r in rows if r[-1] not in ("-",) and (r[-1] == "<0.001" or float(r[-1]) < 0.05))
    tested = sum(1 for r in rows if r[-1] != "-")
    print(f"\n{small} of {tested} comparisons with p < 0.05 (by chance alone, about {0.05 * tested:.1f})")
    for n in notes:
        print(f"note: {n}")
    if not rows:
        print("compare.py: nothing in common to compare", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
