#!/usr/bin/python3
"""The kernel's own memcg selftests in a run: RUN_DIR/peers/selftests/KERNEL/
as bench/selftests.sh leaves them, one job per kernel, test_memcontrol run
under two cgroup2 mounts ("recursiveprot": as systemd mounts it, with
memory_recursiveprot; "plain": remounted without it, as upstream intends),
a few times under each (MOUNT-rN.tap; a lone MOUNT.tap is one run).

usage: peers.py RUN_DIR

Prints, per test, pass/fail/skip for each kernel and mount, and the memory
the protected children C and D ended with in test_memcg_min/low (printed by
patches/selftests; the test expects about 29M and 21M: values_close(x, 29M,
10), i.e. |x - 29M| <= (x + 29M) / 100 * 10) beside what the kernel's
formula predicts (model.selftest_split()).
"""
import os
import re
import sys

import model
import stats

MOUNTS = ("recursiveprot", "plain")
TAP_FILE = re.compile(r"^(\w+?)(?:-r(\d+))?\.tap$")
RESULT = re.compile(r"^(not ok|ok) \d+ (# SKIP )?(\S+)")
VALUES = re.compile(r"^# (test_memcg_\w+): memory.current C=(-?\d+) D=(-?\d+) E=(-?\d+) F=(-?\d+)")
MIB = 2 ** 20


def parse_tap(text):
    """({test: pass|fail|skip}, {test: (C, D, E, F) bytes})"""
    results, values = {}, {}
    for line in text.splitlines():
        m = RESULT.match(line)
        if m:
            results[m.group(3)] = "skip" if m.group(2) else ("pass" if m.group(1) == "ok" else "fail")
            continue
        m = VALUES.match(line)
        if m:
            values[m.group(1)] = tuple(int(x) for x in m.groups()[1:])
    return results, values


def load(run_dir):
    """{kernel: {mount: {"runs": [{"results", "values", "status"}, ...],
    "mount_options"}}}, problems. A kernel whose job did not finish has no
    mounts and a problem."""
    base = os.path.join(run_dir, "peers", "selftests")
    out, problems = {}, []
    if not os.path.isdir(base):
        return out, problems
    for kernel in sorted(os.listdir(base)):
        gdir = os.path.join(base, kernel, "guest", "out")
        out[kernel] = {}
        taps = {}
        for name in sorted(os.listdir(gdir)) if os.path.isdir(gdir) else []:
            m = TAP_FILE.match(name)
            if m and m.group(1) in MOUNTS:
                taps.setdefault(m.group(1), []).append((int(m.group(2) or 1), name))
        for mount in MOUNTS:
            if mount not in taps:
                problems.append(f"selftests on {kernel}: no {mount} run (see {os.path.join(base, kernel)})")
                continue
            entry = {"runs": [], "mount_options": None}
            try:
                with open(os.path.join(gdir, f"{mount}.mount")) as f:
                    entry["mount_options"] = f.read().split()[3]
            except (OSError, IndexError):
                problems.append(f"selftests on {kernel}, {mount}: mount options missing")
            for n, name in sorted(taps[mount]):
                tap = os.path.join(gdir, name)
                with open(tap, errors="replace") as f:
                    results, values = parse_tap(f.read())
                status = None
                try:
                    with open(tap[:-len(".tap")] + ".status") as f:
                        status = int(f.read().strip() or "-1")
                except (OSError, ValueError):
                    problems.append(f"selftests on {kernel}, {mount} run {n}: exit status missing")
                if not results:
                    problems.append(f"selftests on {kernel}, {mount} run {n}: no TAP results in {tap}")
                entry["runs"].append({"results": results, "values": values, "status": status})
            out[kernel][mount] = entry
    return out, problems


def verdict(words):
    """One cell of the table from the results of the runs: the word when
    they agree, else how many passed, e.g. "pass 2/3"; "-" for none."""
    if not words:
        return "-"
    if all(w == words[0] for w in words):
        return words[0]
    return f"pass {words.count('pass')}/{len(words)}"


def rows(data):
    """(header, rows) of the pass/fail/skip table."""
    cols = [(k, m) for k in data for m in MOUNTS if m in data[k]]
    tests = []
    for k, m in cols:
        for run in data[k][m]["runs"]:
            for t in run["results"]:
                if t not in tests:
                    tests.append(t)
    header = ["test"] + [f"{k} ({m})" for k, m in cols]
    body = [[t] + [verdict([r["results"][t] for r in data[k][m]["runs"] if t in r["results"]])
                   for k, m in cols] for t in tests]
    return header, body


def values_close(a, b, err):
    """The selftest's own check (cgroup_util.h): |a - b| <= (a + b) / 100 * err,
    in integer arithmetic as there."""
    return abs(a - b) <= (a + b) // 100 * err


def _mib(values):
    """Mean (± sd over the runs) of byte counts, in MiB."""
    m = stats.mean(values) / MIB
    if len(values) < 2:
        return f"{m:.1f}M"
    return f"{m:.1f} ± {stats.sd(values) / MIB:.1f}M"


def model_cd(kernel, mount, alpha):
    """The model's C, D for kernel under mount, as text; "-" without a model."""
    formula = model.formula_of(kernel)
    if formula is None:
        return "-"
    c, d, _, _ = model.selftest_split(formula, recursive=(mount == "recursiveprot"), alpha=alpha)
    return f"{c:.1f}, {d:.1f}M"


def value_rows(data):
    """(header, rows): per kernel, mount and test, C, D, E, F over the runs,
    the model's C and D in upstream's steps (alpha 0.1) and in fine ones
    (0.01), and in how many runs C and D passed the test's check."""
    header = ["kernel", "mount", "test", "runs", "C", "D", "E", "F",
              "model C, D (upstream steps)", "model C, D (fine steps)", "C, D close to 29M, 21M"]
    body = []
    for k in data:
        for m in MOUNTS:
            runs = data[k].get(m, {}).get("runs", [])
            tests = sorted({t for r in runs for t in r["values"]})
            for t in tests:
                vals = [r["values"][t] for r in runs if t in r["values"]]
                ok = sum(values_close(c, 29 * MIB, 10) and values_close(d, 21 * MIB, 10)
                         for c, d, _, _ in vals)
                body.append([k, m, t, str(len(vals))] + [_mib([v[i] for v in vals]) for i in range(4)]
                            + [model_cd(k, m, 0.1), model_cd(k, m, 0.01), f"{ok}/{len(vals)}"])
    return header, body


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print("usage: peers.py RUN_DIR", file=sys.stderr)
        return 2
    if not os.path.isdir(argv[1]):
        print(f"peers.py: '{argv[1]}' is not a run directory", file=sys.stderr)
        return 2
    data, problems = load(argv[1])
    if not data:
        print(f"peers.py: no selftest results in {argv[1]}/peers/selftests", file=sys.stderr)
        return 1
    print("\ntest_memcontrol, per kernel and cgroup2 mount (recursiveprot: as systemd mounts it)")
    stats.print_table(*rows(data))
    header, body = value_rows(data)
    if body:
        print("\nmemory.current of the protected children at the check (the test expects C ~29M, D ~21M)")
        stats.print_table(header, body)
    for p in problems:
        print(f"missing: {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
