#!/usr/bin/python3
"""Render the report of a bench run from its saved result directory.

usage: report.py RUN_DIR [--baseline KERNEL] [--out DIR]

Writes RUN_DIR/report.md, RUN_DIR/report.html (self-contained: the plots
are embedded) and the plots as PNG and SVG in RUN_DIR/plots/, and prints
where. Boots nothing: everything comes from the files the run left.
"""
import argparse
import base64
import datetime
import html
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import analyse  # noqa: E402
import metrics  # noqa: E402
import model  # noqa: E402
import peers  # noqa: E402
import plots  # noqa: E402
import stats  # noqa: E402
import rundata  # noqa: E402
import tracecheck  # noqa: E402

MIB = 2 ** 20
# The per-step table: these metrics of the registry (metrics.METRICS).
STEP_METRICS = ("pgsteal/s", "refaults/s", "pgmajfault/s", "psi_some%", "psi_full%", "memory.current",
                "scan_share%", "app_rate", "events.low", "events.oom_kill")


def fmt(v, digits=0, unit=""):
    if v is None:
        return "-"
    if isinstance(v, float) and v != v:
        return "-"
    return f"{v:,.{digits}f}{unit}"


def fmt_p(p):
    if p is None:
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def mean_ci(s, digits=0):
    if not s["n"]:
        return "-"
    text = fmt(s["mean"], digits)
    if s["ci95"] is not None:
        text += f" ± {fmt(s['ci95'], digits)}"
    return f"{text} (n={s['n']})"


