"""Plots of an analysed run, PNG and SVG, with Debian's matplotlib (Agg: no
display needed). Each function writes NAME.png and NAME.svg into a
directory and returns the base names it wrote."""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import analyse  # noqa: E402
import model  # noqa: E402

MIB = 2 ** 20
# The same colour for a kernel in every plot of a report.
COLOURS = ["#444444", "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"]


def colour(sr, kernel):
    return COLOURS[sr.kernels.index(kernel) % len(COLOURS)]


def _save(fig, outdir, name):
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(outdir, f"{name}.{ext}"), dpi=110)
    plt.close(fig)
    return name


def _title(sr, what, date):
    return f"{sr.scenario}: {what}\n{', '.join(sr.kernels)} ({date})"


def _x(sr, n):
    return sr.steps[n].value / MIB


def scan_curve(sr, outdir, date):
    """pgscan/s of workload.slice against the protection, mean and 95% CI
    per kernel: the cliff against the slope."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for k in sr.kernels:
        xs, ys, es = [], [], []
        for n in sr.step_numbers():
            s = sr.summary(k, n, "pgscan/s")
            if s["n"]:
                xs.append(_x(sr, n))
                ys.append(s["mean"])
                es.append(s["ci95"] or 0)
        ax.errorbar(xs, ys, yerr=es, marker="o", capsize=3, label=k, color=colour(sr, k))
    ax.set_xlabel(f"memory.{sr.knob} of {sr.cgroup_name()} (MiB)")
    ax.set_ylabel("workload pgscan/s (mean, 95% CI)")
    ax.invert_xaxis()
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title(_title(sr, "page scanning as protection is stepped down", date), fontsize=10)
    return _save(fig, outdir, f"{sr.scenario}-pgscan")


def _model_line(sr, ax, k):
    """Kernel k's formula (dashed) at each step's measured usage and
    protection, in %."""
    mx, my = [], []
    for n in sr.step_numbers():
        m = sr.model_fraction(k, n)
        if m is not None:
            mx.append(_x(sr, n))
            my.append(100 * m)
    if mx:
        v = model.formula_of(k)
        ax.plot(mx, my, linestyle="--", marker="x", color=colour(sr, k),
                label=f"{k} model ({model.LABELS.get(v, v)})")


def model_overlay(sr, outdir, date):
    """Measured scan rate as % of the same kernel's unprotected rate, with
    each kernel's formula (dashed) at the measured usage and protection."""
    if sr.unprotected_step() is None:
        return None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for k in sr.kernels:
        xs, ys = [], []
        for n in sr.step_numbers():
            f = sr.measured_fraction(k, n)
            if f is not None:
                xs.append(_x(sr, n))
                ys.append(100 * f)
        ax.plot(xs, ys, marker="o", label=f"{k} measured", color=colour(sr, k))
        _model_line(sr, ax, k)
    ax.set_xlabel(f"memory.{sr.knob} of {sr.cgroup_name()} (MiB)")
    ax.set_ylabel("% of the unprotected scan rate")
    ax.invert_xaxis()
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(_title(sr, "measured scan fraction and each formula", date), fontsize=10)
    return _save(fig, outdir, f"{sr.scenario}-model")


