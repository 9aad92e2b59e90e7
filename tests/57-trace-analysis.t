#!/usr/bin/python3
"""analysis/tracecheck.py: each formula in the kernel's integer arithmetic
at points worked by hand from the variants' get_scan_count(); the reading
of trace.log (markers, events, lines to skip, an event outside a window);
and recorded runs of the trace arms (tests/fixtures/trace/: low-passes on
every K+trace variant, and on a mutant kernel that drops 6.1's + 1), where
every event must match, and must not once the formula is wrong. Speaks
TAP."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "analysis"))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
FIX = os.path.join(ROOT, "tests", "fixtures", "trace")

import lzma  # noqa: E402

import model  # noqa: E402
import rundata  # noqa: E402
import tap  # noqa: E402
import tracecheck  # noqa: E402

# (formula, L, emin, elow, usage, low-reclaim pass, scan target), worked by
# hand from each variant's code (patches/000N and stock 6.1).
BY_HAND = [
    # control: the whole list, whatever the protection.
    ("cliff", 1000, 0, 500, 650, False, 1000),
    # 9783aa9917f8: L * usage / max(min, low) - (first pass ? L : 0),
    # clamped to [32, L] with 5.4's clamp() (min(max())).
    ("9783aa", 1000, 0, 500, 650, False, 300),    # 1300 - 1000
    ("9783aa", 1000, 0, 500, 505, False, 32),     # 1010 - 1000 = 10, floor 32
    ("9783aa", 1000, 0, 500, 1600, False, 1000),  # 3200 - 1000, capped at L
    ("9783aa", 20, 0, 500, 650, False, 20),       # 26 - 20 = 6: floor 32, then L wins
    ("9783aa", 1000, 0, 500, 450, True, 900),     # low-reclaim pass: no baseline
    ("9783aa", 1000, 0, 500, 400, False, 1000),   # 800 - 1000 wraps around: capped at L
    # 9de7ca46ad26: low-reclaim pass with low > min: L * (usage - min) /
    # (low - min); otherwise the overage; same clamp.
    ("9de7ca", 1000, 200, 600, 400, True, 500),
    ("9de7ca", 1000, 400, 0, 450, True, 125),     # low <= min: 1125 - 1000, the overage
    ("9de7ca", 1000, 0, 500, 650, False, 300),
    # 1bc63fb1272b: P = pass ? min : max(min, low); L - L * P / max(usage, P),
    # floor 32; no protection left: L.
    ("1bc63f", 1000, 0, 500, 650, False, 231),    # 1000 - 769
    ("1bc63f", 1000, 0, 500, 650, True, 1000),    # low-reclaim pass, min 0
    ("1bc63f", 1000, 300, 500, 650, True, 539),   # 1000 - 461
    ("1bc63f", 1000, 0, 500, 505, False, 32),     # 1000 - 990 = 10, floor 32
    # 6.1: P = (first pass and low > min) ? low : min; L - L * P /
    # (max(usage, P) + 1), floor 32 even above L.
    ("6.1", 1000, 0, 500, 650, False, 232),       # 1000 - 768
    ("6.1", 1000, 0, 500, 650, True, 1000),
    ("6.1", 10, 0, 500, 650, True, 32),           # the floor is not capped at L
    ("6.1", 1000, 500, 500, 650, False, 232),     # low == min: min, the same P
    ("6.1", 1000, 0, 500, 400, False, 32),        # TOCTOU: usage raised to P, 1000 - 998, floor 32
]

HEAD = "# tracer: nop\n#\n"


def event(ts, memcg=7, lru=2, size=1000, prio=12, emin=0, elow=500, usage=650, scan=232, low=0):
    return (f"      bench-load-310     [001] d..1.  {ts:.6f}: mm_vmscan_memcg_protection: memcg={memcg} "
            f"nid=0 lru={lru} size={size} priority={prio} min={emin} low={elow} usage={usage} "
            f"scan={scan} low_reclaim={low}\n")


def mark(ts, label, edge):
    return f"  bench-scenario-200     [000] .....  {ts:.6f}: tracing_mark_write: bench-window {label} {edge}\n"


class Formulas(unittest.TestCase):
    def test_by_hand(self):
        for f, L, emin, elow, usage, low, want in BY_HAND:
            with self.subTest(f=f, L=L, emin=emin, elow=elow, usage=usage, low=low):
                self.assertEqual(tracecheck.kernel_scan(f, L, emin, elow, usage, low), want)

    def test_the_plus_one_matters(self):
        # The mutant's formula (no + 1) is 1bc63f's first pass: 231 where 6.1 says 232.
        self.assertNotEqual(tracecheck.kernel_scan("6.1", 1000, 0, 500, 650, False),
                            tracecheck.kernel_scan("1bc63f", 1000, 0, 500, 650, False))

    def test_unknown_formula(self):
        with self.assertRaisesRegex(ValueError, "no formula 'nope'"):
            tracecheck.kernel_scan("nope", 1, 0, 1, 1, False)


class Reading(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.path = os.path.join(self.tmp, "trace.log")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def write(self, text):
        with open(self.path, "w") as f:
            f.write(text)

    def test_events_in_windows(self):
        self.write(HEAD + mark(1.0, "s1", "start") + event(1.5) + "garbage line\n" + event(1.6, low=1, scan=1000)
                   + mark(7.0, "s1", "end") + mark(10.0, "s2", "start") + event(10.5, scan=231)
                   + mark(16.0, "s2", "end"))
        events, windows = tracecheck.read_trace(self.path)
        self.assertEqual([e.label for e in events], ["s1", "s1", "s2"])
        self.assertEqual(windows, {"s1": (1.0, 7.0), "s2": (10.0, 16.0)})
        self.assertEqual((events[1].low_reclaim, events[1].scan, events[0].lru, events[0].memcg), (1, 1000, 2, 7))
        bad = [e for e in events if tracecheck.kernel_scan("6.1", e.size, e.min, e.low, e.usage, e.low_reclaim)
               != e.scan]
        self.assertEqual([e.ts for e in bad], [10.5])

    def test_event_outside_a_window(self):
        self.write(HEAD + event(0.5) + mark(1.0, "s1", "start"))
        with self.assertRaisesRegex(tracecheck.TraceError, r"trace.log:3: an event outside"):
            tracecheck.read_trace(self.path)

    def test_damaged_event(self):
        self.write(HEAD + mark(1.0, "s1", "start") + event(1.5).replace("usage=650 ", ""))
        with self.assertRaisesRegex(tracecheck.TraceError, r"trace.log:4: not an mm_vmscan_memcg_protection"):
            tracecheck.read_trace(self.path)

    def test_missing(self):
        with self.assertRaisesRegex(tracecheck.TraceError, "No such file"):
            tracecheck.read_trace(self.path)

    def test_lost_events(self):
        with open(os.path.join(self.tmp, "trace-stats"), "w") as f:
            f.write("cpu 0 overrun 3\ncpu 1 overrun 4\n")
        self.assertEqual(tracecheck.lost_events(self.tmp), 7)
        self.assertIsNone(tracecheck.lost_events(os.path.join(self.tmp, "none")))


def mutant_scan(size, emin, elow, usage, low_reclaim):
    """What tests/fixtures/trace/mutant computes: 6.1 without the + 1."""
    protection = elow if not low_reclaim and elow > emin else emin
    usage = max(usage, protection)
    return max(size - size * protection // usage, tracecheck.SWAP_CLUSTER_MAX)


class Recorded(unittest.TestCase):
    """The events of `make formula-check` (low-passes, 2026-12-06) on each
    trace arm, and of the mutant, as the guests recorded them."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.events, cls.dirs = {}, {}
        for k in sorted(os.listdir(os.path.join(FIX, "events"))):
            d = os.path.join(FIX, "events", k)
            path = os.path.join(cls.tmp, k + ".log")
            with lzma.open(os.path.join(d, "trace.log.xz")) as src, open(path, "wb") as dst:
                dst.write(src.read())
            cls.events[k] = tracecheck.read_trace(path)[0]
            cls.dirs[k] = d

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    @staticmethod
    def wrong(events, formula):
        return [e for e in events if tracecheck.kernel_scan(formula, e.size, e.min, e.low, e.usage, e.low_reclaim)
                != e.scan]

    def arms(self):
        return [k for k in self.events if k != "mutant-drop1"]

    def test_the_six_arms_are_there(self):
        self.assertEqual(sorted(self.arms()), sorted(["control+trace", "v1-9783aa+trace", "v2-9de7ca+trace",
                                                      "v3-1bc63f+trace", "patched+trace",
                                                      "mglru-prop+trace@mglru"]))

    def test_every_event_matches_its_variants_formula(self):
        for k in self.arms():
            with self.subTest(kernel=k):
                evs = self.events[k]
                self.assertGreater(len(evs), 1000)
                self.assertEqual(len(self.wrong(evs, model.formula_of(k))), 0)
                self.assertEqual(tracecheck.lost_events(self.dirs[k]), 0)

    def test_both_passes_with_min_and_low(self):
        for k in self.arms():
            with self.subTest(kernel=k):
                evs = [e for e in self.events[k] if e.size >= tracecheck.SWAP_CLUSTER_MAX]
                self.assertTrue(any(e.low_reclaim for e in evs), "no low-reclaim pass")
                self.assertTrue(any(not e.low_reclaim for e in evs), "no first pass")
                self.assertTrue(all(0 < e.min < e.low for e in evs), "min and low not both set, min < low")

    def test_every_other_formula_is_told_apart(self):
        # The scenario's events separate every pair of formulas: checked
        # against any formula but its own, each arm has events that differ.
        # (Not control's: the cliff reads no usage, its events say 0.)
        for k in self.arms():
            own = model.formula_of(k)
            if own == "cliff":
                continue
            for f in model.FORMULAS:
                if f != own:
                    with self.subTest(kernel=k, formula=f):
                        self.assertGreater(len(self.wrong(self.events[k], f)), 0)

    def test_the_mutant_is_caught(self):
        evs = self.events["mutant-drop1"]
        bad = self.wrong(evs, "6.1")
        self.assertGreater(len(bad), 0)
        # Each one is 6.1's target less one page, and the mutation explains
        # every event, the ones that match 6.1 included.
        for e in bad:
            self.assertEqual(e.scan, tracecheck.kernel_scan("6.1", e.size, e.min, e.low, e.usage,
                                                            e.low_reclaim) - 1)
        self.assertEqual([e for e in evs if mutant_scan(e.size, e.min, e.low, e.usage, e.low_reclaim) != e.scan],
                         [])


