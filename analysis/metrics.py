"""Per-job, per-step numbers from a job's samples: rates from counter deltas
over each step's measuring window, means of gauges, event counts.

Only samples labelled with the step's window label ("s3") count; settling
samples ("s3-settle") and everything else are left out. A counter that goes
down inside a window (a reset, or a cgroup that was re-created) and a gap
between samples longer than 2.5 sampling intervals are reported as problems;
a rate is then taken over the intervals that are sound, never across them.
"""

import collections

# name: (source, keys summed, unit of the per-second rate)
COUNTERS = {
    "pgscan": ("memory.stat", ("pgscan",)),
    # Every LRU page reclaim looked at: the inactive lists' (pgscan) and the
    # active lists' (pgrefill, deactivation). get_scan_count()'s target is a
    # fraction of each list, so this over the LRU size is the fraction.
    "scanned": ("memory.stat", ("pgscan", "pgrefill")),
    "pgsteal": ("memory.stat", ("pgsteal",)),
    "refaults": ("memory.stat", ("workingset_refault_anon", "workingset_refault_file")),
    "pgmajfault": ("memory.stat", ("pgmajfault",)),
}
# Global page scanning, for the workload's share of it.
GLOBAL_SCAN = ("pgscan_kswapd", "pgscan_direct", "pgscan_khugepaged")
EVENTS = ("low", "high", "max", "oom", "oom_kill")
# The LRU lists a cgroup's memory.stat reports, in bytes.
LRU_LISTS = ("inactive_anon", "active_anon", "inactive_file", "active_file")
PAGE = 4096
# The app counter that is a workload's own throughput, in order of preference.
APP_RATES = (("pages_touched", "touch/s"), ("bytes", "bytes/s"))

GAP_FACTOR = 2.5


class Metric(collections.namedtuple("Metric", "name label scale digits unit compare")):
    """A per-window number of a cgroup, as window() stores it under name:
    label for tables, shown times scale with digits decimals and unit;
    compare says how two runs compare it: "ratio" (B as % of A) or
    "points" (a fraction: B - A in percentage points)."""


MIB = 2 ** 20
# The registry: every per-window metric the comparisons and the report
# know, in the order the report shows them. window() computes them.
METRICS = (
    Metric("pgscan/s", "pgscan/s", 1, 0, "", "ratio"),
    Metric("scanned/s", "pgscan + pgrefill/s", 1, 0, "", "ratio"),
    Metric("pgsteal/s", "pgsteal/s", 1, 0, "", "ratio"),
    Metric("refaults/s", "refaults/s", 1, 0, "", "ratio"),
    Metric("pgmajfault/s", "pgmajfault/s", 1, 1, "", "ratio"),
    Metric("psi_some%", "PSI some %", 1, 1, "", "ratio"),
    Metric("psi_full%", "PSI full %", 1, 1, "", "ratio"),
    Metric("memory.current", "memory.current", 1 / MIB, 0, "M", "ratio"),
    Metric("lru_pages", "LRU pages", 1, 0, "", "ratio"),
    Metric("scan_share%", "share of all scanning", 1, 1, "%", "ratio"),
    Metric("app_rate", "workload rate", 1, 0, "", "ratio"),
    Metric("events.low", "low events", 1, 0, "", "ratio"),
    Metric("events.oom_kill", "oom_kill", 1, 0, "", "ratio"),
    Metric("scan_fraction", "scan fraction", 100, 1, "%", "points"),
)
_BY_NAME = {m.name: m for m in METRICS}


