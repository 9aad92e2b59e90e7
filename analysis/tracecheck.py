#!/usr/bin/env python3
"""The formula check of the trace arms: every scan target the kernel
computed, recomputed from its inputs.

A trace arm (K+trace, patches/trace/) emits mm_vmscan_memcg_protection
each time its protection scaling runs for one LRU list of a protected
memcg: the list's size L, the effective min and low, the usage the scaling
read, whether it is the low-reclaim pass, and the scan target it computed
(before the shift by priority). The guest records the events inside the
measuring windows (trace.log, with a marker at each window's start and
end). This module recomputes each target with the variant's formula in the
kernel's own arithmetic (unsigned 64-bit, integer division, the same
clamps) and counts the events that match exactly: anything short of all of
them is a bug in the port or in this model.

It also sums, per step, the targets of the workload's memcg after the
priority shift (what get_scan_count() hands shrink_lruvec(), per call)
beside what the window measured (pgscan + pgrefill): how much of the target
reclaim went on to scan.

    analysis/tracecheck.py RUN           the check, as a table; exit 1 on a mismatch,
                                         a job without events or lost events
"""

import argparse
import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import metrics  # noqa: E402
import model  # noqa: E402
import rundata  # noqa: E402

U64 = (1 << 64) - 1
SWAP_CLUSTER_MAX = 32
# The kernel's enum lru_list; NR_LRU_LISTS (5) is MGLRU's whole lruvec.
LRU_NAMES = ("inactive_anon", "active_anon", "inactive_file", "active_file", "unevictable", "lruvec")
FIELDS = ("memcg", "nid", "lru", "size", "priority", "min", "low", "usage", "scan", "low_reclaim")
# "  <task>-<pid>  [cpu] flags  123.456789: event: text"
LINE = re.compile(r"^\s*(?P<task>.*?)-(?P<pid>\d+)\s+(?:\(.*?\)\s+)?\[(?P<cpu>\d+)\]\s+(?:\S+\s+)?"
                  r"(?P<ts>\d+\.\d+): (?P<event>\w+): (?P<text>.*)$")
MARK = re.compile(r"^bench-window (?P<label>\S+) (?P<edge>start|end)$")


class TraceError(Exception):
    pass


def _clamp_54(scan, lruvec_size):
    """clamp(scan, SWAP_CLUSTER_MAX, lruvec_size) as Linux 5.4 had it:
    min(max(...)), so the upper bound wins on a list smaller than 32."""
    return min(max(scan, SWAP_CLUSTER_MAX), lruvec_size)


