#!/usr/bin/env python3
"""Print the seed-009-style table of a bench run from its raw files.

usage: table.py RUN_DIR [BASELINE_KERNEL]

For every scenario in the run, and every step: the workload slice's page
scan rate (memory.stat pgscan) over the step's measuring window, mean and
standard deviation over repeats, for each kernel, and each kernel as a
percentage of the baseline (control when present). Uses only the standard
library; the full analysis (statistics, plots, report) builds on the same
files.
"""
import csv
import os
import statistics
import sys

CGROUP = "workload.slice"


def read_steps(path):
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def window_rates(samples_path, key="pgscan", source="memory.stat"):
    """{step label: rate per second} from the first and last sample of each
    measuring window (labels sN; settling samples are labelled sN-settle)."""
    first, last = {}, {}
    with open(samples_path) as f:
        lines = (line for line in f if not line.startswith("#"))
        for row in csv.DictReader(lines):
            if row["cgroup"] != CGROUP or row["source"] != source or row["key"] != key:
                continue
            step = row["step"]
            if not (step.startswith("s") and step[1:].isdigit()):
                continue
            point = (float(row["time_s"]), int(row["value"]))
            first.setdefault(step, point)
            last[step] = point
    rates = {}
    for step, (t0, v0) in first.items():
        t1, v1 = last[step]
        if t1 > t0 and v1 >= v0:
            rates[step] = (v1 - v0) / (t1 - t0)
    return rates


def fmt_size(b):
    """Bytes as MiB, the unit the scenarios use."""
    return f"{float(b) / 2**20:.0f}M"


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    run = argv[1]
    baseline = argv[2] if len(argv) > 2 else None
    if not os.path.isdir(run):
        print(f"table.py: '{run}' is not a run directory", file=sys.stderr)
        return 2
    failed = []
    # (scenario, kernel, repeat) -> status, as bench.sh recorded it.
    manifest = {}
    try:
        with open(os.path.join(run, "manifest.tsv")) as f:
            for line in f:
                fields = line.rstrip("\n").split("\t")
                if len(fields) >= 4:
                    manifest[tuple(fields[:3])] = fields[3]
    except FileNotFoundError:
        pass
    for scenario in sorted(d for d in os.listdir(run) if os.path.isdir(os.path.join(run, d)) and not d.startswith(".")):
        sdir = os.path.join(run, scenario)
        kernels = sorted(os.listdir(sdir))
        data = {}  # kernel -> step -> [rates]
        steps_meta = {}  # step -> (requested, [value bytes])
        knob = "memory.low"
        for k in kernels:
            for rep in sorted(os.listdir(os.path.join(sdir, k))):
                jdir = os.path.join(sdir, k, rep)
                out = os.path.join(jdir, "guest", "out")
                steps_tsv = os.path.join(out, "steps.tsv")
                samples = os.path.join(out, "samples.csv")
                if not (os.path.exists(steps_tsv) and os.path.exists(samples)):
                    status = manifest.get((scenario, k, rep.lstrip("r")), "not run yet")
                    failed.append(f"{scenario}/{k}/{rep}: no results ({status})")
                    continue
                rates = window_rates(samples)
                for st in read_steps(steps_tsv):
                    label = st["label"]
                    knob = "memory." + st["knob"]
                    req, vals = steps_meta.setdefault(int(st["step"]), (st["requested"], []))
                    vals.append(int(st["value_bytes"]))
                    if label in rates:
                        data.setdefault(k, {}).setdefault(int(st["step"]), []).append(rates[label])
                    else:
                        failed.append(f"{scenario}/{k}/{rep}: no samples in the window of step {label}")
        if not data:
            continue
        ks = [k for k in kernels if k in data]
        base = baseline if baseline in ks else ("control" if "control" in ks else ks[0])
        others = [k for k in ks if k != base]
        print(f"\n{scenario}: {CGROUP} pgscan/s over each step's window, mean (sd, n) over repeats")
        head = f"| {knob:>10} | {'value':>6} |" + "".join(f" {k:>22} |" for k in others + [base])
        head += "".join(f" {k + ' % of ' + base:>20} |" for k in others)
        print(head)
        print("|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|")
        for step in sorted(steps_meta):
            req, vals = steps_meta[step]
            line = f"| {req:>10} | {fmt_size(statistics.mean(vals)):>6} |"
            means = {}
            for k in others + [base]:
                r = data.get(k, {}).get(step, [])
                if r:
                    means[k] = statistics.mean(r)
                    sd = statistics.stdev(r) if len(r) > 1 else 0.0
                    line += f" {means[k]:>10.0f} ({sd:>5.0f}, {len(r)}) |"
                else:
                    line += f" {'-':>22} |"
            for k in others:
                # A percentage of (almost) nothing says nothing.
                if k in means and means.get(base, 0) >= 1:
                    line += f" {100 * means[k] / means[base]:>19.0f}% |"
                else:
                    line += f" {'n/a':>20} |"
            print(line)
    for f in failed:
        print(f"missing: {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