def metric(name):
    """The registry's Metric called name, or ValueError listing them."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown metric '{name}' (one of: {', '.join(_BY_NAME)})") from None


class Window:
    """One step of one job, for one cgroup."""

    def __init__(self, job, step, cgroup):
        self.job = job
        self.step = step  # a steps.tsv row
        self.cgroup = cgroup
        self.values = {}
        self.problems = []

    def __getitem__(self, key):
        return self.values.get(key)


def _points(series, label, until=None):
    return [(t, v) for t, step, v in series if step == label and (until is None or t < until)]


def rate(points, interval, what, problems):
    """Per-second rate over (t, value) points, skipping intervals where the
    counter went down or samples are missing, and saying so in problems."""
    if not points:
        return None  # not recorded at all (an older collector, a gauge-only fixture)
    if len(points) < 2:
        problems.append(f"{what}: fewer than two samples in the window")
        return None
    total = span = 0.0
    for (t0, v0), (t1, v1) in zip(points, points[1:]):
        dt = t1 - t0
        if dt <= 0:
            problems.append(f"{what}: time does not advance at {t1:.3f}s")
            continue
        if v1 < v0:
            problems.append(f"{what}: counter went down at {t1:.1f}s ({v0:.0f} to {v1:.0f}), interval left out")
            continue
        if interval and dt > GAP_FACTOR * interval:
            problems.append(f"{what}: gap of {dt:.1f}s between samples at {t0:.1f}s, interval left out")
            continue
        total += v1 - v0
        span += dt
    return total / span if span > 0 else None


def summed(samples, cgroup, source, keys):
    """A series that is the sum of several keys' series, sample by sample
    (samples missing a key are dropped)."""
    parts = [samples.get(cgroup, source, k) for k in keys]
    parts = [p for p in parts if p]
    if not parts:
        return []
    if len(parts) == 1:
        return parts[0]
    by_time = {}
    for p in parts:
        for t, step, v in p:
            by_time.setdefault((t, step), []).append(v)
    return [(t, step, sum(vs)) for (t, step), vs in sorted(by_time.items()) if len(vs) == len(parts)]


def window(job, step, role="workload", app=None):
    """The numbers of one step's window for the cgroup that plays role
    ("workload", "competitor", "peer") in a job."""
    s = job.samples
    cgroup = job.cgroup(role) or role
    w = Window(job, step, cgroup)
    label = step["label"]
    iv = s.interval
    # The window ends where the stepped knob changes, should a sample taken
    # after the next step's change still carry this step's label.
    until = None
    knob = _points(s.get(job.cgroup("workload"), "memory." + step.get("knob", "low"), "value"), label)
    for t, v in knob:
        if v != knob[0][1]:
            until = t
            w.problems.append(f"memory.{step.get('knob', 'low')} changed inside the window at {t:.1f}s "
                              f"({knob[0][1]:.0f} to {v:.0f}); the window ends there")
            break
    for name, (source, keys) in COUNTERS.items():
        w.values[name + "/s"] = rate(_points(summed(s, cgroup, source, keys), label, until), iv,
                                     f"{cgroup} {name}", w.problems)
    for kind in ("some", "full"):
        r = rate(_points(s.get(cgroup, "memory.pressure", kind + "_total"), label, until), iv,
                 f"{cgroup} PSI {kind}", w.problems)
        # total is in microseconds of stall per second of time.
        w.values[f"psi_{kind}%"] = None if r is None else r / 1e4
    cur = _points(s.get(cgroup, "memory.current", "value"), label, until)
    w.values["memory.current"] = sum(v for _, v in cur) / len(cur) if cur else None
    # The LRU's mean size over the window (pages), and the share of it
    # scanned per second: the formula's fraction times how hard reclaim ran.
    lru = _points(summed(s, cgroup, "memory.stat", LRU_LISTS), label, until)
    w.values["lru_pages"] = sum(v for _, v in lru) / len(lru) / PAGE if lru else None
    sc = w.values["scanned/s"]
    w.values["scanned_of_lru/s"] = sc / w.values["lru_pages"] if sc is not None and w.values["lru_pages"] else None
    for knob in ("memory.low", "memory.min"):
        vals = _points(s.get(cgroup, knob, "value"), label, until)
        w.values[knob] = vals[0][1] if vals else None
    for ev in EVENTS:
        pts = _points(s.get(cgroup, "memory.events", ev), label, until)
        w.values["events." + ev] = pts[-1][1] - pts[0][1] if len(pts) >= 2 else None
    glob = rate(_points(summed(s, "-", "vmstat", GLOBAL_SCAN), label, until), iv, "global pgscan", w.problems)
    w.values["global_pgscan/s"] = glob
    mine = w.values["pgscan/s"]
    w.values["scan_share%"] = 100 * mine / glob if glob and mine is not None else None
    psi_global = rate(_points(s.get("-", "pressure.memory", "full_total"), label, until), iv,
                      "global PSI full", w.problems)
    w.values["global_psi_full%"] = None if psi_global is None else psi_global / 1e4
    if app:
        for key, unit in APP_RATES:
            pts = _points(s.get(app, "app", key), label, until)
            if pts:
                w.values["app_rate"] = rate(pts, iv, f"{app} {key}", w.problems)
                w.values["app_unit"] = unit
                break
        mf = _points(s.get(app, "app", "majflt"), label, until)
        if mf:
            w.values["app_majflt/s"] = rate(mf, iv, f"{app} majflt", w.problems)
    # Targeted reclaim: the reclaimer's requests in the window, and how many
    # the kernel refused (EAGAIN: it could not reclaim the amount).
    for key in ("requests", "failed"):
        pts = _points(s.get("reclaimer", "app", key), label, until)
        w.values["reclaim_" + key] = pts[-1][1] - pts[0][1] if len(pts) >= 2 else None
    missing = {(cg, f) for t, st, cg, f, status in s.statuses if st == label and cg == cgroup}
    for cg, f in sorted(missing):
        w.problems.append(f"{cg} {f}: unreadable in some samples of the window")
    return w


def job_windows(job, role="workload", app="workload"):
    """[Window] for every step of a job."""
    return [window(job, st, role, app) for st in job.steps or []]


def normalise(w, c):
    """Set w's "scan_fraction": the share of its LRU the workload's window w
    had scanned per second over the share the competitor's window c (the
    same job and step: an unprotected cgroup under the same reclaim) had.
    How hard reclaim ran cancels out; what is left is the workload's
    formula's fraction."""
    a, b = w["scanned_of_lru/s"], c["scanned_of_lru/s"]
    w.values["scan_fraction"] = a / b if a is not None and b else None


