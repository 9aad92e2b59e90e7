#!/usr/bin/python3
"""Verdicts of the seed checks of a run: RUN_DIR/seeds/CHECK/KERNEL/ as
bench/seeds.sh leaves them, one guest job per check and kernel.

usage: seeds.py RUN_DIR [--json] [--expect MATRIX] [--check NAME]...
       seeds.py --pairs MATRIX [--check NAME]...

The kmalloc check has three parts, each judged from the numbers the guest
recorded, not only from KUnit's own verdict:
  alignment   every power-of-two size the module tried (8 bytes to 64K,
              kmalloc, kmalloc_node and krealloc, 192 objects a size):
              misaligned objects must be 0, and every size reported;
  accounting  each large kmalloc() size (above the largest kmalloc cache):
              SUnreclaim must move by the bytes allocated when they are
              allocated and again when freed, within the module's slack;
  sysfs       with no module: each SLUB kmalloc cache of a power-of-two
              size must have that size as its align (absent on SLAB/SLOB).
A part is pass, fail, or n/a (nothing to judge, e.g. no SLUB); the check
fails if any part fails, and has no-result if the job did not finish or
the module said nothing.

The nomemcg check (booted with cgroup_disable=memory) fails when the
kernel oopsed at all (often during boot, so the job may end in a timeout
or a panic: the oops in the console is the verdict), passes when the
guest wrote and synced its files with no oops, and is skipped when the
memory controller was on after all.

The ocfs2 check writes 1K with O_DIRECT at 14K of an 8K file in a 1M
cluster: its parts 12K-14K and 15K-16K, the rest of the written block,
must read back as zeros (they fail with the disk's stale bytes), and the
file must be 15360 bytes; an oops fails it too.

The prototypes check is a W=1 build of mm/sparse.o on the host: it fails
on a "no previous prototype" warning and has no result when the build
itself failed.

The sync check (sync and syncfs in loops against rewritten files) and the
initfree check (a memory workload under init_on_free=1 or page_poison=1)
fail on an oops; initfree also on a poisoned page found written after free
or the workload's data not verifying. Neither has a revert it can be
counted on to fail: the sync race needs a reused stack slot, and on x86
arch_free_page() does nothing.

The z3fold check (zswap on z3fold with a small pool, a verified memory
workload swapping and unmapping all along) fails on an oops or the data
not verifying, and has no result when z3fold never reclaimed (no page
written back from a full pool): then the race had no chance. Its revert
cannot be counted on to fail either: the race needs z3fold_reclaim_page()
to claim the page within a few instructions of z3fold_free()'s test.

With --expect MATRIX (bench/regress: check, kernel, expected verdict:
pass, fail, fail:PART,... or undetectable), each verdict is set beside
the one expected, and each check is "proven" when it passed where its fix
is and failed, in the parts named, where it is reverted. --check keeps
the checks named; --pairs prints the matrix's "CHECK KERNEL" pairs (for
bench/seeds.sh).
Exit status: 0 every verdict pass (with --expect: every verdict the one
expected), 1 otherwise, 2 usage.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import jobs  # noqa: E402

ALIGN_SIZES = [8 << i for i in range(14)]  # 8 .. 65536, as the module
ALIGN_INFO = re.compile(r"# kmalloc_natural_alignment: align size=(\d+) checked=(\d+) misaligned=(\d+)")
ACCOUNT_INFO = re.compile(r"# kmalloc_large_accounting: account size=(\d+) allocations=(\d+) "
                          r"expected=(-?\d+) seen_alloc=(-?\d+) seen_free=(-?\d+) slack=(\d+)")
SUBTEST = re.compile(r"^( *)# Subtest: (\S+)")
RESULT = re.compile(r"^( *)(not ok|ok) (\d+) (?:- )?(.*?)(?: # SKIP.*)?$")
# What the kernel prints when something went wrong: an oops, BUG(), a
# WARN(), a panic, and SLUB's own reports under slub_debug ("BUG kmalloc-64
# (Not tainted): Redzone overwritten"). A soft lockup or an RCU stall alone
# (which a loaded TCG host can cause) is not one.
OOPS = re.compile(r"BUG:|BUG \S+ \(|kernel BUG at|invalid opcode:|Oops|WARNING:|general protection fault"
                  r"|Kernel panic")
NOT_OOPS = re.compile(r"soft lockup|rcu.*stall")
CACHE = re.compile(r"^(?:dma-)?kmalloc-(?:cg-|rcl-)?(\d+)([kM]?)$")
UNITS = {"": 1, "k": 1 << 10, "M": 1 << 20}


def is_oops(line):
    return bool(OOPS.search(line)) and not NOT_OOPS.search(line)


def parse_ktap(text):
    """The module's KTAP from the kernel log: {"align": {size: (checked,
    misaligned)}, "account": {size: {...}}, "cases": {case: ok/not ok},
    "params": {case: {description: ok/not ok}}, "suite": ok/not ok/None,
    "oops": [lines]}."""
    out = {"align": {}, "account": {}, "cases": {}, "params": {}, "suite": None, "oops": []}
    case = None
    for line in text.splitlines():
        if is_oops(line):
            out["oops"].append(line.strip())
        m = ALIGN_INFO.search(line)
        if m:
            size, checked, bad = (int(x) for x in m.groups())
            out["align"][size] = (checked, bad)
            continue
        m = ACCOUNT_INFO.search(line)
        if m:
            size, n, expected, up, down, slack = (int(x) for x in m.groups())
            out["account"][size] = {"allocations": n, "expected": expected, "seen_alloc": up,
                                    "seen_free": down, "slack": slack}
            continue
        m = SUBTEST.match(line)
        if m and len(m.group(1)) == 8:
            case = m.group(2)
            continue
        m = RESULT.match(line)
        if m:
            depth, verdict, desc = len(m.group(1)), m.group(2), m.group(4)
            if depth == 8 and case:
                out["params"].setdefault(case, {})[desc] = verdict
            elif depth == 4:
                out["cases"][desc] = verdict
                case = None
            elif depth == 0 and desc == "kmalloc_check":
                out["suite"] = verdict
    return out


def parse_slab_align(text):
    """[(cache, size, align)] for the power-of-two kmalloc caches of a
    slab-align.tsv (cache, object_size, align)."""
    rows = []
    for line in text.splitlines()[1:]:
        fields = line.split("\t")
        if len(fields) != 3:
            continue
        m = CACHE.match(fields[0])
        if not m:
            continue
        size = int(m.group(1)) * UNITS[m.group(2)]
        if size & (size - 1) == 0:
            rows.append((fields[0], size, int(fields[2]) if fields[2].isdigit() else None))
    return rows


def judge_alignment(k):
    if not k["align"]:
        return "no-result", "the module reported no size"
    missing = [s for s in ALIGN_SIZES if s not in k["align"]]
    checked = sum(c for c, _ in k["align"].values())
    bad = {s: b for s, (_, b) in k["align"].items() if b}
    case = k["cases"].get("kmalloc_natural_alignment")
    if bad:
        worst = ", ".join(f"{s}: {b}" for s, b in sorted(bad.items())[:4])
        return "fail", f"misaligned objects by size: {worst} ({sum(bad.values())} of {checked})"
    if missing:
        return "fail", f"sizes not reported: {' '.join(map(str, missing))}"
    if case != "ok":
        return "fail", f"KUnit says {case or 'nothing'} though no object was misaligned"
    return "pass", f"{checked} objects of {len(k['align'])} sizes, 0 misaligned"


def judge_accounting(k):
    if not k["account"]:
        if k["cases"].get("kmalloc_large_accounting") == "ok":
            return "n/a", "every size came from a kmalloc cache (skipped)"
        return "no-result", "the module reported no size"
    bad = []
    for size, a in sorted(k["account"].items()):
        for what in ("seen_alloc", "seen_free"):
            if abs(a[what] - a["expected"]) > a["slack"]:
                bad.append(f"{size}: {what.split('_')[1]} moved {a[what] >> 10}K of {a['expected'] >> 10}K")
    case = k["cases"].get("kmalloc_large_accounting")
    sizes = sorted(k["account"])
    if bad:
        return "fail", "SUnreclaim " + "; ".join(bad[:3]) + (f" (+{len(bad) - 3})" if len(bad) > 3 else "")
    if case != "ok":
        return "fail", f"KUnit says {case or 'nothing'} though every delta was within slack"
    return "pass", f"{len(sizes)} sizes {sizes[0] >> 10}K-{sizes[-1] >> 10}K moved SUnreclaim by their size"


def judge_sysfs(rows, console=""):
    if not rows:
        return "n/a", "no SLUB kmalloc caches in sysfs"
    unreadable = [c for c, _, a in rows if a is None]
    if unreadable:
        # sysfs formats into a page it kmalloc()s; sysfs_emit() refuses a
        # buffer that is not page-aligned, so the attribute reads empty.
        emit = len(re.findall(r"invalid sysfs_emit", console or ""))
        return "fail", (f"align unreadable for {len(unreadable)} of {len(rows)} caches"
                        + (f"; the kernel warned 'invalid sysfs_emit_at' {emit} times: sysfs's own"
                           " kmalloc()ed page buffer was not page-aligned" if emit else ""))
    bad = [f"{c} align {a}" for c, s, a in rows if a < s or a % s]
    if bad:
        return "fail", f"{len(bad)} of {len(rows)} caches below their size: " + ", ".join(bad[:3])
    return "pass", f"{len(rows)} power-of-two caches aligned to their size"


def read_file(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None


def kmalloc(jobdir):
    """{"verdict", "parts": {part: (verdict, detail)}, "problems": [...]}."""
    out = os.path.join(jobdir, "guest", "out")
    result, bad = jobs.read_host_json(os.path.join(jobdir, "result.json"))
    status = result.get("result") if result else None
    problems = [] if status == "ok" else [f"job {status or bad or 'did not finish'}"]
    log = read_file(os.path.join(out, "kernel.log"))
    if status != "ok" or log is None:
        problems = problems or ["no kernel.log"]
        return {"verdict": "no-result", "parts": {}, "problems": problems, "evidence": "; ".join(problems)}
    k = parse_ktap(log)
    insmod = (read_file(os.path.join(out, "insmod.status")) or "").strip()
    if insmod != "0" or k["suite"] is None:
        # The module did not load or did not run: nothing was checked, so
        # this is no verdict (on a revert, not the failure expected).
        said = [line.strip() for line in log.splitlines() if line.strip()][-3:]
        problems = [f"insmod exited {insmod or '?'}" if insmod != "0" else "no KTAP from the module"]
        return {"verdict": "no-result", "parts": {}, "problems": problems,
                "evidence": "; ".join(problems + [f"kernel: {line}" for line in said])}
    problems += [f"kernel: {line}" for line in k["oops"][:3]]
    tsv = read_file(os.path.join(out, "slab-align.tsv"))
    parts = {
        "alignment": judge_alignment(k),
        "accounting": judge_accounting(k),
        "sysfs": judge_sysfs(parse_slab_align(tsv), read_file(os.path.join(jobdir, "console.log")))
        if tsv is not None else ("no-result", "the guest wrote no slab-align.tsv"),
    }
    verdicts = [v for v, _ in parts.values()]
    if "fail" in verdicts or problems:
        verdict = "fail"
    elif "no-result" in verdicts:
        verdict = "no-result"
    else:
        verdict = "pass"
    failed = [f"{p}: {d}" for p, (v, d) in parts.items() if v == "fail"]
    return {"verdict": verdict, "parts": parts, "problems": problems,
            "evidence": "; ".join(failed + problems) or "; ".join(f"{p}: {d}" for p, (_, d) in parts.items())}


def oops_evidence(console):
    """The first oops of a console log, shortened: its BUG/Oops line and
    the RIP line(s) naming where it happened; [] if there is none."""
    lines = [line.strip() for line in (console or "").splitlines()]
    first = next((i for i, line in enumerate(lines) if is_oops(line)), None)
    if first is None:
        # An oops whose first line did not reach the console: its RIP line.
        first = next((i for i, line in enumerate(lines) if "RIP: " in line), None)
    if first is None:
        return []
    if "RIP: " in lines[first]:
        return [re.sub(r"^\[ *[0-9.]+\] ", "", lines[first])]
    out = [re.sub(r"^\[ *[0-9.]+\] ", "", lines[first])]
    out += [re.sub(r"^\[ *[0-9.]+\] ", "", line) for line in lines[first:first + 60] if "RIP: " in line][:1]
    return out


def nomemcg(jobdir):
    """Buffered writes and sync with the memory controller disabled."""
    out = os.path.join(jobdir, "guest", "out")
    result, bad = jobs.read_host_json(os.path.join(jobdir, "result.json"))
    status = result.get("result") if result else None
    oops = oops_evidence(read_file(os.path.join(jobdir, "console.log")))
    if oops:
        return {"verdict": "fail", "parts": {}, "problems": [f"job {status}"] if status != "ok" else [],
                "evidence": "kernel: " + " | ".join(oops)}
    if status != "ok":
        return {"verdict": "no-result", "parts": {}, "problems": [f"job {status or bad or 'did not finish'}"],
                "evidence": f"job {status or bad or 'did not finish'}, and no oops in the console"}
    skip = read_file(os.path.join(out, "skip"))
    if skip is not None:
        return {"verdict": "skip", "parts": {}, "problems": [], "evidence": skip.strip()}
    parts = {}
    for line in (read_file(os.path.join(out, "steps")) or "").splitlines():
        fs, _, rest = line.partition(" ")
        verdict, _, detail = rest.partition(" ")
        parts[fs] = ("n/a" if verdict == "skip" else verdict, detail)
    if "ext4" not in parts:
        return {"verdict": "no-result", "parts": parts, "problems": ["the guest wrote no steps"],
                "evidence": "the guest wrote no steps"}
    verdicts = [v for v, _ in parts.values()]
    verdict = "fail" if "fail" in verdicts else "pass"
    return {"verdict": verdict, "parts": parts, "problems": [],
            "evidence": "; ".join(f"{fs}: {d}" for fs, (_, d) in parts.items())}


def ocfs2(jobdir):
    """An O_DIRECT write past the end of a file on ocfs2: the rest of its
    block must read back as zeros. Parts: one per range the fix zeroes."""
    early = booted(jobdir)
    if early:
        return early
    out = os.path.join(jobdir, "guest", "out")
    error = read_file(os.path.join(out, "error"))
    if error is not None:
        # The file system could not be made or written: nothing was checked.
        return {"verdict": "no-result", "parts": {}, "problems": [error.strip()], "evidence": error.strip()}
    parts, info = {}, []
    for line in (read_file(os.path.join(out, "regions")) or "").splitlines():
        fields = line.split()
        if len(fields) != 4 or not fields[1].isdigit() or not fields[2].isdigit():
            continue
        name, size, nonzero, kind = fields[0], int(fields[1]), int(fields[2]), fields[3]
        if kind == "zero":
            parts[name] = ("pass", f"{size} bytes, all zero") if nonzero == 0 else \
                ("fail", f"{nonzero} of {size} bytes not zero (stale disk data)")
        else:
            info.append(f"{name} ({kind}): {nonzero} of {size} bytes not zero")
    if len(parts) != 2:
        return {"verdict": "no-result", "parts": parts, "problems": ["the guest wrote no regions"],
                "evidence": "the guest wrote no regions"}
    size = (read_file(os.path.join(out, "size")) or "").strip()
    problems = [] if size == "15360" else [f"the file is {size or '?'} bytes, not 15360"]
    verdict = "fail" if problems or any(v == "fail" for v, _ in parts.values()) else "pass"
    return {"verdict": verdict, "parts": parts, "problems": problems,
            "evidence": "; ".join([f"{p}: {d}" for p, (_, d) in parts.items()] + problems + info)}


def booted(jobdir):
    """The verdict a guest job has before its own output is read (an oops
    anywhere in the console: fail; a job that did not finish: no-result;
    the guest's skip: skip), or None when the output is to be judged."""
    out = os.path.join(jobdir, "guest", "out")
    result, bad = jobs.read_host_json(os.path.join(jobdir, "result.json"))
    status = result.get("result") if result else None
    oops = oops_evidence(read_file(os.path.join(jobdir, "console.log")))
    if oops:
        return {"verdict": "fail", "parts": {}, "problems": [] if status == "ok" else [f"job {status}"],
                "evidence": "kernel: " + " | ".join(oops)}
    if status != "ok":
        why = f"job {status or bad or 'did not finish'}"
        return {"verdict": "no-result", "parts": {}, "problems": [why], "evidence": why + ", and no oops"}
    skip = read_file(os.path.join(out, "skip"))
    if skip is not None:
        return {"verdict": "skip", "parts": {}, "problems": [], "evidence": skip.strip()}
    return None


def sync(jobdir):
    """sync and syncfs in loops against rewritten files: no oops. Parts:
    one per file system, with what ran there."""
    early = booted(jobdir)
    if early:
        return early
    parts = {}
    for line in (read_file(os.path.join(jobdir, "guest", "out", "counts")) or "").splitlines():
        fields = line.split()
        if len(fields) != 4 or not all(f.isdigit() for f in fields[1:]):
            continue
        syncs, syncfs, mb = (int(f) for f in fields[1:])
        said = f"{syncs} syncs and {syncfs} syncfs calls against {mb}M of writes"
        parts[fields[0]] = ("pass", said) if syncs and syncfs and mb else \
            ("no-result", said + ": some loop never got round")
    if "ext4" not in parts:
        return {"verdict": "no-result", "parts": parts, "problems": ["the guest wrote no counts"],
                "evidence": "the guest wrote no counts"}
    problems = [f"{fs}: {d}" for fs, (v, d) in parts.items() if v != "pass"]
    return {"verdict": "no-result" if problems else "pass", "parts": parts, "problems": problems,
            "evidence": "; ".join(f"{fs}: {d}" for fs, (_, d) in parts.items()) + ", no oops"}


def initfree(jobdir):
    """Pages zeroed or poisoned on free under a memory workload: no oops,
    no poisoned page found written, the workload's own data intact."""
    early = booted(jobdir)
    if early:
        return early
    out = os.path.join(jobdir, "guest", "out")
    mode = (read_file(os.path.join(out, "mode")) or "").strip()
    work = dict(line.split(None, 1) for line in (read_file(os.path.join(out, "work")) or "").splitlines()
                if len(line.split()) == 2)
    if not mode or not {"stress-ng-vm", "pagecache", "pgfree"} <= set(work):
        return {"verdict": "no-result", "parts": {}, "problems": ["the guest wrote no mode or work"],
                "evidence": "the guest wrote no mode or work"}
    said = f"{mode} on, {work['pgfree']} pages freed"
    poisoned = [line.strip() for line in (read_file(os.path.join(out, "pagealloc.log")) or "").splitlines()
                if line.strip()]
    if poisoned:
        return {"verdict": "fail", "parts": {}, "problems": [],
                "evidence": f"{said}; {len(poisoned)} poisoned pages written after free: {poisoned[0]}"}
    # stress-ng exits 2 when a stressor failed (its data did not verify).
    if work["stress-ng-vm"] == "2":
        return {"verdict": "fail", "parts": {}, "problems": [],
                "evidence": f"{said}; stress-ng's vm stressor failed (its data did not verify)"}
    bad = [f"{k} exited {v}" for k, v in work.items() if k != "pgfree" and v != "0"]
    if bad:
        return {"verdict": "no-result", "parts": {}, "problems": bad, "evidence": f"{said}; " + ", ".join(bad)}
    return {"verdict": "pass", "parts": {}, "problems": [],
            "evidence": f"{said} (stress-ng vm 2 x 600M verified, 256M of page cache dropped), no oops"}


def _counters(text):
    """{name: int} from "name value" lines (zswap's debugfs, vmstat)."""
    out = {}
    for line in (text or "").splitlines():
        w = line.split()
        if len(w) == 2 and w[1].lstrip("-").isdigit():
            out[w[0]] = int(w[1])
    return out


def z3fold(jobdir):
    """zswap on z3fold, pages freed while z3fold reclaims: no oops, the
    workload's data intact, and z3fold really reclaimed (pages written
    back from a full pool), or the race had no chance to happen."""
    early = booted(jobdir)
    if early:
        return early
    out = os.path.join(jobdir, "guest", "out")
    work = _counters(read_file(os.path.join(out, "work")))
    before = _counters(read_file(os.path.join(out, "zswap.before")))
    after = _counters(read_file(os.path.join(out, "zswap.after")))
    vm = _counters(read_file(os.path.join(out, "vmstat")))
    vm0 = _counters(read_file(os.path.join(out, "vmstat.before")))
    if not {"stress-ng-vm", "seconds", "bogo-ops"} <= set(work) or "written_back_pages" not in after:
        return {"verdict": "no-result", "parts": {}, "problems": ["the guest wrote no work or zswap counters"],
                "evidence": "the guest wrote no work or zswap counters"}
    delta = {k: after[k] - before.get(k, 0) for k in after}
    said = (f"{work['seconds']} s of stress-ng vm (2 x 160M in 192M, {work['bogo-ops']} bogo ops verified), "
            f"{vm.get('zswpout', 0) - vm0.get('zswpout', 0)} pages into zswap, "
            f"{delta.get('written_back_pages', 0)} written back from the full z3fold pool "
            f"({delta.get('pool_limit_hit', 0)} times full)")
    if work["stress-ng-vm"] == 2:
        return {"verdict": "fail", "parts": {}, "problems": [],
                "evidence": f"{said}; stress-ng's vm stressor failed (its data did not verify)"}
    if work["stress-ng-vm"] != 0:
        return {"verdict": "no-result", "parts": {}, "problems": [f"stress-ng exited {work['stress-ng-vm']}"],
                "evidence": f"{said}; stress-ng exited {work['stress-ng-vm']}"}
    if work["bogo-ops"] <= 0:
        return {"verdict": "no-result", "parts": {}, "problems": ["stress-ng finished no pass: nothing was verified"],
                "evidence": f"{said}: nothing was verified"}
    if delta.get("written_back_pages", 0) <= 0:
        return {"verdict": "no-result", "parts": {}, "problems": ["z3fold never reclaimed (the pool never filled)"],
                "evidence": f"{said}: the race had no chance"}
    return {"verdict": "pass", "parts": {}, "problems": [], "evidence": f"{said}, no oops"}


# A warning, or an error where -Werror won over the build's -Wno-error.
PROTOTYPE = re.compile(r"(?:warning|error): no previous prototype for .(\w+). "
                       r"\[-W(?:error=)?missing-prototypes\]")


def prototypes(jobdir):
    """A W=1 build on the host: no missing-prototypes warning."""
    status = (read_file(os.path.join(jobdir, "status")) or "").strip()
    log = read_file(os.path.join(jobdir, "warnings.log"))
    if log is None or not status:
        return {"verdict": "no-result", "parts": {}, "problems": ["the build left no log"],
                "evidence": "the build left no log"}
    lines = [line.strip() for line in log.splitlines()]
    found = [line for line in lines if PROTOTYPE.search(line)]
    others = [line for line in lines if ": warning: " in line and not PROTOTYPE.search(line)]
    tail = f" ({len(others)} other W=1 warnings)" if others else ""
    if found:
        names = ", ".join(PROTOTYPE.search(line).group(1) for line in found)
        return {"verdict": "fail", "parts": {}, "problems": [],
                "evidence": f"missing prototype: {names}: {found[0]}{tail}"}
    if status != "0":
        said = [line for line in lines if "error" in line.lower()][:2] or lines[-2:]
        return {"verdict": "no-result", "parts": {}, "problems": [f"the build exited {status}"],
                "evidence": "; ".join([f"the build exited {status}"] + said)}
    return {"verdict": "pass", "parts": {}, "problems": [],
            "evidence": f"mm/sparse.o built with W=1, no missing-prototypes warning{tail}"}


CHECKS = {"kmalloc": kmalloc, "nomemcg": nomemcg, "ocfs2": ocfs2, "prototypes": prototypes,
          "sync": sync, "initfree": initfree, "z3fold": z3fold}
EXPECTED = re.compile(r"pass|undetectable|fail(?::[a-z0-9]+(?:,[a-z0-9]+)*)?")
KERNEL = re.compile(r"[A-Za-z0-9._+-]+(?:@[A-Za-z0-9._-]+)?")


def read_matrix(path, only=None):
    """[(check, kernel, expected)] of a bench/regress file (of the checks in
    only, if given); ValueError naming the file and line of a bad one.
    expected is pass, undetectable, fail, or fail:PART,... (the check
    must fail, and in those parts)."""
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            if (len(fields) != 3 or not EXPECTED.fullmatch(fields[2]) or fields[0] not in CHECKS
                    or not KERNEL.fullmatch(fields[1])):
                raise ValueError(f"{path}:{n}: want: CHECK KERNEL pass|fail|fail:PART,...|undetectable, "
                                 f"CHECK one of {' '.join(CHECKS)}")
            if only and fields[0] not in only:
                continue
            rows.append(tuple(fields))
    return rows


def as_expected(r, expected):
    """Whether judged result r (None: not run) is the expected verdict."""
    if r is None:
        return False
    if expected == "undetectable":
        return r["verdict"] == "pass"
    verdict, _, parts = expected.partition(":")
    if r["verdict"] != verdict:
        return False
    return all(r["parts"].get(p, ("",))[0] == "fail" for p in parts.split(",") if p)


def expectations(results, matrix):
    """(rows, proofs): rows [check, kernel, verdict, expected, as expected?]
    for every matrix row, and {check: proof} where proof is "proven" (passed
    with the fix, failed without), "cannot detect", or what went wrong."""
    rows, proofs = [], {}
    for check, kernel, expected in matrix:
        r = results.get(check, {}).get(kernel)
        verdict = r["verdict"] if r else "not run"
        if r and verdict == "fail":
            failed = [p for p, (v, _) in r["parts"].items() if v == "fail"]
            verdict += ":" + ",".join(failed) if failed and ":" in expected else ""
        rows.append([check, kernel, verdict, expected, as_expected(r, expected)])
    for check in dict.fromkeys(c for c, _, _ in matrix):
        mine = [row for row in rows if row[0] == check]
        wrong = [f"{k} {v} (expected {e})" for _, k, v, e, good in mine if not good]
        if wrong:
            proofs[check] = "not proven: " + ", ".join(wrong)
        elif any(e == "undetectable" for _, _, _, e, _ in mine):
            proofs[check] = "cannot detect (passes on its revert too, as the matrix expects: see why there)"
        elif {"pass", "fail"} <= {e.partition(":")[0] for _, _, _, e, _ in mine}:
            proofs[check] = "proven"
        else:
            proofs[check] = "not proven: the matrix needs a kernel where it passes and one where it fails"
    return rows, proofs


def job_cmdline(jobdir):
    """The extra kernel command line words the job booted with."""
    for line in (read_file(os.path.join(jobdir, "job.conf")) or "").splitlines():
        key, eq, value = line.partition("=")
        if eq and key.strip() == "cmdline":
            return value.strip()
    return ""


def load(run_dir):
    """{check: {kernel: judged}} for every check directory of the run."""
    base = os.path.join(run_dir, "seeds")
    out = {}
    for check in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        if check in CHECKS:
            cdir = os.path.join(base, check)
            out[check] = {}
            for k in sorted(os.listdir(cdir)):
                r = CHECKS[check](os.path.join(cdir, k))
                r["cmdline"] = job_cmdline(os.path.join(cdir, k))
                out[check][k] = r
    return out


def render(results):
    lines = []
    for check, kernels in results.items():
        lines.append(f"check {check}")
        width = max(len(k) for k in kernels) if kernels else 6
        for kernel, r in kernels.items():
            lines.append(f"  {kernel:<{width}}  {r['verdict']}")
            for part, (verdict, detail) in r["parts"].items():
                lines.append(f"  {'':<{width}}    {part:<10} {verdict:<9} {detail}")
            for p in r["problems"]:
                lines.append(f"  {'':<{width}}    problem: {p}")
    return "\n".join(lines)


def render_expected(results, rows, proofs):
    """The regress table (markdown): check, kernel, command line, verdict,
    expected, evidence; then each check's proof."""
    lines = ["| check | kernel | command line | verdict | expected | evidence |",
             "|---|---|---|---|---|---|"]
    for check, kernel, verdict, expected, good in rows:
        r = results.get(check, {}).get(kernel, {})
        mark = "" if good else " (!)"
        evidence = (r.get("evidence") or "").replace("|", "/")
        lines.append(f"| {check} | {kernel} | {r.get('cmdline') or '-'} | {verdict}{mark} | {expected} | {evidence} |")
    lines.append("")
    lines += [f"{check}: {proof}" for check, proof in proofs.items()]
    return "\n".join(lines)


def usage():
    print("\n".join(__doc__.strip().splitlines()[3:5]), file=sys.stderr)
    return 2


def main(argv):
    args, opts, only = [], {}, []
    it = iter(argv)
    for a in it:
        if a in ("--expect", "--pairs", "--check"):
            value = next(it, None)
            if value is None:
                return usage()
            if a == "--check":
                if value not in CHECKS:
                    print(f"seeds.py: no check '{value}'; the checks: {' '.join(CHECKS)}", file=sys.stderr)
                    return 2
                only.append(value)
            else:
                opts[a] = value
        elif a != "--json":
            args.append(a)
    matrix = None
    if "--expect" in opts or "--pairs" in opts:
        try:
            matrix = read_matrix(opts.get("--expect") or opts["--pairs"], only)
        except (OSError, ValueError) as e:
            print(f"seeds.py: {e}", file=sys.stderr)
            return 2
    if "--pairs" in opts:
        if args:
            return usage()
        print("".join(f"{check} {kernel}\n" for check, kernel, _ in matrix), end="")
        return 0
    if len(args) != 1 or not os.path.isdir(args[0]):
        return usage()
    results = load(args[0])
    if only:
        results = {c: r for c, r in results.items() if c in only}
    if not results:
        print(f"seeds.py: {args[0]} has no seed checks (seeds/CHECK/KERNEL)", file=sys.stderr)
        return 1
    if matrix is not None:
        rows, proofs = expectations(results, matrix)
        if "--json" in argv:
            print(json.dumps({"results": results, "rows": rows, "proofs": proofs}, indent=1, sort_keys=True))
        else:
            print(render_expected(results, rows, proofs))
        return 0 if all(row[4] for row in rows) else 1
    if "--json" in argv:
        print(json.dumps(results, indent=1, sort_keys=True))
    else:
        print(render(results))
    ok = all(r["verdict"] == "pass" for kernels in results.values() for r in kernels.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