def fraction_plot(sr, outdir, date):
    """The scan fraction (the workload's scanned share of its LRU over the
    competitor's) per step, mean and 95% CI over repeats, with each
    kernel's formula (dashed) at the measured usage and protection."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for k in sr.kernels:
        xs, ys, es = [], [], []
        for n in sr.step_numbers():
            s = sr.summary(k, n, "scan_fraction")
            if s["n"]:
                xs.append(_x(sr, n))
                ys.append(100 * s["mean"])
                es.append(100 * (s["ci95"] or 0))
        ax.errorbar(xs, ys, yerr=es, marker="o", capsize=3, label=f"{k} measured", color=colour(sr, k))
        _model_line(sr, ax, k)
    ax.set_xlabel(f"memory.{sr.knob} of {sr.cgroup_name()} (MiB)")
    ax.set_ylabel("scan fraction (% of the competitor's share)")
    ax.invert_xaxis()
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(_title(sr, "scan fraction against each formula (95% CI)", date), fontsize=10)
    return _save(fig, outdir, f"{sr.scenario}-fraction")


def workload_view(sr, outdir, date):
    """The workload's own rate (pages touched or bytes per second) and
    memory.current per step: what reclaim costs it."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    unit = None
    for k in sr.kernels:
        xs, ys, es, cs, ce = [], [], [], [], []
        for n in sr.step_numbers():
            s = sr.summary(k, n, "app_rate")
            c = sr.summary(k, n, "memory.current")
            if s["n"] or c["n"]:
                xs.append(_x(sr, n))
                ys.append(s["mean"] if s["n"] else float("nan"))
                es.append(s["ci95"] or 0)
                cs.append(c["mean"] / MIB if c["n"] else float("nan"))
                ce.append((c["ci95"] or 0) / MIB)
            ws = sr.windows[analyse.PRIMARY].get(k, {}).get(n, [])
            unit = unit or next((w["app_unit"] for w in ws if w["app_unit"]), None)
        a1.errorbar(xs, ys, yerr=es, marker="o", capsize=3, label=k, color=colour(sr, k))
        a2.errorbar(xs, cs, yerr=ce, marker="o", capsize=3, label=k, color=colour(sr, k))
    a1.set_ylabel(f"workload rate ({unit or 'no stats recorded'})")
    a2.set_ylabel(f"{sr.cgroup_name()} memory.current (MiB)")
    for a in (a1, a2):
        a.set_xlabel(f"memory.{sr.knob} (MiB)")
        a.invert_xaxis()
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
    fig.suptitle(_title(sr, "the workload's throughput and usage per step", date), fontsize=10)
    return _save(fig, outdir, f"{sr.scenario}-workload")


def oom_timeline(sr, outdir, date):
    """For each kernel's first repeat: the workload's memory.current (and a
    ramp's held size) and global PSI full over time, OOM kills marked."""
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    drew = False
    for k in sr.kernels:
        jobs = sorted((j for j in sr.jobs if j.kernel == k), key=lambda j: j.repeat)
        if not jobs:
            continue
        s = jobs[0].samples
        cur = s.get(jobs[0].cgroup("workload"), "memory.current", "value")
        held = s.get("workload", "app", "held_bytes")
        if cur:
            a1.plot([t for t, _, _ in cur], [v / MIB for _, _, v in cur], color=colour(sr, k),
                    label=f"{k} memory.current")
            drew = True
        if held:
            a1.plot([t for t, _, _ in held], [v / MIB for _, _, v in held], color=colour(sr, k),
                    linestyle=":", label=f"{k} ramp held")
        psi = s.get("-", "pressure.memory", "full_total")
        if len(psi) > 1:
            ts, ps = [], []
            for (t0, _, v0), (t1, _, v1) in zip(psi, psi[1:]):
                if t1 > t0 and v1 >= v0:
                    ts.append(t1)
                    ps.append((v1 - v0) / (t1 - t0) / 1e4)
            a2.plot(ts, ps, color=colour(sr, k), label=f"{k} PSI full")
        kills = s.get("-", "vmstat", "oom_kill")
        for (t0, _, v0), (t1, _, v1) in zip(kills, kills[1:]):
            if v1 > v0:
                for a in (a1, a2):
                    a.axvline(t1, color=colour(sr, k), alpha=0.5, linestyle="--")
    if not drew:
        plt.close(fig)
        return None
    a1.set_ylabel("MiB")
    a2.set_ylabel("global memory PSI full (%)")
    a2.set_xlabel("seconds since the collector started (dashed: OOM kills)")
    for a in (a1, a2):
        a.grid(alpha=0.3)
        if a.get_legend_handles_labels()[0]:
            a.legend(fontsize=8)
    fig.suptitle(_title(sr, "memory and pressure over time, first repeat", date), fontsize=10)
    return _save(fig, outdir, f"{sr.scenario}-oom")