class Cli(unittest.TestCase):
    """tracecheck.py on the mutant's recorded run (its samples and events)."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.run = os.path.join(self.tmp, "run")
        shutil.copytree(os.path.join(FIX, "run-mutant"), self.run)
        self.out = os.path.join(self.run, "low-passes", "mutant-drop1", "r1", "guest", "out")
        with lzma.open(os.path.join(self.out, "samples.csv.xz")) as src, \
                open(os.path.join(self.out, "samples.csv"), "wb") as dst:
            dst.write(src.read())
        with lzma.open(os.path.join(FIX, "events", "mutant-drop1", "trace.log.xz")) as src, \
                open(os.path.join(self.out, "trace.log"), "wb") as dst:
            dst.write(src.read())

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def check(self, model_word="model=6.1"):
        variants = os.path.join(self.tmp, "variants")
        with open(variants, "w") as f:
            f.write(f"mutant-drop1 base=patched+trace patches=tests/fixtures/trace/mutant {model_word} the mutant\n")
        env = dict(os.environ, VARIANTS_LOCAL=variants)
        return subprocess.run([os.path.join(ROOT, "analysis", "tracecheck.py"), self.run], env=env,
                              capture_output=True, text=True)

    def test_mismatches_exit_1_and_are_named(self):
        p = self.check()
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("| low-passes/mutant-drop1/r1 | 6.1 | 1924 | 1729 | 89.9% | 0 |", p.stdout)
        self.assertRegex(p.stdout, r"workload\.service: \w+_file L=\d+ min=25600 low=\d+ usage=\d+ "
                                   r"(first|low-reclaim) pass: the kernel computed \d+, 6\.1 gives \d+")
        self.assertIn("... and 190 more", p.stdout)

    def test_steps_measured_beside_targets(self):
        run = rundata.Run(self.run)
        os.environ["VARIANTS_LOCAL"] = os.path.join(FIX, "mutant.variants")
        try:
            model.variant_models.cache_clear()
            model.variants.cache_clear()
            rows = tracecheck.check_run(run)[0].steps()
        finally:
            del os.environ["VARIANTS_LOCAL"]
            model.variant_models.cache_clear()
            model.variants.cache_clear()
        self.assertEqual([r[0] for r in rows], ["s1", "s2"])
        for label, _, n, nlow, target, measured in rows:
            self.assertGreater(n, 0)
            self.assertGreater(target, 0)
            self.assertGreater(measured, 0)
        self.assertEqual(rows[0][2], rows[0][3], "s1: every event in the low-reclaim pass")
        self.assertEqual(rows[1][3], 0, "s2: none")

    def test_right_formula_exits_0(self):
        # With min set, the mutant computes exactly 1bc63fb1272b's formula.
        p = self.check("model=1bc63f")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertNotIn("do not match", p.stdout)

    def test_lost_events_exit_1(self):
        with open(os.path.join(self.out, "trace-stats"), "w") as f:
            f.write("cpu 0 overrun 0\ncpu 1 overrun 12\n")
        p = self.check("model=1bc63f")
        self.assertEqual(p.returncode, 1)
        self.assertIn("mutant-drop1/r1: the trace buffer lost 12 events", p.stdout)

    def test_no_events_exit_1(self):
        with open(os.path.join(self.out, "trace.log"), "w") as f:
            f.write(HEAD + mark(1.0, "s1", "start") + mark(7.0, "s1", "end"))
        p = self.check()
        self.assertEqual(p.returncode, 1)
        self.assertIn("mutant-drop1/r1: no events in its windows", p.stdout)

    def test_no_trace_exits_2(self):
        os.remove(os.path.join(self.out, "trace.log"))
        p = self.check()
        self.assertEqual(p.returncode, 2)
        self.assertIn("no job of", p.stderr)

    def test_no_formula_exits_2(self):
        p = self.check("")
        self.assertEqual(p.returncode, 2)
        self.assertIn("has no formula", p.stderr)


if __name__ == "__main__":
    tap.run(__name__)