def per_second(job, step):
    """The scan fraction of every sampling interval of one step's window
    (normalise()'s number, but per interval instead of over the window):
    [(t, fraction)], t the interval's end, fraction None where the
    competitor was not scanned. Intervals where a counter went down or
    samples are missing are left out, as rate() leaves them out. Shows
    whether a window's fraction is steady or made of a few bursts."""
    s = job.samples
    label = step["label"]

    def series(role):
        cg = job.cgroup(role) or role
        scanned = dict(_points(summed(s, cg, "memory.stat", COUNTERS["scanned"][1]), label))
        lru = dict(_points(summed(s, cg, "memory.stat", LRU_LISTS), label))
        return scanned, lru

    (ws, wl), (cs, cl) = series("workload"), series("competitor")
    times = sorted(set(ws) & set(wl) & set(cs) & set(cl))
    out = []
    for t0, t1 in zip(times, times[1:]):
        if t1 <= t0 or (s.interval and t1 - t0 > GAP_FACTOR * s.interval):
            continue
        dw, dc = ws[t1] - ws[t0], cs[t1] - cs[t0]
        if dw < 0 or dc < 0:
            continue
        lw, lc = (wl[t0] + wl[t1]) / 2, (cl[t0] + cl[t1]) / 2
        if not lw or not lc:
            continue
        out.append((t1, dw / lw / (dc / lc) if dc else None))
    return out


def oom_story(job):
    """How a job went in OOM terms: first global OOM kill (time, step),
    number of OOM kills, workload.slice memory.events totals, how far a ramp
    got, how the workload unit ended."""
    s = job.samples
    kills = s.get("-", "vmstat", "oom_kill")
    story = {"oom_kills": None, "first_oom_s": None, "first_oom_step": None}
    if kills:
        base = kills[0][2]
        story["oom_kills"] = kills[-1][2] - base
        for t, step, v in kills:
            if v > base:
                story["first_oom_s"], story["first_oom_step"] = t, step
                break
    for ev in EVENTS:
        pts = s.get(job.cgroup("workload"), "memory.events", ev)
        story["events." + ev] = pts[-1][2] - pts[0][2] if pts else None
    held = s.get("workload", "app", "held_bytes")
    story["held_max"] = max(v for _, _, v in held) if held else None
    if job.ramp and "held_bytes" in job.ramp:
        try:
            story["held_report"] = int(job.ramp["held_bytes"])
            story["ramp_seconds"] = float(job.ramp.get("seconds", "nan"))
            story["ramp_state"] = job.ramp.get("state")
        except ValueError:
            pass
    unit = job.units.get("workload.service") if job.units else None
    story["workload_result"] = unit.get("result") if unit else None
    return story