def peer_bars(sr, outdir, date):
    """emin-baseline: each slice's pgscan/s per kernel, and the model's
    workload/peer ratio beside the measured one."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    n = sr.step_numbers()[-1]
    width = 0.38
    for i, k in enumerate(sr.kernels):
        for j, (cg, name) in enumerate(((analyse.PRIMARY, "with memory.min"), (analyse.PEER, "without"))):
            s = sr.summary(k, n, "pgscan/s", cg)
            if s["n"]:
                ax.bar(i + (j - 0.5) * width, s["mean"], width, yerr=s["ci95"] or 0, capsize=3,
                       color=colour(sr, k), alpha=1.0 if j == 0 else 0.45,
                       label=name if i == 0 else None)
        r, m = sr.peer_ratio(k, n), sr.peer_ratio_model(k, n)
        text = f"{100 * r:.0f}%" if r is not None else "n/a"
        if m is not None:
            text += f"\nmodel {100 * m:.0f}%"
        ax.annotate(text, (i, 0), textcoords="offset points", xytext=(0, -28), ha="center", fontsize=8)
    ax.set_xticks(range(len(sr.kernels)))
    ax.set_xticklabels(sr.kernels)
    ax.set_ylabel("pgscan/s (mean, 95% CI)")
    ax.legend(fontsize=8)
    ax.set_title(_title(sr, "two protected slices, one with memory.min", date), fontsize=10)
    fig.subplots_adjust(bottom=0.2)
    return _save(fig, outdir, f"{sr.scenario}-peers")


def selftest_cd(data, outdir, date):
    """The memcg selftest's children C and D at test_memcg_min/low's check,
    one point per run (circles: plain mount, triangles: with
    memory_recursiveprot), each kernel's model (fine steps, plain) as a
    cross, and the box the test accepts. data: peers.load()'s. Returns the
    base name, or None when no run printed C and D."""
    fig, ax = plt.subplots(figsize=(6.5, 5))
    drawn = False
    for i, k in enumerate(data):
        col = COLOURS[i % len(COLOURS)]
        for mount, marker in (("plain", "o"), ("recursiveprot", "^")):
            pts = [v[:2] for r in data[k].get(mount, {}).get("runs", []) for v in r["values"].values()]
            if pts:
                ax.scatter([c / MIB for c, _ in pts], [d / MIB for _, d in pts], marker=marker, s=22,
                           color=col, alpha=0.7, label=f"{k} ({mount})")
                drawn = True
        formula = model.formula_of(k)
        if formula:
            c, d, _, _ = model.selftest_split(formula, alpha=0.01)
            ax.scatter([c], [d], marker="X", s=140, color=col, edgecolors="black", linewidths=0.6)
    if not drawn:
        plt.close(fig)
        return None
    # values_close(x, t, 10): |x - t| <= (x + t) / 10, i.e. t * 9/11 <= x <= t * 11/9.
    c0, c1, d0, d1 = 29 * 9 / 11, 29 * 11 / 9, 21 * 9 / 11, 21 * 11 / 9
    ax.plot([c0, c1, c1, c0, c0], [d0, d0, d1, d1, d0], "--", color="grey", lw=1,
            label="what the test accepts")
    lo, hi = min(ax.get_xlim()[0], ax.get_ylim()[0]), max(ax.get_xlim()[1], ax.get_ylim()[1])
    ax.plot([lo, hi], [lo, hi], ":", color="grey", lw=1, label="C = D (an even split)")
    ax.set_xlabel("C: memory.low/min 75M (MiB)")
    ax.set_ylabel("D: memory.low/min 25M (MiB)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    ax.set_title(f"test_memcontrol: C and D at the check, per run; crosses: model\n({date})", fontsize=10)
    return _save(fig, outdir, "selftests-cd")


def all_plots(sr, outdir, date):
    os.makedirs(outdir, exist_ok=True)
    out = []
    has_steps = len(sr.step_numbers()) > 1
    if has_steps:
        out += [scan_curve(sr, outdir, date), model_overlay(sr, outdir, date), workload_view(sr, outdir, date)]
        if sr.has_competitor:
            out.append(fraction_plot(sr, outdir, date))
    if sr.has_peer:
        out.append(peer_bars(sr, outdir, date))
    if any(story.get("oom_kills") for runs in sr.ooms.values() for _, story in runs) or not has_steps:
        out.append(oom_timeline(sr, outdir, date))
    return [o for o in out if o]