class Doc:
    """A report as blocks, rendered to Markdown and to HTML."""

    def __init__(self):
        self.blocks = []

    def h(self, level, text):
        self.blocks.append(("h", level, text))

    def p(self, text):
        self.blocks.append(("p", text))

    def table(self, header, rows):
        self.blocks.append(("table", header, rows))

    def img(self, path, alt):
        self.blocks.append(("img", path, alt))

    def ul(self, items):
        self.blocks.append(("ul", items))

    def markdown(self, base):
        out = []
        for b in self.blocks:
            if b[0] == "h":
                out.append("#" * b[1] + " " + b[2])
            elif b[0] == "p":
                out.append(b[1])
            elif b[0] == "table":
                out.append("| " + " | ".join(b[1]) + " |")
                out.append("|" + "|".join("---" for _ in b[1]) + "|")
                for r in b[2]:
                    out.append("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |")
            elif b[0] == "img":
                out.append(f"![{b[2]}]({os.path.relpath(b[1] + '.svg', base)})")
            elif b[0] == "ul":
                out.extend(f"- {i}" for i in b[1])
            out.append("")
        return "\n".join(out)

    def html(self, title):
        out = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'>",
               f"<title>{html.escape(title)}</title>",
               "<style>body{font-family:sans-serif;max-width:72em;margin:auto;padding:1em}"
               "table{border-collapse:collapse;margin:0.5em 0}"
               "td,th{border:1px solid #bbb;padding:0.2em 0.5em;text-align:right}"
               "th{background:#eee}td:first-child{text-align:left}img{max-width:100%}</style>",
               "</head><body>"]
        for b in self.blocks:
            if b[0] == "h":
                out.append(f"<h{b[1]}>{html.escape(b[2])}</h{b[1]}>")
            elif b[0] == "p":
                out.append(f"<p>{html.escape(b[1])}</p>")
            elif b[0] == "table":
                out.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in b[1]) + "</tr>")
                for r in b[2]:
                    out.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>")
                out.append("</table>")
            elif b[0] == "img":
                with open(b[1] + ".png", "rb") as f:
                    data = base64.b64encode(f.read()).decode()
                out.append(f"<p><img alt='{html.escape(b[2])}' src='data:image/png;base64,{data}'></p>")
            elif b[0] == "ul":
                out.append("<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in b[1]) + "</ul>")
        out.append("</body></html>")
        return "\n".join(out)


def provenance(run, doc):
    doc.h(2, "Provenance")
    info = run.info
    doc.p(f"Run {run.id}: started {info.get('started', '?')}, profile {info.get('profile', '?')}, "
          f"suite {info.get('suite_version', '?')}, host {info.get('host', '?')}.")
    rows = []
    seen = set()
    for j in run.jobs:
        if j.kernel in seen or not j.meta:
            continue
        seen.add(j.kernel)
        km = j.meta.get("kernel_manifest") or {}
        g = j.guest_meta or j.meta.get("guest") or {}
        job = j.meta.get("job") or {}
        rows.append([j.kernel, km.get("kernel_release", "?"), (km.get("series_hash") or "-")[:12],
                     (km.get("config_hash") or "-")[:12], j.meta.get("accelerator", "?"),
                     f"{job.get('memory', '?')}, {job.get('cpus', '?')} CPUs, swap {job.get('swap', '?')}",
                     g.get("cgroup2_mount_options", "?"), g.get("lru_gen_enabled", "?"),
                     (j.meta.get("rootfs_hash") or "-")[:12]])
    doc.table(["kernel", "release", "series", "config", "accel", "guest", "cgroup2 mount", "MGLRU", "image"], rows)
    hosts_section(run, doc)


def hosts_section(run, doc):
    """Where the jobs of a run dispatched over hosts (bench.py run --hosts)
    ran: one row per block, a (scenario, repeat) whose kernels all ran on
    one host unless a retry moved some of them."""
    blocks = {}
    for j in run.jobs:
        d = (j.meta or {}).get("dispatch")
        if not isinstance(d, dict):
            continue
        b = blocks.setdefault((j.scenario, j.repeat), {})
        b.setdefault(str(d.get("host", "?")), []).append(j.kernel)
    if not blocks:
        return
    doc.h(3, "Hosts")
    split = [k for k, b in blocks.items() if len(b) > 1]
    used = sorted({h for b in blocks.values() for h in b})
    doc.p(f"The jobs ran on {len(used)} host(s) ({', '.join(used)}), each (scenario, repeat) on one "
          "host with its kernels in a random order, so that a difference between hosts falls on "
          "every kernel of a repeat alike. "
          + (f"{len(split)} of {len(blocks)} blocks ran on more than one host (a retry moved "
             "some of their jobs): their kernels are not compared on the same machine."
             if split else "Every block ran whole on one host."))
    rows = []
    for (s, r), b in sorted(blocks.items()):
        for h, ks in sorted(b.items()):
            rows.append([s, f"r{r}", h, ", ".join(sorted(ks))])
    doc.table(["scenario", "repeat", "host", "kernels"], rows)


def compared_metric(sr):
    """(key, scale, name) of the metric a scenario's kernels are compared
    by: the scan fraction (in points) where there is a competitor, else
    pgscan/s."""
    if sr.has_competitor:
        return "scan_fraction", 100, "scan fraction"
    return "pgscan/s", 1, "pgscan/s"


def paired_section(sr, doc, knob, steps):
    """The comparisons again, paired by host: the jobs of a run spread over
    hosts, where each repeat's kernels ran together on one host, so a
    difference between hosts cancels in each pair."""
    key, scale, what = compared_metric(sr)
    unit = " pp" if sr.has_competitor else ""
    doc.h(3, "Paired by host")
    doc.p(f"These jobs ran on {len(set(sr.hosts.values()))} hosts. Each repeat's kernels ran on one host, "
          f"so here each kernel's {what} is compared with {sr.baseline}'s of the same repeat (a paired "
          f"t-test over the repeats whose two jobs ran on the same host), beside Welch's test, which "
          f"ignores the hosts. Where hosts differ, the paired test is the one to read.")
    rows = []
    for k in sr.kernels:
        if k == sr.baseline:
            continue
        for n in steps:
            pr = sr.paired(k, n, key)
            a, b = sr.values(k, n, key), sr.values(sr.baseline, n, key)
            w = stats.welch(a, b)
            rows.append([k, sr.steps[n].requested,
                         "-" if pr is None else str(pr["pairs"]),
                         "-" if pr is None else ", ".join(pr["hosts"]),
                         fmt(None if pr is None else scale * pr["diff"], 1, unit),
                         fmt_p(None if pr is None else pr["p"]),
                         fmt(scale * (stats.mean(a) - stats.mean(b)) if a and b else None, 1, unit),
                         fmt_p(w[2] if w else None)])
    doc.table(["kernel", knob, "pairs", "hosts", f"paired difference to {sr.baseline}", "paired p",
               "unpaired difference", "Welch p"], rows)


def scenario_section(sr, doc, plotdir, date):
    doc.h(2, f"Scenario {sr.scenario}")
    if not sr.jobs:
        doc.p("No job of this scenario has results.")
        return []
    knob = f"memory.{sr.knob}"
    base = sr.baseline
    others = [k for k in sr.kernels if k != base]
    reps = {k: len({j.repeat for j in sr.jobs if j.kernel == k}) for k in sr.kernels}
    doc.p("Jobs with results: " + ", ".join(f"{k} {n}" for k, n in reps.items()) +
          f". Rates are over each step's measuring window only (settling left out); ± is the 95% "
          f"confidence interval of the mean over repeats; p is Welch's t-test against {base}.")
    steps = sr.step_numbers()
    doc.h(3, f"{sr.cgroup_name()} page scanning")
    header = [knob, "value"] + [f"{k} pgscan/s" for k in sr.kernels]
    for k in others:
        header += [f"{k} % of {base}", "p"]
    rows = []
    for n in steps:
        st = sr.steps[n]
        row = [st.requested, fmt(st.value / MIB, 0, "M")]
        row += [mean_ci(sr.summary(k, n, "pgscan/s")) for k in sr.kernels]
        for k in others:
            pct, p = sr.versus(k, n)
            row += [fmt(pct, 0, "%"), fmt_p(p)]
        rows.append(row)
    doc.table(header, rows)

    doc.h(3, "Per step, mean over repeats")
    shown = [metrics.metric(name) for name in STEP_METRICS]
    header = ["kernel", knob] + [m.label for m in shown]
    rows = []
    for k in sr.kernels:
        for n in steps:
            ws = sr.windows[analyse.PRIMARY].get(k, {}).get(n, [])
            row = [k, sr.steps[n].requested]
            for m in shown:
                v = sr.summary(k, n, m.name)["mean"]
                cell = fmt(None if v is None else v * m.scale, m.digits, m.unit)
                if m.name == "app_rate":
                    # The workload's own unit: pages touched or bytes a second.
                    cell = f"{cell} {next((w['app_unit'] for w in ws if w['app_unit']), '')}".strip()
                row.append(cell)
            rows.append(row)
    doc.table(header, rows)

    if sr.unprotected_step() is not None and len(steps) > 1:
        doc.h(3, "Against the model")
        doc.p("Measured: the step's mean scan rate as % of the same kernel's rate without protection. "
              "Model: the scan fraction of the kernel's formula (first reclaim pass) at the measured "
              "usage and protection of the step. Deviation in percentage points.")
        rows = []
        for k in sr.kernels:
            v = model.formula_of(k)
            for n in steps:
                f, m = sr.measured_fraction(k, n), sr.model_fraction(k, n)
                p = sr.protection(k, n)
                rows.append([k, model.LABELS.get(v, v or "no model"), sr.steps[n].requested,
                             fmt(p and p[0] / MIB, 0, "M"), fmt(f and 100 * f, 0, "%"),
                             fmt(m if m is None else 100 * m, 0, "%"),
                             fmt(None if f is None or m is None else 100 * (f - m), 0, " pp")])
        doc.table(["kernel", "formula", knob, "usage", "measured", "model", "deviation"], rows)

    if sr.has_competitor and len(steps) > 1:
        doc.h(3, "Scan fraction against the formula")
        doc.p(f"Scan fraction: the share of {sr.cgroup_name()}'s LRU (active + inactive lists, mean over "
              f"the window) that reclaim scanned per second (pgscan + pgrefill), over the same share of "
              f"{sr.cgroup_name(analyse.COMPETITOR)}, an unprotected cgroup under the same reclaim in the "
              f"same window. get_scan_count() scans a fraction of each list, so this is the formula's "
              f"fraction, with how hard reclaim ran cancelled out. Model: each kernel's formula (first "
              f"pass) at the step's measured usage and protection. CV: sd over mean across repeats. "
              f"Difference to {base} in percentage points, Welch's p.")
        rows = []
        for k in sr.kernels:
            v = model.formula_of(k)
            for n in steps:
                s = sr.summary(k, n, "scan_fraction")
                m = sr.model_fraction(k, n)
                cv = stats.cv(s)
                row = [k, model.LABELS.get(v, v or "no model"), sr.steps[n].requested,
                       mean_ci({**s, "mean": s["mean"] and 100 * s["mean"],
                                "ci95": s["ci95"] and 100 * s["ci95"]}, 1),
                       fmt(cv and 100 * cv, 1, "%"), fmt(m if m is None else 100 * m, 1, "%"),
                       fmt(None if m is None or not s["n"] else 100 * (s["mean"] - m), 1, " pp")]
                if k != base:
                    a, b = sr.values(k, n, "scan_fraction"), sr.values(base, n, "scan_fraction")
                    w = stats.welch(a, b)
                    row += [fmt(100 * (stats.mean(a) - stats.mean(b)) if a and b else None, 1, " pp"),
                            fmt_p(w[2] if w else None)]
                else:
                    row += ["-", "-"]
                rows.append(row)
        doc.table(["kernel", "formula", knob, "measured %", "CV", "model", "deviation",
                   f"vs {base}", "p"], rows)

    if sr.spans_hosts() and others:
        paired_section(sr, doc, knob, steps)

    if sr.has_peer:
        doc.h(3, "workload.slice against peer.slice")
        doc.p("Both slices are protected by memory.low beyond what the guest has; only workload.slice "
              "also has memory.min. Ratio: workload.slice's pgscan/s as % of peer.slice's. Model: the "
              "ratio of the two slices' scan targets in the low-reclaim pass of each formula (the "
              "fraction at their measured usage times their measured LRU size). Two readers that stream as fast as they can are scanned about as "
              "fast as they fault pages in, so lower pressure also shows as a larger share of memory: "
              "the memory.current ratio.")
        rows = []
        for k in sr.kernels:
            for n in steps:
                r, m = sr.peer_ratio(k, n), sr.peer_ratio_model(k, n)
                u = sr.peer_ratio(k, n, "memory.current")
                cur = [sr.summary(k, n, "memory.current", cg)["mean"] for cg in (analyse.PRIMARY, analyse.PEER)]
                rows.append([k, sr.steps[n].requested, mean_ci(sr.summary(k, n, "pgscan/s")),
                             mean_ci(sr.summary(k, n, "pgscan/s", analyse.PEER)),
                             fmt(r and 100 * r, 0, "%"), fmt(m if m is None else 100 * m, 0, "%")]
                            + [fmt(c and c / MIB, 0, "M") for c in cur] + [fmt(u and 100 * u, 0, "%")])
        doc.table(["kernel", knob, "workload.slice pgscan/s", "peer.slice pgscan/s", "ratio", "model ratio",
                   "workload.slice memory.current", "peer.slice memory.current", "ratio"], rows)

    stories = [(k, rep, s) for k in sr.kernels for rep, s in sorted(sr.ooms.get(k, []))]
    if any(s.get("oom_kills") or s.get("held_report") or (s.get("workload_result") not in (None, "success"))
           for _, _, s in stories):
        doc.h(3, "OOM kills and how far the workload got")
        rows = []
        for k, rep, s in stories:
            first = "-" if s["first_oom_s"] is None else f"{s['first_oom_s']:.0f}s ({s['first_oom_step']})"
            held = s.get("held_report")
            rows.append([k, f"r{rep}", s.get("workload_result") or "-", fmt(s["oom_kills"]), first,
                         fmt(held and held / MIB, 0, "M"),
                         fmt(s.get("ramp_seconds"), 0, "s"), fmt(s.get("events.low")),
                         fmt(s.get("events.oom")), fmt(s.get("events.oom_kill"))])
        doc.table(["kernel", "repeat", "workload ended", "OOM kills", "first OOM kill", "ramp held",
                   "ramp ran", "low events", "oom events", "oom_kill events"], rows)

    names = plots.all_plots(sr, plotdir, date)
    for name in names:
        doc.img(os.path.join(plotdir, name), f"{sr.scenario} {name}")
    return names


def answer(sr):
    """A few sentences on a scenario: where each kernel differs from the
    baseline (p < 0.05) and by how much, and the smallest difference the run
    could have found where it found none (p < 0.05, 80% power)."""
    if len(sr.steps) < 2 or len(sr.kernels) < 2:
        return []
    key, scale, what = compared_metric(sr)
    unit = " points" if sr.has_competitor else "/s"
    out = []
    for k in sr.kernels[1:]:
        found, missed = [], []
        for n in sr.step_numbers():
            a, b = sr.values(k, n, key), sr.values(sr.baseline, n, key)
            w = stats.welch(a, b)
            if not w:
                continue
            step = sr.steps[n].requested
            if w[2] < 0.05:
                found.append(f"{step} ({scale * (stats.mean(a) - stats.mean(b)):+.1f}{unit}, p {fmt_p(w[2])})")
            else:
                d = stats.detectable(a, b)
                missed.append(step if d is None else f"{step} (could have found {scale * d:.1f}{unit})")
        text = f"{sr.scenario}, {what}: {k} against {sr.baseline}: "
        text += ("differs at " + ", ".join(found)) if found else "no step differs"
        if missed:
            text += "; no difference found at " + ", ".join(missed)
        out.append(text + ".")
    return out


def trace_section(run, doc):
    """The formula check of the run's trace-arm jobs (analysis/tracecheck.py),
    if it has any."""
    try:
        checks = tracecheck.check_run(run)
    except tracecheck.TraceError as e:
        doc.h(2, "Formula check (protection tracepoint)")
        doc.ul([f"cannot check: {e}"])
        return
    if not checks:
        return
    summary, steps, bad = tracecheck.section(checks)
    doc.h(2, "Formula check (protection tracepoint)")
    doc.p("Each scan target the trace arm's kernel computed for a protected list inside the measuring "
          "windows, recomputed from the event's inputs with the variant's formula in the kernel's "
          "integer arithmetic (analysis/tracecheck.py); lost: events the trace buffer dropped.")
    doc.table(tracecheck.SUMMARY_HEADER, summary)
    doc.p("Per step: the workload's targets after the priority shift, summed over the window, beside "
          "what the window measured (pgscan + pgrefill).")
    doc.table(tracecheck.STEP_HEADER, steps)
    doc.ul(bad or ["every event matches its formula exactly, none lost"])


def build(run_dir, baseline=None, out=None):
    run = rundata.Run(run_dir)
    out = out or run.path
    plotdir = os.path.join(out, "plots")
    os.makedirs(plotdir, exist_ok=True)
    date = (run.info.get("started") or datetime.date.today().isoformat())[:10]
    doc = Doc()
    doc.h(1, f"cgroup memory protection bench: run {run.id}")
    results = analyse.analyse(run, baseline)
    kernels = sorted({k for sr in results for k in sr.kernels})
    doc.p(f"Kernels: {', '.join(kernels) or 'none'}. Scenarios: {', '.join(r.scenario for r in results)}.")
    doc.h(2, "The answer")
    doc.ul([line for sr in results for line in answer(sr)] or ["No scenario has steps to compare."])
    for sr in results:
        scenario_section(sr, doc, plotdir, date)
    trace_section(run, doc)
    provenance(run, doc)
    doc.h(2, "Failed or missing jobs")
    doc.ul(run.problems or ["none"])
    problems = [p for sr in results for p in sr.problems]
    doc.h(2, "Problems in the data")
    doc.ul(problems[:200] + ([f"... and {len(problems) - 200} more"] if len(problems) > 200 else [])
           or ["none: no counter resets, gaps or unreadable files inside the measuring windows"])
    data, peer_problems = peers.load(run.path)
    if data:
        doc.h(2, "Peer suite: the kernel's memcg selftests")
        doc.p("tools/testing/selftests/cgroup/test_memcontrol, built from each variant's tree, run in "
              "the guest under the cgroup2 mount as systemd makes it (recursiveprot: with "
              "memory_recursiveprot) and remounted without that option (plain), as upstream intends, "
              "a few times under each; \"pass 2/3\": the runs disagreed.")
        doc.table(*peers.rows(data))
        header, body = peers.value_rows(data)
        if body:
            doc.p("memory.current of the protected children when test_memcg_min/low check them, mean "
                  "± sd over the runs (printed by patches/selftests; the test expects C about 29M and D "
                  "about 21M, within 10%), beside the model: upstream's memcg_protection.m with each "
                  "kernel's formula, in upstream's 10% steps and in 1% steps (the cliff's 25M/25M):")
            doc.table(header, body)
            os.makedirs(plotdir, exist_ok=True)
            name = plots.selftest_cd(data, plotdir, date)
            if name:
                doc.img(os.path.join(plotdir, name), "selftest C and D against the model")
        if peer_problems:
            doc.ul(peer_problems)
    md = os.path.join(out, "report.md")
    ht = os.path.join(out, "report.html")
    for path, text in ((md, doc.markdown(out)), (ht, doc.html(f"bench run {run.id}"))):
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
    return md, ht, results


def main(argv):
    ap = argparse.ArgumentParser(prog="report.py", description="Render a bench run's report.")
    ap.add_argument("run", help="a run directory, e.g. results/20261203-full")
    ap.add_argument("--baseline", help="the kernel others are compared to (default: control)")
    ap.add_argument("--out", help="where to write (default: the run directory)")
    a = ap.parse_args(argv[1:])
    try:
        md, ht, _ = build(a.run, a.baseline, a.out)
    except (rundata.RunError, ValueError) as e:
        print(f"report.py: {e}", file=sys.stderr)
        return 2
    print(f"report.py: wrote {md} and {ht}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
