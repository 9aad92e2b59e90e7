#!/usr/bin/python3
"""The analysis (analysis/*.py) against the small result directory in
tests/fixtures/runs/ab, whose numbers are chosen so that every expected
value below can be worked out by hand (see make-fixtures.py there): rates
from counter deltas, settling left out, counter resets and a knob change
inside a window reported, the statistics, the model at known points, the
tables, a plot and both reports, and bad input refused. Speaks TAP."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "analysis"))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
FIX = os.path.join(ROOT, "tests", "fixtures", "runs", "ab")
MIB = 2 ** 20

import analyse  # noqa: E402
import compare  # noqa: E402
import metrics  # noqa: E402
import model  # noqa: E402
import peers  # noqa: E402
import rundata  # noqa: E402
import tap  # noqa: E402
import stats  # noqa: E402


def result(scenario, baseline=None):
    run = rundata.Run(FIX)
    return next(sr for sr in analyse.analyse(run, baseline) if sr.scenario == scenario)


class Rates(unittest.TestCase):
    def test_rate_from_deltas(self):
        p = []
        self.assertEqual(metrics.rate([(0, 0), (1, 10), (3, 30)], 1, "x", p), 10)
        self.assertEqual(p, [])

    def test_reset_left_out_and_reported(self):
        p = []
        self.assertEqual(metrics.rate([(0, 0), (1, 10), (2, 3), (3, 13)], 1, "x", p), 10)
        self.assertEqual(len(p), 1)
        self.assertIn("counter went down", p[0])

    def test_gap_left_out_and_reported(self):
        p = []
        self.assertEqual(metrics.rate([(0, 0), (1, 10), (5, 1000), (6, 1010)], 1, "x", p), 10)
        self.assertIn("gap of 4.0s", p[0])

    def test_one_sample_is_no_rate(self):
        p = []
        self.assertIsNone(metrics.rate([(0, 5)], 1, "x", p))
        self.assertIn("fewer than two samples", p[0])

    def test_window_rates_exclude_settling(self):
        # Settling scans 50000/s in the fixture; the windows 0, 1000+100r.
        sr = result("low-steps")
        self.assertEqual(sr.values("control", 1, "pgscan/s"), [0, 0, 0])
        self.assertEqual(sorted(sr.values("control", 2, "pgscan/s")), [1000, 1100, 1200])
        self.assertEqual(sorted(sr.values("patched", 2, "pgscan/s")), [300, 330, 360])

    def test_reset_in_a_real_window(self):
        sr = result("low-steps")
        self.assertEqual(sorted(sr.values("control", 3, "pgscan/s")), [1000, 1100, 1200])
        self.assertTrue(any("control/r3 step s3: workload.slice pgscan: counter went down" in p
                            for p in sr.problems))

    def test_knob_change_ends_the_window(self):
        # patched r2's last s2 sample was taken after s3's knob change and
        # carries a jump of 50000: the window must end before it.
        sr = result("low-steps")
        self.assertIn(330, sr.values("patched", 2, "pgscan/s"))
        self.assertTrue(any("patched/r2 step s2: memory.low changed inside the window" in p
                            for p in sr.problems))
        self.assertEqual(sr.values("patched", 2, "memory.low"), [500 * MIB] * 3)

    def test_other_metrics(self):
        sr = result("low-steps")
        self.assertAlmostEqual(sr.values("control", 2, "pgsteal/s")[0], 900)
        self.assertAlmostEqual(sr.values("control", 2, "refaults/s")[0], 500)
        self.assertAlmostEqual(sr.values("control", 2, "pgmajfault/s")[0], 2)
        self.assertAlmostEqual(sr.values("control", 2, "psi_some%")[0], 2.0)
        self.assertAlmostEqual(sr.values("control", 2, "psi_full%")[0], 1.0)
        self.assertAlmostEqual(sr.values("control", 2, "scan_share%")[0], 25.0)
        self.assertAlmostEqual(sr.values("control", 2, "app_rate")[0], 100000)
        self.assertEqual(sr.values("control", 2, "memory.current")[0], 1000 * MIB)
        self.assertEqual(sr.values("control", 2, "events.low")[0], 5)


class Statistics(unittest.TestCase):
    def test_mean_sd_ci(self):
        s = stats.summary([1000, 1100, 1200])
        self.assertEqual(s["mean"], 1100)
        self.assertAlmostEqual(s["sd"], 100)
        # t(0.975, 2) = 4.3027; 4.3027 * 100 / sqrt(3) = 248.42
        self.assertAlmostEqual(s["ci95"], 248.42, places=1)

    def test_t_quantiles(self):
        self.assertAlmostEqual(stats.t_quantile(0.975, 1), 12.706, places=2)
        self.assertAlmostEqual(stats.t_quantile(0.975, 10), 2.228, places=3)

    def test_welch(self):
        # By hand: t = -3 / sqrt(1/3 + 1/3) = -3.674, df = 4, p = 0.0213.
        t, df, p = stats.welch([1, 2, 3], [4, 5, 6])
        self.assertAlmostEqual(t, -3.6742, places=3)
        self.assertAlmostEqual(df, 4.0)
        self.assertAlmostEqual(p, 0.02131, places=4)

    def test_welch_unequal(self):
        # 300/330/360 against 1000/1100/1200: sd 30 and 100; t = -770 /
        # sqrt(300 + 3333.3) = -12.774; df = 3633.3^2 / (300^2/2 + 3333.3^2/2)
        t, df, p = stats.welch([300, 330, 360], [1000, 1100, 1200])
        self.assertAlmostEqual(t, -12.774, places=2)
        self.assertAlmostEqual(df, 2.3572, places=3)
        self.assertLess(p, 0.01)

    def test_detectable_difference(self):
        # Equal spreads sd 1, n 3 a side: sqrt(2/3) * (t.975 + t.80) at
        # df 4: (2.776 + 0.941) * 0.8165 = 3.035.
        a, b = [9, 10, 11], [19, 20, 21]
        self.assertAlmostEqual(stats.detectable(a, b), 3.035, places=2)
        self.assertIsNone(stats.detectable([1], b))
        self.assertEqual(stats.detectable([5, 5], [6, 6]), 0.0)
        # Smaller differences need more repeats; the detectable one itself
        # is reached at the run's own n.
        self.assertEqual(stats.repeats_for(3.04, 1, 1), 3)
        self.assertGreater(stats.repeats_for(1.0, 1, 1), 10)
        self.assertIsNone(stats.repeats_for(0.001, 1, 1))

    def test_paired(self):
        # Differences 1, 2, 2: mean 5/3, sd sqrt(1/3); t = (5/3) / (sd /
        # sqrt(3)) = 5, df 2, p = 1 - 5 / sqrt(27) = 0.0377. Welch, which
        # ignores the pairing, gets p 0.08 from the same numbers.
        t, df, p = stats.paired([1, 2, 3], [0, 0, 1])
        self.assertAlmostEqual(t, 5.0)
        self.assertEqual(df, 2)
        self.assertAlmostEqual(p, 1 - 5 / 27 ** 0.5)
        self.assertGreater(stats.welch([1, 2, 3], [0, 0, 1])[2], 0.05)
        self.assertEqual(stats.paired([2, 3], [1, 2])[2], 0.0)
        self.assertEqual(stats.paired([2, 3], [2, 3])[2], 1.0)
        self.assertIsNone(stats.paired([1], [2]))
        with self.assertRaises(ValueError):
            stats.paired([1, 2], [1])

    def test_too_few(self):
        self.assertIsNone(stats.welch([1], [2, 3]))
        self.assertIsNone(stats.summary([5])["ci95"])

    def test_versus_baseline(self):
        pct, p = result("low-steps").versus("patched", 2)
        self.assertAlmostEqual(pct, 30.0)
        self.assertAlmostEqual(p, stats.welch([300, 330, 360], [1000, 1100, 1200])[2])


class Model(unittest.TestCase):
    def test_design_table(self):
        # First-pass fractions at usage / elow, worked by hand from each formula.
        for ratio, want in ((1.05, (1, 0.05, 0.05, 0.048, 0.048)),
                            (1.3, (1, 0.30, 0.30, 0.23, 0.23)),
                            (2.0, (1, 1, 1, 0.5, 0.5)),
                            (3.0, (1, 1, 1, 0.67, 0.67))):
            got = [model.scan_fraction(v, ratio, 0, 1) for v in model.FORMULAS]
            for g, w in zip(got, want):
                self.assertAlmostEqual(g, w, places=2, msg=f"usage/elow {ratio}")

    def test_within_protection(self):
        for v in model.FORMULAS:
            self.assertEqual(model.scan_fraction(v, 0.9, 0, 1), 0)
            self.assertEqual(model.scan_fraction(v, 0.3, 0.4, 1, low_reclaim=True), 0)

    def test_v2_low_reclaim_with_low_below_min(self):
        # 9de7ca46ad26's low-reclaim pass with elow <= emin takes the
        # overage branch: usage 450, emin 400, elow 0 scans 450/400 - 1.
        self.assertAlmostEqual(model.scan_fraction("9de7ca", 450, emin=400, elow=0, low_reclaim=True), 0.125)
        # v1 drops the "- L" in that pass.
        self.assertAlmostEqual(model.scan_fraction("9783aa", 450, emin=400, elow=0, low_reclaim=True), 1.0)

    def test_low_reclaim_with_emin(self):
        # usage/elow 0.5, emin 0.4 elow: 009 0.5, 010 0.17, 011 0.2, cliff 1.
        got = [model.scan_fraction(v, 0.5, 0.4, 1, low_reclaim=True) for v in model.FORMULAS]
        for g, w in zip(got, (1, 0.5, 0.167, 0.2, 0.2)):
            self.assertAlmostEqual(g, w, places=2)

    def test_arms_and_unknown(self):
        self.assertEqual(model.formula_of("patched@mglru"), "cliff")
        self.assertEqual(model.formula_of("patched@zswap"), "6.1")
        self.assertEqual(model.formula_of("v1-9783aa@norecursive"), "9783aa")
        self.assertEqual(model.formula_of("v1-9783aa"), "9783aa")
        self.assertIsNone(model.formula_of("mine"))
        self.assertIsNone(model.formula_of("mine@zswap"))
        self.assertIsNone(model.formula_of("patched@other"))
        with self.assertRaises(ValueError):
            model.scan_fraction("mine", 1, 0, 1)

    def test_variants_file(self):
        # The suite's variants and their formulas come from patches/variants
        # alone: every series variant there has a model= word.
        with open(os.path.join(ROOT, "patches", "variants")) as fh:
            names = [line.split()[0] for line in fh if line.strip() and not line.startswith("#")]
        self.assertEqual(sorted(model.read_variants([os.path.join(ROOT, "patches", "variants")])), sorted(names))
        self.assertEqual(model.formula_of("v2-9de7ca"), "9de7ca")
        # A user's kernel gets a formula by naming one; a wrong one is an
        # error with file and line; no model= means no model.
        with tempfile.TemporaryDirectory() as d:
            local = os.path.join(d, "variants.local")
            with open(local, "w") as fh:
                fh.write("# mine\nmine\tpatches=/x base=patched model=6.1\tmy kernel\n"
                         "theirs\tbzimage=/b config=/c\ttheirs\n")
            table = model.read_variants([local])
            self.assertEqual(table, {"mine": "6.1", "theirs": None})
            self.assertEqual(model.formula_of("mine@mglru", table), "cliff")
            self.assertIsNone(model.formula_of("theirs", table))
            with open(local, "a") as fh:
                fh.write("bad\tseries=1 model=6.2\tbad\n")
            with self.assertRaisesRegex(ValueError, r"variants.local:4: model=6.2: not a formula"):
                model.read_variants([local])
            # model@ARM= overrides the arm's model for that variant only; a
            # wrong one is refused like model=.
            with open(local, "w") as fh:
                fh.write("prop\tpatches=/x base=patched model=6.1 model@mglru=6.1\tMGLRU fixed\n"
                         "plain\tpatches=/x base=patched model=6.1\tstock\n")
            overrides = model.read_variant_models([local])
            table = model.read_variants([local])
            self.assertEqual(model.formula_of("prop@mglru", table, overrides=overrides), "6.1")
            self.assertEqual(model.formula_of("plain@mglru", table, overrides=overrides), "cliff")
            self.assertEqual(model.formula_of("prop@zswap", table, overrides=overrides), "6.1")
            with open(local, "w") as fh:
                fh.write("bad\tpatches=/x model=6.1 model@mglru=nope\tx\n")
            with self.assertRaisesRegex(ValueError, "variants.local:1: model@mglru=nope"):
                model.read_variant_models([local])
        # The suite's own: MGLRU is the cliff on patched, 6.1's formula on
        # the variant with the MGLRU port.
        self.assertEqual(model.formula_of("patched@mglru"), "cliff")
        self.assertEqual(model.formula_of("mglru-prop@mglru"), "6.1")

    def test_arms_file(self):
        # Each arm's model comes from bench/arms: mglru is the cliff, the
        # others keep the variant's formula; a bad model names file and line.
        self.assertEqual(model.read_arms(), {"mglru": "cliff", "zswap": "variant", "norecursive": "variant",
                                             "slubdebug": "variant", "pagepoison": "variant"})
        self.assertEqual(model.formula_of("v2-9de7ca@zswap", arm_table={"zswap": "variant"}), "9de7ca")
        self.assertEqual(model.formula_of("v2-9de7ca@x", arm_table={"x": "6.1"}), "6.1")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "arms")
            with open(path, "w") as fh:
                fh.write("# arms\nok lru_gen=on model=cliff fine\nodd zswap=on model=6.2 wrong\n")
            with self.assertRaisesRegex(ValueError, r"arms:3: arm odd: model=6.2: say variant or one of"):
                model.read_arms(path)

    def test_effective_protection(self):
        # The selftest's start: C, D claim 50 and 25 of B's 50, so 2/3 each.
        e = model.effective_protection([50, 50, 50, 0], [75, 25, 0, 500], 50, False)
        for g, w in zip(e, (100 / 3, 50 / 3, 0, 0)):
            self.assertAlmostEqual(g, w)
        # C, D at 20 claim 40; with recursiveprot the 10 left go to the one
        # using more than it asks for (E, 50 of the 90 - 40 excess).
        e = model.effective_protection([20, 20, 50, 0], [75, 25, 0, 500], 50, True)
        self.assertEqual(e, [20, 20, 10, 0])
        e = model.effective_protection([20, 20, 50, 0], [75, 25, 0, 500], 50, False)
        self.assertEqual(e, [20, 20, 0, 0])

    def test_selftest_split(self):
        # The cliff: C and D lose alike until both are at 25 (where
        # c = 50c/(c + 25) and 25 = 1250/(c + 25)); in steps of 10% they
        # stop at the first 50 * 0.9^k below it, 23.9 (the cliff's model value).
        c, d, e, f = model.selftest_split("cliff", alpha=0.01)
        self.assertAlmostEqual(c, 25, delta=0.3)
        self.assertAlmostEqual(d, 25, delta=0.3)
        self.assertEqual((e, f), (0, 0))
        c, d, _, _ = model.selftest_split("cliff")
        self.assertAlmostEqual(c, 50 * 0.9 ** 7, places=6)
        # 6.1 with upstream's steps: the 29M/21M the test expects.
        c, d, _, _ = model.selftest_split("6.1")
        self.assertAlmostEqual(c, 29, delta=0.5)
        self.assertAlmostEqual(d, 21, delta=0.5)
        self.assertEqual(model.selftest_split("1bc63f"), model.selftest_split("6.1"))

    def test_overlay_from_measured_values(self):
        sr = result("low-steps")
        # usage 1000M, memory.low 500M: 6.1 scans 1 - 500/1000 = 50%.
        self.assertAlmostEqual(sr.model_fraction("patched", 2), 0.5)
        self.assertEqual(sr.model_fraction("control", 2), 1.0)
        self.assertAlmostEqual(sr.measured_fraction("patched", 2), 0.3)

    def test_peer_ratio(self):
        sr = result("emin-baseline")
        self.assertTrue(sr.has_peer)
        self.assertAlmostEqual(sr.peer_ratio("patched", 1), 0.5)
        # low-reclaim pass: (1 - 400/900) against 1, each times its LRU
        # (800M against 1000M): the scan target is fraction x LRU.
        self.assertAlmostEqual(sr.peer_ratio_model("patched", 1), 5 / 9 * 0.8)
        self.assertAlmostEqual(sr.peer_ratio_model("control", 1), 0.8)


class Targeted(unittest.TestCase):
    """low-reclaim: the workload and its competitor under exp.slice."""

    def test_roles(self):
        run = rundata.Run(FIX)
        job = next(j for j in run.jobs if j.scenario == "low-reclaim")
        self.assertEqual(job.cgroup("workload"), "exp.slice/exp-workload.slice")
        self.assertEqual(job.cgroup("competitor"), "exp.slice/exp-competitor.slice/competitor.service")
        # Runs from before cgroups.tsv: the global-pressure layout.
        old = next(j for j in run.jobs if j.scenario == "low-steps")
        self.assertEqual(old.cgroup("workload"), "workload.slice")
        self.assertEqual(old.cgroup("peer"), "peer.slice")

    def test_lru_and_scanned(self):
        sr = result("low-reclaim")
        w = sr.windows[analyse.PRIMARY]["control"][2][0]
        c = sr.windows[analyse.COMPETITOR]["control"][2][0]
        # The LRU total stays 400M and 200M while its lists move.
        self.assertAlmostEqual(w["lru_pages"], 102400)
        self.assertAlmostEqual(c["lru_pages"], 51200)
        # pgscan + pgrefill, settling (99999/s) left out.
        self.assertAlmostEqual(w["scanned/s"], 2048)
        self.assertAlmostEqual(c["scanned_of_lru/s"], 0.02)

    def test_scan_fraction(self):
        sr = result("low-reclaim")
        self.assertTrue(sr.has_competitor)
        self.assertEqual(sr.values("control", 1, "scan_fraction"), [0.0, 0.0])
        self.assertEqual([round(x, 3) for x in sr.values("patched", 2, "scan_fraction")], [0.495, 0.505])
        self.assertAlmostEqual(stats.mean(sr.values("control", 2, "scan_fraction")), 1.0, places=3)
        self.assertAlmostEqual(stats.mean(sr.values("patched", 3, "scan_fraction")), 1.0, places=3)
        # No competitor, no fraction.
        self.assertFalse(result("emin-baseline").has_competitor)

    def test_against_the_formula(self):
        sr = result("low-reclaim")
        # usage 400M, memory.low 200M: 6.1 scans 1 - 200/400; the cliff all.
        self.assertAlmostEqual(sr.model_fraction("patched", 2), 0.5)
        self.assertEqual(sr.model_fraction("control", 2), 1.0)
        self.assertEqual(sr.model_fraction("patched", 1), 0.0)

    def test_fraction_table(self):
        out = subprocess.run([sys.executable, os.path.join(ROOT, "analysis", "table.py"), FIX],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("low-reclaim: scan fraction of exp.slice/exp-workload.slice", out.stdout)
        # Refused memory.reclaim requests are counted per step, not hidden.
        self.assertIn("  patched 0%: 30 of 40 requests (most refused", out.stdout)
        self.assertNotIn("  control 0%:", out.stdout)
        self.assertRegex(out.stdout, r"\|\s+50% \|\s+200M \|\s+50\.0 ± 6\.[45]% \(2\) \|\s+50\.0% \|"
                                     r"\s+100\.0 ± 0\.0% \(2\) \|\s+100\.0% \|\s+-50\.0 \|")


class FakeSamples:
    """Just what metrics.per_second reads of a job's samples."""

    def __init__(self, series, interval=1.0):
        self.series, self.interval = series, interval

    def get(self, cgroup, source, key):
        return self.series.get((cgroup, source, key), [])


