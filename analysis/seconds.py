#!/usr/bin/python3
"""The scan fraction second by second: where a run's spread comes from.

usage: seconds.py RUN_DIR [SCENARIO]

For every scenario of the run with a competitor (the targeted-reclaim
ones), every step and kernel: the scan fraction of the step's window over
the repeats (mean and coefficient of variation), the fraction of every
sampling interval inside each window (metrics.per_second), their spread
inside a window (the per-second CV, averaged over the repeats), and the CV
a window's mean would have if its seconds were independent draws with
that spread (per-second CV / sqrt(seconds)). A repeat CV well above that
last number means the jobs differ from each other (usage, timing, a
cgroup cut short), not that six seconds are too few to count in; about
equal means longer windows or more repeats would narrow it.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import analyse  # noqa: E402
import metrics  # noqa: E402
import rundata  # noqa: E402
import stats  # noqa: E402


def cv(xs):
    """Coefficient of variation in %, None for fewer than two values or a
    mean of zero."""
    xs = [x for x in xs if x is not None]
    if len(xs) < 2 or not stats.mean(xs):
        return None
    return 100 * stats.sd(xs) / abs(stats.mean(xs))


def pct(x, digits=1):
    return "-" if x is None else f"{x:.{digits}f}"


def step_rows(sr):
    """One row per (step, kernel): the table's cells, and each repeat's
    per-second fractions."""
    jobs = {(j.kernel, j.repeat): j for j in sr.jobs}
    rows, detail = [], []
    for n in sr.step_numbers():
        st = sr.steps[n]
        for k in sr.kernels:
            window = [x for x in sr.values(k, n, "scan_fraction") if x is not None]
            within, lengths = [], []
            for (kernel, rep), job in sorted(jobs.items()):
                if kernel != k:
                    continue
                row = next((r for r in job.steps if int(r["step"]) == n), None)
                if row is None:
                    continue
                secs = [f for _, f in metrics.per_second(job, row)]
                detail.append((st.requested, k, rep, secs))
                got = [f for f in secs if f is not None]
                c = cv(got)
                if c is not None:
                    within.append(c)
                    lengths.append(len(got))
            w_cv = stats.mean(within) if within else None
            expect = w_cv / math.sqrt(stats.mean(lengths)) if w_cv is not None else None
            rows.append([st.requested, k, str(len(window)),
                         "-" if not window else f"{100 * stats.mean(window):.1f}%",
                         pct(cv(window)), pct(w_cv), pct(expect)])
    return rows, detail


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        run = rundata.Run(argv[1])
        results = analyse.analyse(run)
    except (rundata.RunError, ValueError) as e:
        print(f"seconds.py: {e}", file=sys.stderr)
        return 2
    want = argv[2] if len(argv) > 2 else None
    if want and want not in [sr.scenario for sr in results]:
        print(f"seconds.py: no scenario '{want}' in {argv[1]} "
              f"({', '.join(sr.scenario for sr in results)})", file=sys.stderr)
        return 2
    shown = 0
    for sr in results:
        if (want and sr.scenario != want) or not sr.has_competitor or not sr.steps:
            continue
        shown += 1
        rows, detail = step_rows(sr)
        print(f"\n{sr.scenario}: scan fraction of {sr.cgroup_name()} over"
              f" {sr.cgroup_name(analyse.COMPETITOR)}'s, per window and per second")
        stats.print_table([f"memory.{sr.knob}", "kernel", "n", "window mean", "repeat CV %",
                           "per-second CV %", "÷ √seconds %"], rows, right=True)
        print(f"\n{sr.scenario}: every second of every window, scan fraction in %")
        for requested, k, rep, secs in detail:
            print(f"  {requested:>6} {k} r{rep}: " + " ".join(pct(None if f is None else 100 * f) for f in secs))
    if not shown:
        print(f"seconds.py: no scenario of {argv[1]} has a competitor"
              f"{' (' + want + ')' if want else ''}: nothing to show", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