def kernel_scan(formula, size, emin, elow, usage, low_reclaim):
    """The scan target (before the priority shift) that the variant with
    this formula computes for one list of a protected memcg (emin or elow
    not 0), in get_scan_count()'s arithmetic. Sizes in pages."""
    L, C = size, usage
    if formula == "cliff":
        return L
    if formula == "9783aa":
        protection = max(emin, elow)
        baseline = 0 if low_reclaim else L
        return _clamp_54(((L * C & U64) // protection - baseline) & U64, L)
    if formula == "9de7ca":
        if low_reclaim and elow > emin:
            scan = (L * ((C - emin) & U64) & U64) // (elow - emin)
        else:
            scan = ((L * C & U64) // max(emin, elow) - L) & U64
        return _clamp_54(scan, L)
    if formula == "1bc63f":
        protection = emin if low_reclaim else max(emin, elow)
        if not protection:
            return L
        C = max(C, protection)
        return max((L - (L * protection & U64) // C) & U64, SWAP_CLUSTER_MAX)
    if formula == "6.1":
        protection = elow if not low_reclaim and elow > emin else emin
        C = max(C, protection)
        return max((L - (L * protection & U64) // (C + 1)) & U64, SWAP_CLUSTER_MAX)
    raise ValueError(f"no formula '{formula}' (one of: {', '.join(model.FORMULAS)})")


class Event(collections.namedtuple("Event", "ts label " + " ".join(FIELDS))):
    def inputs(self):
        lru = LRU_NAMES[self.lru] if 0 <= self.lru < len(LRU_NAMES) else str(self.lru)
        return (f"{lru} L={self.size} min={self.min} low={self.low} usage={self.usage} "
                f"{'low-reclaim pass' if self.low_reclaim else 'first pass'}")


def read_trace(path):
    """(events, windows) from a trace.log: events inside a window, each with
    its window's label; windows {label: (start, end)} in trace seconds. A
    line that is neither an event of ours nor a marker is skipped (the
    reader may be cut off at the end); an event outside any window is an
    error, since the guest enables the event only inside them."""
    events, windows = [], {}
    open_label = None
    try:
        f = open(path, errors="replace")
    except OSError as e:
        raise TraceError(f"{path}: {e.strerror}") from None
    with f:
        for n, line in enumerate(f, 1):
            m = LINE.match(line)
            if not m:
                continue
            ts = float(m["ts"])
            if m["event"] == "tracing_mark_write":
                mk = MARK.match(m["text"].strip())
                if not mk:
                    continue
                if mk["edge"] == "start":
                    open_label = mk["label"]
                    windows[open_label] = (ts, None)
                elif open_label == mk["label"]:
                    windows[open_label] = (windows[open_label][0], ts)
                    open_label = None
                continue
            if m["event"] != "mm_vmscan_memcg_protection":
                continue
            kv = dict(w.split("=", 1) for w in m["text"].split() if "=" in w)
            try:
                vals = [int(kv[k]) for k in FIELDS]
            except (KeyError, ValueError):
                raise TraceError(f"{path}:{n}: not an mm_vmscan_memcg_protection event: "
                                 f"{m['text'].strip()!r}") from None
            if open_label is None:
                raise TraceError(f"{path}:{n}: an event outside every measuring window")
            events.append(Event(ts, open_label, *vals))
    return events, windows


def lost_events(out):
    """Events the trace buffer dropped (trace-stats: cpu N overrun M), or None."""
    try:
        with open(os.path.join(out, "trace-stats")) as f:
            return sum(int(w[3]) for w in (line.split() for line in f) if len(w) == 4)
    except (FileNotFoundError, ValueError):
        return None


class JobCheck:
    """The check of one job's events against a formula."""

    def __init__(self, job, formula):
        self.job = job
        self.formula = formula
        self.events, self.windows = read_trace(os.path.join(job.out, "trace.log"))
        self.lost = lost_events(job.out)
        cgs = rundata.read_tsv(os.path.join(job.out, "trace-cgroups.tsv")) or []
        self.cgroups = {int(r["ino"]): r["path"] for r in cgs if r.get("ino", "").isdigit()}
        wanted = ((e, kernel_scan(formula, e.size, e.min, e.low, e.usage, e.low_reclaim)) for e in self.events)
        self.mismatches = [(e, want) for e, want in wanted if want != e.scan]

    @property
    def exact(self):
        return len(self.events) - len(self.mismatches)

    def steps(self):
        """Per step of the job: (label, requested, events, low-reclaim
        events, sum of the workload's shifted targets per second, the
        window's measured scanned pages per second)."""
        unit = self.job.cgroup("workload_unit")
        inos = {i for i, p in self.cgroups.items() if p == unit}
        rows = []
        for st in self.job.steps or []:
            label = st["label"]
            evs = [e for e in self.events if e.label == label]
            start, end = self.windows.get(label, (None, None))
            secs = end - start if start is not None and end is not None else None
            target = sum(e.scan >> e.priority for e in evs if e.memcg in inos)
            measured = None
            if self.job.ok:
                w = metrics.window(self.job, st, "workload_unit")
                measured = w["scanned/s"]
            rows.append((label, st.get("requested", ""), len(evs), sum(1 for e in evs if e.low_reclaim),
                         target / secs if secs else None, measured))
        return rows


def check_run(run):
    """[JobCheck] for every job of the run that has a trace.log, with the
    formula of its kernel's variant (the variant's own: the event is
    emitted by the scaling code whichever LRU calls it)."""
    checks = []
    for job in run.jobs:
        if not os.path.exists(os.path.join(job.out, "trace.log")):
            continue
        formula = model.formula_of(job.kernel.partition("@")[0])
        if formula is None:
            raise TraceError(f"{job.name}: kernel {job.kernel} has no formula (model= in patches/variants)")
        checks.append(JobCheck(job, formula))
    return checks


def _fmt(v, digits=0):
    return "-" if v is None else f"{v:,.{digits}f}"


def section(checks):
    """(summary rows, step rows, problem lines) for a report: the first
    mismatches of each job, a job without events, events the buffer lost."""
    summary, steps, bad = [], [], []
    for c in checks:
        lost = "-" if c.lost is None else str(c.lost)
        summary.append([c.job.name, c.formula, str(len(c.events)), str(c.exact),
                        f"{100 * c.exact / len(c.events):.1f}%" if c.events else "-", lost])
        for label, req, n, nlow, target, measured in c.steps():
            ratio = f"{100 * measured / target:.0f}%" if target and measured is not None else "-"
            steps.append([c.job.name, f"{label} ({req})", str(n), str(nlow), _fmt(target), _fmt(measured), ratio])
        if not c.events:
            bad.append(f"{c.job.name}: no events in its windows")
        if c.lost:
            bad.append(f"{c.job.name}: the trace buffer lost {c.lost} events; the ones recorded were checked")
        for e, want in c.mismatches[:5]:
            bad.append(f"{c.job.name} {e.label} t={e.ts:.6f} memcg {c.cgroups.get(e.memcg, e.memcg)}: "
                       f"{e.inputs()}: the kernel computed {e.scan}, {c.formula} gives {want}")
        if len(c.mismatches) > 5:
            bad.append(f"{c.job.name}: ... and {len(c.mismatches) - 5} more")
    return summary, steps, bad


SUMMARY_HEADER = ["job", "formula", "events", "exact", "share exact", "lost"]
STEP_HEADER = ["job", "step", "events", "low-reclaim pass", "workload target pages/s",
               "workload scanned pages/s", "scanned of target"]


def _table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def main(argv):
    ap = argparse.ArgumentParser(prog="tracecheck.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="a run directory with trace-arm jobs, e.g. results/RUN")
    a = ap.parse_args(argv[1:])
    try:
        run = rundata.Run(a.run)
        checks = check_run(run)
    except (rundata.RunError, TraceError, ValueError) as e:
        print(f"tracecheck.py: {e}", file=sys.stderr)
        return 2
    if not checks:
        print(f"tracecheck.py: no job of {a.run} has a trace.log (run a K+trace kernel)", file=sys.stderr)
        return 2
    summary, steps, bad = section(checks)
    print(_table(SUMMARY_HEADER, summary))
    print()
    print(_table(STEP_HEADER, steps))
    if bad:
        print()
        print("Events that do not match their formula, and jobs whose events are missing:")
        for line in bad:
            print("- " + line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
