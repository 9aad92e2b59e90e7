#!/usr/bin/python3
"""The kernel's own memcg selftests in a run: RUN_DIR/peers/selftests/KERNEL/
as bench/selftests.sh leaves them, one job per kernel, test_memcontrol run
under two cgroup2 mounts ("recursiveprot": as systemd mounts it, with
memory_recursiveprot; "plain": remounted without it, as upstream intends).

usage: peers.py RUN_DIR

Prints, per test, pass/fail/skip for each kernel and mount, and the memory
the protected children C and D ended with in test_memcg_min/low (printed by
patches/selftests; the test expects about 29M and 21M: values_close(x, 29M,
10), i.e. |x - 29M| <= (x + 29M) / 100 * 10).
"""
import os
import re
import sys

MOUNTS = ("recursiveprot", "plain")
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
    """{kernel: {mount: {"results", "values", "status", "mount_options"}}},
    problems. A kernel whose job did not finish has no mounts and a problem."""
    base = os.path.join(run_dir, "peers", "selftests")
    out, problems = {}, []
    if not os.path.isdir(base):
        return out, problems
    for kernel in sorted(os.listdir(base)):
        gdir = os.path.join(base, kernel, "guest", "out")
        out[kernel] = {}
        for mount in MOUNTS:
            tap = os.path.join(gdir, f"{mount}.tap")
            if not os.path.exists(tap):
                problems.append(f"selftests on {kernel}: no {mount} run (see {os.path.join(base, kernel)})")
                continue
            with open(tap, errors="replace") as f:
                results, values = parse_tap(f.read())
            entry = {"results": results, "values": values, "status": None, "mount_options": None}
            try:
                with open(os.path.join(gdir, f"{mount}.status")) as f:
                    entry["status"] = int(f.read().strip() or "-1")
                with open(os.path.join(gdir, f"{mount}.mount")) as f:
                    entry["mount_options"] = f.read().split()[3]
            except (OSError, ValueError, IndexError):
                problems.append(f"selftests on {kernel}, {mount}: status or mount options missing")
            if not results:
                problems.append(f"selftests on {kernel}, {mount}: no TAP results in {tap}")
            out[kernel][mount] = entry
    return out, problems


def rows(data):
    """(header, rows) of the pass/fail/skip table."""
    cols = [(k, m) for k in data for m in MOUNTS if m in data[k]]
    tests = []
    for k, m in cols:
        for t in data[k][m]["results"]:
            if t not in tests:
                tests.append(t)
    header = ["test"] + [f"{k} ({m})" for k, m in cols]
    body = [[t] + [data[k][m]["results"].get(t, "-") for k, m in cols] for t in tests]
    return header, body


def values_close(a, b, err):
    """The selftest's own check (cgroup_util.h): |a - b| <= (a + b) / 100 * err,
    in integer arithmetic as there."""
    return abs(a - b) <= (a + b) // 100 * err


def value_rows(data):
    header = ["kernel", "mount", "test", "C", "D", "E", "F", "C, D close to 29M, 21M (the test's check)"]
    body = []
    for k in data:
        for m in MOUNTS:
            for t, (c, d, e, f) in sorted(data[k].get(m, {}).get("values", {}).items()):
                ok = values_close(c, 29 * MIB, 10) and values_close(d, 21 * MIB, 10)
                body.append([k, m, t] + [f"{v / MIB:.1f}M" for v in (c, d, e, f)] + ["yes" if ok else "no"])
    return header, body


def print_table(header, body):
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(header)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in body:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")


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
    print_table(*rows(data))
    header, body = value_rows(data)
    if body:
        print("\nmemory.current of the protected children at the check (the test expects C ~29M, D ~21M)")
        print_table(header, body)
    for p in problems:
        print(f"missing: {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
