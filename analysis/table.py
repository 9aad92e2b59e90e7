#!/usr/bin/python3
"""Print the per-step tables of a bench run from its raw files (laid out
like the table in upstream 9783aa9917f8's commit message).

usage: table.py RUN_DIR [BASELINE_KERNEL]

For every scenario of the run, and every step: the workload's page scan
rate over the step's measuring window, mean ± 95% confidence interval (n
repeats) per kernel, each kernel as % of the baseline (control when
present) with Welch's p; when the scenario has a competitor, the scan
fraction (the workload's scanned share of its LRU over the competitor's)
beside each kernel's formula; the peer's rates when it has a peer; how
each job ended when there were OOM kills. The full report (every metric,
the model, plots) is report.py.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import analyse  # noqa: E402
import rundata  # noqa: E402
import stats  # noqa: E402

MIB = 2 ** 20


def p_text(p):
    return "-" if p is None else ("<0.001" if p < 0.001 else f"{p:.3f}")


def print_fraction_table(sr):
    """The workload's scanned share of its LRU over the competitor's, per
    kernel, beside its formula; each kernel against the baseline in
    percentage points."""
    base = sr.baseline
    others = [k for k in sr.kernels if k != base]
    cols = [f"memory.{sr.knob}", "value"]
    for k in others + [base]:
        cols += [k, "model"]
    for k in others:
        cols += [f"{k} - {base}", "p", "detectable"]
    rows = []
    for n in sr.step_numbers():
        st = sr.steps[n]
        row = [st.requested, f"{st.value / MIB:.0f}M"]
        for k in others + [base]:
            m = sr.model_fraction(k, n)
            row += [stats.text(sr.summary(k, n, "scan_fraction"), 100, 1, "%"),
                    "-" if m is None else f"{100 * m:.1f}%"]
        for k in others:
            a, b = sr.values(k, n, "scan_fraction"), sr.values(base, n, "scan_fraction")
            w = stats.welch(a, b)
            diff = "n/a" if not a or not b else f"{100 * (stats.mean(a) - stats.mean(b)):+.1f}"
            d = stats.detectable(a, b)
            row += [diff, p_text(w[2] if w else None), "-" if d is None else f"{100 * d:.1f}"]
        rows.append(row)
    refused = []
    for k in sr.kernels:
        for n in sr.step_numbers():
            req = sum(sr.values(k, n, "reclaim_requests"))
            failed = sum(sr.values(k, n, "reclaim_failed"))
            if failed:
                most = " (most refused: the fraction there is of little reclaim)" if 2 * failed > req else ""
                refused.append(f"  {k} {sr.steps[n].requested}: {failed:.0f} of {req:.0f} requests{most}")
    print(f"\n{sr.scenario}: scan fraction of {sr.cgroup_name()}: its scanned share of its LRU"
          f" (pgscan + pgrefill over active + inactive) over {sr.cgroup_name(analyse.COMPETITOR)}'s,"
          " mean ± 95% CI (repeats), beside each kernel's formula; differences in points, and the"
          " smallest difference the run could detect (p < 0.05, 80% power)")
    stats.print_table(cols, rows, right=True)
    if refused:
        print(f"memory.reclaim requests the kernel refused (EAGAIN) inside the windows:")
        print("\n".join(refused))


def print_table(sr, cgroup):
    base = sr.baseline
    others = [k for k in sr.kernels if k != base]
    knob = f"memory.{sr.knob}"
    cols = [knob, "value"] + others + [base]
    for k in others:
        cols += [f"{k} % of {base}", "p"]
    rows = []
    for n in sr.step_numbers():
        st = sr.steps[n]
        row = [st.requested, f"{st.value / MIB:.0f}M"]
        row += [stats.text(sr.summary(k, n, "pgscan/s", cgroup)) for k in others + [base]]
        for k in others:
            pct, p = sr.versus(k, n, cgroup=cgroup)
            row += ["n/a" if pct is None else f"{pct:.0f}%", p_text(p)]
        rows.append(row)
    print(f"\n{sr.scenario}: {sr.cgroup_name(cgroup)} pgscan/s over each step's window, mean ± 95% CI (repeats)")
    stats.print_table(cols, rows, right=True)


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        run = rundata.Run(argv[1])
        results = analyse.analyse(run, argv[2] if len(argv) > 2 else None)
    except (rundata.RunError, ValueError) as e:
        print(f"table.py: {e}", file=sys.stderr)
        return 2
    for sr in results:
        if not sr.steps:
            continue
        print_table(sr, analyse.PRIMARY)
        if sr.has_competitor:
            print_fraction_table(sr)
        if sr.has_peer:
            print_table(sr, analyse.PEER)
            print(f"\n{sr.scenario}: {sr.cgroup_name()} pgscan (and memory.current) as % of"
                  f" {sr.cgroup_name(analyse.PEER)}'s"
                  " (model: low-reclaim pass)")
            for n in sr.step_numbers():
                cells = []
                for k in sr.kernels:
                    r, m = sr.peer_ratio(k, n), sr.peer_ratio_model(k, n)
                    u = sr.peer_ratio(k, n, "memory.current")
                    cells.append(f"{k} {'n/a' if r is None else f'{100 * r:.0f}%'}"
                                 f" (model {'n/a' if m is None else f'{100 * m:.0f}%'};"
                                 f" memory.current {'n/a' if u is None else f'{100 * u:.0f}%'})")
                print(f"  {sr.steps[n].requested}: " + ", ".join(cells))
        stories = [(k, rep, s) for k in sr.kernels for rep, s in sorted(sr.ooms.get(k, []))]
        if any(s.get("oom_kills") or s.get("held_report") for _, _, s in stories):
            print(f"\n{sr.scenario}: OOM kills and how far the workload got")
            for k, rep, s in stories:
                first = "none" if s["first_oom_s"] is None else f"at {s['first_oom_s']:.0f}s"
                held = s.get("held_report")
                held = "-" if held is None else f"{held / MIB:.0f}M"
                print(f"  {k} r{rep}: workload {s.get('workload_result') or '-'}, "
                      f"{s['oom_kills'] or 0:.0f} OOM kills (first {first}), ramp held {held}, "
                      f"low events {s.get('events.low') or 0:.0f}")
    problems = [p for sr in results for p in sr.problems]
    for p in run.problems:
        print(f"missing: {p}")
    if problems:
        print(f"\n{len(problems)} notes on the data (report.py lists them), e.g.: {problems[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