class FakeJob:
    def __init__(self, series):
        self.samples = FakeSamples(series)

    def cgroup(self, role):
        return {"workload": "w", "competitor": "c"}[role]


def counters(cgroup, scanned, lru_pages, label="s1", times=None):
    """Series of cgroup: pgscan as the running sum of scanned (pgrefill 0),
    its LRU all inactive_file, at times (0, 1, 2, ...)."""
    times = times or list(range(len(scanned)))
    out, total = {}, 0
    for key in ("pgscan", "pgrefill", "inactive_anon", "active_anon", "active_file", "inactive_file"):
        out[(cgroup, "memory.stat", key)] = []
    for t, d, lru in zip(times, scanned, lru_pages):
        total += d
        for key, v in (("pgscan", total), ("pgrefill", 0), ("inactive_anon", 0), ("active_anon", 0),
                       ("active_file", 0), ("inactive_file", lru * metrics.PAGE)):
            out[(cgroup, "memory.stat", key)].append((t, label, v))
    return out


class PerSecond(unittest.TestCase):
    """metrics.per_second and seconds.py: the fraction of each interval."""

    def test_each_interval_on_its_own(self):
        # Workload 1000 pages, competitor 10000: scanned 10, 30, 0 and
        # 1000, 1000, 500 pages: 10% / 10%, 3% / 10%, 0 / 5%.
        series = counters("w", [0, 10, 30, 0], [1000] * 4)
        series.update(counters("c", [0, 1000, 1000, 500], [10000] * 4))
        got = metrics.per_second(FakeJob(series), {"label": "s1"})
        self.assertEqual([t for t, _ in got], [1, 2, 3])
        for (_, f), want in zip(got, (0.1, 0.3, 0.0)):
            self.assertAlmostEqual(f, want)

    def test_lru_of_the_interval(self):
        # The competitor's LRU halves over the interval: its mean, 7500.
        series = counters("w", [0, 100], [1000, 1000])
        series.update(counters("c", [0, 750], [10000, 5000]))
        (_, f), = metrics.per_second(FakeJob(series), {"label": "s1"})
        self.assertAlmostEqual(f, 1.0)

    def test_bad_intervals_left_out(self):
        # A gap (1 to 4: over 2.5 intervals), a counter that goes down (a
        # re-created cgroup), a competitor not scanned (no fraction), and
        # samples of another label.
        series = counters("w", [0, 10, 10, -100, 10, 10], [1000] * 6, times=[0, 1, 4, 5, 6, 7])
        series.update(counters("c", [0, 100, 100, 100, 0, 100], [1000] * 6, times=[0, 1, 4, 5, 6, 7]))
        series[("w", "memory.stat", "pgscan")].append((8, "s2", 10 ** 6))
        got = metrics.per_second(FakeJob(series), {"label": "s1"})
        self.assertEqual([t for t, _ in got], [1, 6, 7])
        self.assertAlmostEqual(got[0][1], 0.1)
        self.assertIsNone(got[1][1])
        self.assertAlmostEqual(got[2][1], 0.1)

    def test_fixture(self):
        # The fixture scans at a steady rate: every second is the window's.
        run = rundata.Run(FIX)
        job = next(j for j in run.jobs if j.scenario == "low-reclaim" and j.kernel == "patched" and j.repeat == 1)
        row = next(r for r in job.steps if r["step"] == "2")
        got = metrics.per_second(job, row)
        self.assertGreaterEqual(len(got), 3)
        for _, f in got:
            self.assertAlmostEqual(f, 0.495, places=3)

    def test_cli(self):
        tool = os.path.join(ROOT, "analysis", "seconds.py")
        out = subprocess.run([sys.executable, tool, FIX], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("low-reclaim: scan fraction of exp.slice/exp-workload.slice", out.stdout)
        # patched at 50% of memory.low: 49.5 and 50.5% in its two repeats,
        # steady inside each window.
        self.assertRegex(out.stdout, r"\|\s+50% \|\s+patched \|\s+2 \|\s+50\.0% \|\s+1\.4 \|\s+0\.[01] \|\s+0\.0 \|")
        self.assertRegex(out.stdout, r"50% patched r1: 49\.5 49\.5 49\.5")
        # No other scenario of the fixture has a competitor.
        self.assertNotIn("low-steps:", out.stdout)
        out = subprocess.run([sys.executable, tool, FIX, "nosuch"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 2)
        self.assertIn("no scenario 'nosuch'", out.stderr)
        out = subprocess.run([sys.executable, tool, FIX, "low-steps"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 1)
        self.assertIn("has a competitor (low-steps): nothing to show", out.stderr)


class OverHosts(unittest.TestCase):
    """A run whose jobs were spread over hosts (meta.json "dispatch"):
    the comparison paired by host."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.run = os.path.join(self.tmp, "ab")
        shutil.copytree(FIX, self.run)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def place(self, hosts):
        """hosts: {(kernel, repeat): host} for the low-reclaim jobs."""
        import json
        for (k, r), h in hosts.items():
            path = os.path.join(self.run, "low-reclaim", k, f"r{r}", "meta.json")
            with open(path) as f:
                meta = json.load(f)
            meta["dispatch"] = {"host": h, "hostname": h, "block": f"b{r}", "attempt": 1}
            with open(path, "w") as f:
                json.dump(meta, f)

    def low_reclaim(self):
        return next(sr for sr in analyse.analyse(rundata.Run(self.run)) if sr.scenario == "low-reclaim")

    def test_paired_by_repeat_on_one_host(self):
        self.place({("control", 1): "a", ("patched", 1): "a", ("control", 2): "b", ("patched", 2): "b"})
        sr = self.low_reclaim()
        self.assertTrue(sr.spans_hosts())
        pr = sr.paired("patched", 2, "scan_fraction")
        self.assertEqual((pr["pairs"], pr["hosts"]), (2, ["a", "b"]))
        # patched 0.4949 and 0.5051 against control's 1.0 and 1.0.
        self.assertAlmostEqual(pr["diff"], -0.5)
        self.assertAlmostEqual(pr["p"], stats.paired([0.494921875, 0.505078125], [1.0, 1.0])[2])
        # Where the hosts differ (control too measured 1 point higher on
        # b), the pairing takes the host out: every pair differs by 50.0
        # points (p 0 but for rounding); Welch sees two spreads (p 0.0002).
        for w, v in zip(sr.windows[analyse.PRIMARY]["control"][2], (0.994921875, 1.005078125)):
            w.values["scan_fraction"] = v
        self.assertLess(sr.paired("patched", 2, "scan_fraction")["p"], 1e-9)
        self.assertGreater(stats.welch(sr.values("patched", 2, "scan_fraction"),
                                       sr.values("control", 2, "scan_fraction"))[2], 1e-4)
        import report
        md, _, _ = report.build(self.run, out=os.path.join(self.tmp, "out"))
        text = open(md).read()
        self.assertIn("### Paired by host", text)
        self.assertIn("These jobs ran on 2 hosts.", text)
        self.assertRegex(text, r"\| patched \| 50% \| 2 \| a, b \| -50\.0 pp \| 0\.006 \|")

    def test_a_repeat_split_over_hosts_is_no_pair(self):
        self.place({("control", 1): "a", ("patched", 1): "a", ("control", 2): "b", ("patched", 2): "a"})
        sr = self.low_reclaim()
        self.assertTrue(sr.spans_hosts())
        self.assertIsNone(sr.paired("patched", 2, "scan_fraction"))

    def test_one_host_no_section(self):
        self.place({("control", 1): "a", ("patched", 1): "a", ("control", 2): "a", ("patched", 2): "a"})
        self.assertFalse(self.low_reclaim().spans_hosts())
        import report
        md, _, _ = report.build(self.run, out=os.path.join(self.tmp, "out"))
        self.assertNotIn("Paired by host", open(md).read())


class Fixtures(unittest.TestCase):
    def test_regenerated_fixtures_are_the_checked_in_ones(self):
        tmp = tempfile.mkdtemp()
        try:
            gen = os.path.join(ROOT, "tests", "fixtures", "runs", "make-fixtures.py")
            subprocess.run([sys.executable, gen, tmp], check=True)
            new, old = os.path.join(tmp, "ab"), FIX
            names = lambda d: sorted(os.path.relpath(os.path.join(r, f), d)  # noqa: E731
                                     for r, _, fs in os.walk(d) for f in fs)
            self.assertEqual(names(new), names(old))
            for n in names(old):
                with open(os.path.join(old, n), "rb") as a, open(os.path.join(new, n), "rb") as b:
                    self.assertEqual(a.read(), b.read(), f"{n} differs from what make-fixtures.py writes")
        finally:
            shutil.rmtree(tmp)


class Run(unittest.TestCase):
    def test_failed_job_reported(self):
        run = rundata.Run(FIX)
        self.assertIn("low-steps/patched/r4: failed:timeout", run.problems)
        self.assertEqual(len(run.good_jobs("low-steps")), 6)

    def test_oom_story(self):
        sr = result("oom-ramp")
        (rep, s), = sr.ooms["patched"]
        self.assertEqual(s["oom_kills"], 1)
        self.assertEqual(s["first_oom_s"], 15)
        self.assertEqual(s["workload_result"], "oom-kill")
        self.assertEqual(s["held_report"], 1920 * MIB)

    def test_baseline_choice(self):
        self.assertEqual(result("low-steps").kernels, ["control", "patched"])
        self.assertEqual(result("low-steps", "patched").kernels, ["patched", "control"])
        with self.assertRaises(ValueError):
            result("low-steps", "nosuch")


class Outputs(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_reports_and_plots(self):
        import report
        md, ht, _ = report.build(FIX, out=self.tmp)
        text = open(md).read()
        self.assertIn("| 50% | 500M | 1,100 ± 248 (n=3) | 330 ± 75 (n=3) | 30% |", text)
        self.assertIn("Against the model", text)
        # The answer first: where kernels differ, and what the run could not resolve.
        self.assertLess(text.index("## The answer"), text.index("## Scenario"))
        self.assertIn("low-reclaim, scan fraction: patched against control: differs at 50% (-50.0 points, p 0.006); "
                      "no difference found at 116% (could have found 0.0 points)", text)
        self.assertIn("low-steps, pgscan/s: patched against control: differs at 50% (-770.0/s", text)
        self.assertIn("Scan fraction against the formula", text)
        self.assertIn("low-steps/patched/r4: failed:timeout", text)
        self.assertIn("counter went down", text)
        self.assertIn("oom-kill", text)
        for name in ("low-steps-pgscan", "low-steps-model", "low-steps-workload", "emin-baseline-peers",
                     "oom-ramp-oom", "selftests-cd"):
            for ext in ("png", "svg"):
                path = os.path.join(self.tmp, "plots", f"{name}.{ext}")
                self.assertGreater(os.path.getsize(path), 1000, path)
        html = open(ht).read()
        self.assertIn("data:image/png;base64,", html)
        self.assertNotIn("src='plots/", html)
        self.assertIn("6.1.192-patched", html)

    def test_table_cli(self):
        out = subprocess.run([sys.executable, os.path.join(ROOT, "analysis", "table.py"), FIX],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, r"\|\s+50% \|\s+500M \|\s+330 ± 75 \(3\) \|\s+1100 ± 248 \(3\) \|\s+30% \|")
        self.assertIn("missing: low-steps/patched/r4: failed:timeout", out.stdout)

    def test_compare_aa(self):
        rows, notes = compare.compare(FIX, FIX)
        self.assertTrue(rows)
        self.assertTrue(all(r[5] in ("100%", "n/a") for r in rows))
        self.assertTrue(all(r[6] in ("1.000", "-") for r in rows))
        # A fraction is compared as a difference in points.
        rows, _ = compare.compare(FIX, FIX, "scan_fraction")
        half = [r for r in rows if r[0] == "low-reclaim" and r[1] == "patched" and r[2] == "50%"]
        self.assertEqual(half, [["low-reclaim", "patched", "50%", "50.0 ± 6.5% (2)", "50.0 ± 6.5% (2)",
                                 "+0.0 points", "1.000"]])

    def test_metric_registry(self):
        # Every metric of the registry is computed for the fixture's windows
        # (some value in some step), so compare and the report can use it.
        runs = analyse.analyse(rundata.Run(FIX))
        for m in metrics.METRICS:
            seen = [v for sr in runs for k in sr.kernels for n in sr.steps
                    for v in sr.values(k, n, m.name) if v is not None]
            self.assertTrue(seen, f"{m.name}: in the registry, but no window has it")
            rows, _ = compare.compare(FIX, FIX, m.name)
            self.assertTrue(rows, m.name)
        with self.assertRaisesRegex(ValueError, r"unknown metric 'speed' \(one of: pgscan/s, "):
            metrics.metric("speed")


class Peers(unittest.TestCase):
    def test_tap_parsing(self):
        res, vals = peers.parse_tap("ok 1 test_a\nnot ok 2 test_b\nok 3 # SKIP test_c\n"
                                    "# test_memcg_low: memory.current C=1 D=2 E=3 F=4\n")
        self.assertEqual(res, {"test_a": "pass", "test_b": "fail", "test_c": "skip"})
        self.assertEqual(vals, {"test_memcg_low": (1, 2, 3, 4)})

    def test_fixture_table(self):
        data, problems = peers.load(FIX)
        self.assertEqual(problems, [])
        self.assertEqual(data["patched"]["recursiveprot"]["runs"][0]["results"]["test_memcg_low"], "fail")
        self.assertEqual(data["patched"]["plain"]["runs"][0]["results"]["test_memcg_low"], "pass")
        self.assertEqual(data["patched"]["plain"]["mount_options"], "rw,nsdelegate")
        self.assertEqual(len(data["control"]["plain"]["runs"]), 2)
        header, body = peers.rows(data)
        row = dict(zip(header, next(r for r in body if r[0] == "test_memcg_min")))
        self.assertEqual(row["control (plain)"], "pass 1/2")
        self.assertEqual(row["patched (plain)"], "pass")
        header, body = peers.value_rows(data)
        rows = {(r[0], r[1], r[2]): dict(zip(header, r)) for r in body}
        self.assertEqual(rows[("patched", "plain", "test_memcg_low")]["C, D close to 29M, 21M"], "1/1")
        control = rows[("control", "plain", "test_memcg_min")]
        self.assertEqual(control["C, D close to 29M, 21M"], "1/2")
        # Means of 22 and 25, 24 and 25; sd of two values d apart is d/sqrt(2).
        self.assertEqual(control["C"], "23.5 ± 2.1M")
        self.assertEqual(control["D"], "24.5 ± 0.7M")
        self.assertEqual(control["model C, D (fine steps)"], "25.0, 25.0M")

    def test_verdict(self):
        self.assertEqual(peers.verdict(["pass", "pass"]), "pass")
        self.assertEqual(peers.verdict(["fail", "pass", "fail"]), "pass 1/3")
        self.assertEqual(peers.verdict([]), "-")

    def test_values_close_as_the_selftest(self):
        # |a - b| <= (a + b) / 100 * 10: 24M against 29M passes (5 <= 5.3),
        # 22M does not (7 > 5.1).
        self.assertTrue(peers.values_close(24 * MIB, 29 * MIB, 10))
        self.assertFalse(peers.values_close(22 * MIB, 29 * MIB, 10))

    def test_in_the_report(self):
        import report
        tmp = tempfile.mkdtemp()
        try:
            md, _, _ = report.build(FIX, out=tmp)
            text = open(md).read()
            self.assertIn("Peer suite: the kernel's memcg selftests", text)
            self.assertIn("| test_memcg_low | fail | pass 1/2 | fail | pass |", text)
        finally:
            shutil.rmtree(tmp)

    def test_missing_run(self):
        tmp = tempfile.mkdtemp()
        try:
            os.makedirs(os.path.join(tmp, "peers", "selftests", "control"))
            data, problems = peers.load(tmp)
            self.assertEqual(data, {"control": {}})
            self.assertTrue(any("no recursiveprot run" in p for p in problems))
        finally:
            shutil.rmtree(tmp)


class BadInput(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def cli(self, script, *args):
        return subprocess.run([sys.executable, os.path.join(ROOT, "analysis", script), *args],
                              capture_output=True, text=True)

    def test_not_a_directory(self):
        out = self.cli("report.py", os.path.join(self.tmp, "nope"))
        self.assertEqual(out.returncode, 2)
        self.assertIn("is not a run directory", out.stderr)

    def test_empty_directory(self):
        out = self.cli("table.py", self.tmp)
        self.assertEqual(out.returncode, 2)
        self.assertIn("holds no jobs", out.stderr)

    def copy(self):
        dst = os.path.join(self.tmp, "run")
        shutil.copytree(FIX, dst)
        return dst

    def test_wrong_schema(self):
        run = self.copy()
        path = os.path.join(run, "low-steps", "control", "r1", "guest", "out", "samples.csv")
        text = open(path).read().replace("schema=1", "schema=9", 1)
        open(path, "w").write(text)
        out = self.cli("report.py", run, "--out", self.tmp)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("schema '9', this analysis reads schema 1", open(os.path.join(self.tmp, "report.md")).read())

    def test_garbage_value(self):
        run = self.copy()
        path = os.path.join(run, "low-steps", "control", "r1", "guest", "out", "samples.csv")
        with open(path, "a") as f:
            f.write("30.000,done,workload.slice,memory.stat,pgscan,lots\n")
        sr = next(s for s in analyse.analyse(rundata.Run(run)) if s.scenario == "low-steps")
        self.assertTrue(any("value 'lots' is not a number" in p for p in sr.problems))
        self.assertEqual(len(sr.values("control", 2, "pgscan/s")), 2)

    def test_truncated_last_line(self):
        run = self.copy()
        path = os.path.join(run, "low-steps", "control", "r1", "guest", "out", "samples.csv")
        with open(path, "a") as f:
            f.write("30.000,done,workload.sl")
        sr = next(s for s in analyse.analyse(rundata.Run(run)) if s.scenario == "low-steps")
        self.assertTrue(any("cut short" in p for p in sr.problems))
        self.assertEqual(len(sr.values("control", 2, "pgscan/s")), 3)

    def test_damaged_json(self):
        # A truncated result.json, an unknown schema, a meta.json that is
        # not JSON: each is named, and the report goes on with the rest.
        run = self.copy()
        job = os.path.join(run, "low-steps", "control")
        with open(os.path.join(job, "r1", "result.json")) as f:
            text = f.read()
        with open(os.path.join(job, "r1", "result.json"), "w") as f:
            f.write(text[:len(text) // 2])
        with open(os.path.join(job, "r2", "result.json"), "w") as f:
            f.write('{"schema": 7, "result": "ok"}\n')
        with open(os.path.join(job, "r3", "meta.json"), "w") as f:
            f.write("{nonsense\n")
        r = rundata.Run(run)
        problems = "\n".join(r.problems)
        self.assertRegex(problems, r"low-steps/control/r1: result.json: not readable JSON")
        self.assertIn("low-steps/control/r1: left out (its result.json cannot be read)", problems)
        self.assertIn("low-steps/control/r2: result.json: schema 7, this analysis reads schema 1", problems)
        self.assertRegex(problems, r"low-steps/control/r3: meta.json: not readable JSON")
        self.assertNotIn("low-steps/control/r3: left out", problems)
        sr = next(s for s in analyse.analyse(r) if s.scenario == "low-steps")
        self.assertEqual(len(sr.values("control", 2, "pgscan/s")), 1)
        self.assertEqual(len(sr.values("patched", 2, "pgscan/s")), 3)
        out = self.cli("report.py", run, "--out", self.tmp)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("schema 7, this analysis reads schema 1", open(os.path.join(self.tmp, "report.md")).read())

    def test_bad_manifest(self):
        run = self.copy()
        with open(os.path.join(run, "manifest.tsv"), "a") as f:
            f.write("garbage\n")
        with self.assertRaises(rundata.RunError) as e:
            rundata.Run(run)
        self.assertIn("manifest.tsv:", str(e.exception))

    def test_unknown_metric(self):
        out = self.cli("compare.py", FIX, FIX, "--metric", "speed")
        self.assertEqual(out.returncode, 2)
        self.assertIn("unknown metric 'speed'", out.stderr)

    def test_bad_baseline(self):
        out = self.cli("report.py", FIX, "--baseline", "nosuch", "--out", self.tmp)
        self.assertEqual(out.returncode, 2)
        self.assertIn("baseline kernel 'nosuch'", out.stderr)


if __name__ == "__main__":
    tap.run(__name__)
