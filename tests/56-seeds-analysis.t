#!/usr/bin/python3
"""analysis/seeds.py against recorded guest output (tests/fixtures/seeds/run:
the kmalloc check on patched, patched@slubdebug and the two reverts, the
nomemcg check on patched, copied from a real `bench/seeds.sh run` with the
console logs cut short), and against mutations of it: each judgement is
shown to fail where its evidence says it must. Speaks TAP."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "analysis"))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
FIX = os.path.join(ROOT, "tests", "fixtures", "seeds", "run")

import seeds  # noqa: E402
import tap  # noqa: E402

OOPS = """[    2.101000] BUG: kernel NULL pointer dereference, address: 0000000000000a30
[    2.101100] #PF: supervisor read access in kernel mode
[    2.101200] Oops: 0000 [#1] PREEMPT SMP NOPTI
[    2.101300] CPU: 1 PID: 163 Comm: systemd-journal Not tainted 6.1.192-revert-08d1d0 #3
[    2.101400] RIP: 0010:mem_cgroup_track_foreign_dirty_slowpath+0x2c/0x190
[    2.101500] Call Trace:
[    2.101600]  folio_account_dirtied+0x9a/0x150
"""


class Fixture(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def copy(self):
        run = os.path.join(self.tmp, "run")
        shutil.copytree(FIX, run)
        return run

    def job(self, run, check, kernel):
        return os.path.join(run, "seeds", check, kernel)

    def edit(self, path, old, new, count=1):
        with open(path) as f:
            text = f.read()
        self.assertIn(old, text)
        with open(path, "w") as f:
            f.write(text.replace(old, new, count))

    def cli(self, *args):
        return subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "analysis", "seeds.py"), *args],
                              capture_output=True, text=True)


class Recorded(Fixture):
    def test_kmalloc_verdicts(self):
        r = seeds.load(FIX)["kmalloc"]
        want = {
            "patched": ("pass", "pass", "pass", "pass"),
            "patched@slubdebug": ("pass", "pass", "pass", "pass"),
            "revert-59bb47": ("fail", "pass", "pass", "fail"),
            "revert-59bb47@slubdebug": ("fail", "fail", "pass", "fail"),
            "revert-6a486c": ("fail", "pass", "fail", "pass"),
        }
        got = {k: (v["verdict"], v["parts"]["alignment"][0], v["parts"]["accounting"][0], v["parts"]["sysfs"][0])
               for k, v in r.items()}
        self.assertEqual(got, want)

    def test_kmalloc_numbers(self):
        r = seeds.load(FIX)["kmalloc"]
        self.assertEqual(r["patched@slubdebug"]["parts"]["alignment"][1], "2688 objects of 14 sizes, 0 misaligned")
        self.assertEqual(r["patched"]["parts"]["accounting"][1], "5 sizes 16K-256K moved SUnreclaim by their size")
        self.assertRegex(r["revert-59bb47@slubdebug"]["parts"]["alignment"][1],
                         r"^misaligned objects by size: 16: 99, 32: 141, 64: 162, 128: 183 \(1737 of 2688\)$")
        self.assertRegex(r["revert-6a486c"]["parts"]["accounting"][1], r"^SUnreclaim 16384: alloc moved 0K of 8192K")
        self.assertRegex(r["revert-59bb47"]["parts"]["sysfs"][1], r"^40 of 44 caches below their size: kmalloc-128 align 8")
        # Under slub_debug the revert leaves sysfs's own page buffers off
        # their page boundary, and every align reads back empty.
        self.assertRegex(r["revert-59bb47@slubdebug"]["parts"]["sysfs"][1],
                         r"^align unreadable for 44 of 44 caches; the kernel warned 'invalid sysfs_emit_at' 4 times")
        self.assertEqual(r["patched@slubdebug"]["cmdline"], "slub_debug=FZPU")
        self.assertEqual(r["patched"]["cmdline"], "")

    def test_ktap_as_6_1_prints_it(self):
        with open(os.path.join(self.job(FIX, "kmalloc", "revert-59bb47@slubdebug"), "guest", "out", "kernel.log")) as f:
            k = seeds.parse_ktap(f.read())
        self.assertEqual(k["suite"], "not ok")
        self.assertEqual(k["cases"], {"kmalloc_natural_alignment": "not ok", "kmalloc_large_accounting": "ok"})
        self.assertEqual(len(k["params"]["kmalloc_natural_alignment"]), 14)
        self.assertEqual(k["params"]["kmalloc_natural_alignment"]["8 bytes"], "ok")
        self.assertEqual(k["params"]["kmalloc_natural_alignment"]["16 bytes"], "not ok")
        self.assertEqual(sorted(k["align"]), [8 << i for i in range(14)])
        self.assertEqual(k["oops"], [])

    def test_nomemcg_pass(self):
        r = seeds.load(FIX)["nomemcg"]["patched"]
        self.assertEqual(r["verdict"], "pass")
        self.assertEqual(r["parts"]["ext4"][0], "pass")
        self.assertEqual(r["parts"]["xfs"], ("n/a", "the kernel has no XFS (CONFIG_XFS_FS)"))
        self.assertEqual(r["cmdline"], "cgroup_disable=memory")

    def test_cli_exit_status(self):
        out = self.cli(FIX)
        self.assertEqual(out.returncode, 1, out.stderr)  # the reverts fail
        self.assertIn("revert-6a486c", out.stdout)
        self.assertEqual(self.cli(FIX, FIX).returncode, 2)
        self.assertEqual(self.cli(os.path.join(self.tmp, "nosuch")).returncode, 2)
        self.assertEqual(self.cli(self.tmp).returncode, 1)  # no seed checks in it
        data = json.loads(self.cli(FIX, "--json").stdout)
        self.assertEqual(data["nomemcg"]["patched"]["verdict"], "pass")


class Mutated(Fixture):
    def test_misaligned_object(self):
        run = self.copy()
        log = os.path.join(self.job(run, "kmalloc", "patched"), "guest", "out", "kernel.log")
        self.edit(log, "align size=4096 checked=192 misaligned=0", "align size=4096 checked=192 misaligned=3")
        r = seeds.load(run)["kmalloc"]["patched"]
        self.assertEqual(r["parts"]["alignment"], ("fail", "misaligned objects by size: 4096: 3 (3 of 2688)"))
        self.assertEqual(r["verdict"], "fail")

    def test_size_missing(self):
        run = self.copy()
        log = os.path.join(self.job(run, "kmalloc", "patched"), "guest", "out", "kernel.log")
        self.edit(log, "align size=65536", "align-size=65536")
        self.assertEqual(seeds.load(run)["kmalloc"]["patched"]["parts"]["alignment"],
                         ("fail", "sizes not reported: 65536"))

    def test_kunit_disagrees(self):
        run = self.copy()
        log = os.path.join(self.job(run, "kmalloc", "patched"), "guest", "out", "kernel.log")
        self.edit(log, "    ok 1 kmalloc_natural_alignment", "    not ok 1 kmalloc_natural_alignment")
        self.assertEqual(seeds.load(run)["kmalloc"]["patched"]["parts"]["alignment"][0], "fail")

    def test_accounting_off_by_more_than_slack(self):
        run = self.copy()
        log = os.path.join(self.job(run, "kmalloc", "patched"), "guest", "out", "kernel.log")
        self.edit(log, "expected=8388608 seen_alloc=8388608 seen_free=8388608",
                  "expected=8388608 seen_alloc=8388608 seen_free=8000000")
        part = seeds.load(run)["kmalloc"]["patched"]["parts"]["accounting"]
        self.assertEqual(part[0], "fail")
        self.assertIn("free moved 7812K of 8192K", part[1])
        # Within the slack (64 pages): still a pass.
        run2 = os.path.join(self.tmp, "run2")
        shutil.copytree(FIX, run2)
        log = os.path.join(self.job(run2, "kmalloc", "patched"), "guest", "out", "kernel.log")
        self.edit(log, "expected=8388608 seen_alloc=8388608 seen_free=8388608",
                  "expected=8388608 seen_alloc=8388608 seen_free=8200000")
        self.assertEqual(seeds.load(run2)["kmalloc"]["patched"]["parts"]["accounting"][0], "pass")

    def test_sysfs_align_below_size(self):
        run = self.copy()
        tsv = os.path.join(self.job(run, "kmalloc", "patched"), "guest", "out", "slab-align.tsv")
        self.edit(tsv, "kmalloc-512\t512\t512", "kmalloc-512\t512\t64")
        self.assertEqual(seeds.load(run)["kmalloc"]["patched"]["parts"]["sysfs"],
                         ("fail", "1 of 44 caches below their size: kmalloc-512 align 64"))

    def test_module_not_loaded(self):
        run = self.copy()
        job = self.job(run, "kmalloc", "patched")
        with open(os.path.join(job, "guest", "out", "insmod.status"), "w") as f:
            f.write("1\n")
        with open(os.path.join(job, "guest", "out", "kernel.log"), "w") as f:
            f.write("kmalloc_check: disagrees about version of symbol module_layout\n")
        # Nothing was checked: no verdict, so not the failure a revert
        # is expected to show.
        r = seeds.load(run)["kmalloc"]["patched"]
        self.assertEqual((r["verdict"], r["problems"]), ("no-result", ["insmod exited 1"]))
        self.assertIn("kernel: kmalloc_check: disagrees about version of symbol module_layout", r["evidence"])
        self.assertFalse(seeds.as_expected(r, "fail"))

    def test_no_ktap(self):
        run = self.copy()
        log = os.path.join(self.job(run, "kmalloc", "patched"), "guest", "out", "kernel.log")
        with open(log, "w") as f:
            f.write("kmalloc_check: loading out-of-tree module taints kernel.\n")
        r = seeds.load(run)["kmalloc"]["patched"]
        self.assertEqual((r["verdict"], r["problems"]), ("no-result", ["no KTAP from the module"]))

    def test_slab_align_missing(self):
        run = self.copy()
        os.remove(os.path.join(self.job(run, "kmalloc", "revert-59bb47"), "guest", "out", "slab-align.tsv"))
        r = seeds.load(run)["kmalloc"]["revert-59bb47"]
        self.assertEqual(r["parts"]["sysfs"], ("no-result", "the guest wrote no slab-align.tsv"))
        self.assertEqual(r["verdict"], "no-result")

    def test_slub_report_while_the_module_ran(self):
        # SLUB's own report under slub_debug has no colon after BUG.
        run = self.copy()
        log = os.path.join(self.job(run, "kmalloc", "patched@slubdebug"), "guest", "out", "kernel.log")
        with open(log, "a") as f:
            f.write("BUG kmalloc-64 (Tainted: G           O      ): Right Redzone overwritten\n")
        r = seeds.load(run)["kmalloc"]["patched@slubdebug"]
        self.assertEqual(r["verdict"], "fail")
        self.assertIn("kernel: BUG kmalloc-64 (Tainted: G           O      ): Right Redzone overwritten",
                      r["problems"])

    def test_what_counts_as_an_oops(self):
        for line, oops in (("[ 1.0] kernel BUG at mm/slub.c:4321!", True),
                           ("[ 1.0] invalid opcode: 0000 [#1] PREEMPT SMP NOPTI", True),
                           ("[ 1.0] general protection fault, probably for non-canonical address", True),
                           ("[ 1.0] WARNING: CPU: 0 PID: 1 at fs/sysfs/file.c:768 sysfs_emit_at+0x5f/0xc0", True),
                           ("[ 9.0] watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [kworker/1:1:40]", False),
                           ("[ 9.0] rcu: INFO: rcu_preempt self-detected stall on CPU", False),
                           ("[ 1.0] Run /sbin/init as init process", False)):
            self.assertEqual(seeds.is_oops(line), oops, line)
        self.assertEqual(seeds.oops_evidence("[ 2.0] RIP: 0010:foo+0x1/0x2\n"), ["RIP: 0010:foo+0x1/0x2"])
        self.assertEqual(seeds.oops_evidence("[ 9.0] watchdog: BUG: soft lockup - CPU#1 stuck for 22s!\n"), [])

    def test_job_did_not_finish(self):
        run = self.copy()
        job = self.job(run, "kmalloc", "patched")
        self.edit(os.path.join(job, "result.json"), '"result": "ok"', '"result": "timeout"')
        r = seeds.load(run)["kmalloc"]["patched"]
        self.assertEqual((r["verdict"], r["problems"]), ("no-result", ["job timeout"]))

    def test_nomemcg_oops(self):
        # An oops anywhere in the console fails the check, even when the
        # job never got to run (a hang after the oops: a timeout).
        run = self.copy()
        job = self.job(run, "nomemcg", "patched")
        self.edit(os.path.join(job, "result.json"), '"result": "ok"', '"result": "timeout"')
        with open(os.path.join(job, "console.log"), "a") as f:
            f.write(OOPS)
        r = seeds.load(run)["nomemcg"]["patched"]
        self.assertEqual(r["verdict"], "fail")
        self.assertEqual(r["evidence"], "kernel: BUG: kernel NULL pointer dereference, address: 0000000000000a30"
                         " | RIP: 0010:mem_cgroup_track_foreign_dirty_slowpath+0x2c/0x190")

    def test_nomemcg_no_oops_but_no_finish(self):
        run = self.copy()
        job = self.job(run, "nomemcg", "patched")
        self.edit(os.path.join(job, "result.json"), '"result": "ok"', '"result": "no-status"')
        self.assertEqual(seeds.load(run)["nomemcg"]["patched"]["verdict"], "no-result")

    def test_nomemcg_memory_controller_on(self):
        run = self.copy()
        out = os.path.join(self.job(run, "nomemcg", "patched"), "guest", "out")
        os.remove(os.path.join(out, "steps"))
        with open(os.path.join(out, "skip"), "w") as f:
            f.write("the memory controller is on: the kernel was not booted with cgroup_disable=memory\n")
        r = seeds.load(run)["nomemcg"]["patched"]
        self.assertEqual(r["verdict"], "skip")
        self.assertIn("cgroup_disable=memory", r["evidence"])

    def test_nomemcg_write_failed(self):
        run = self.copy()
        steps = os.path.join(self.job(run, "nomemcg", "patched"), "guest", "out", "steps")
        self.edit(steps, "ext4 pass", "ext4 fail")
        self.assertEqual(seeds.load(run)["nomemcg"]["patched"]["verdict"], "fail")


class Expected(Fixture):
    def matrix(self, text, name="regress"):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_proven(self):
        rows = seeds.read_matrix(self.matrix(
            "# a comment\nkmalloc patched@slubdebug pass\nkmalloc revert-59bb47@slubdebug fail\n"
            "kmalloc revert-6a486c fail\nnomemcg patched pass\n"))
        table, proofs = seeds.expectations(seeds.load(FIX), rows)
        self.assertTrue(all(row[4] for row in table))
        self.assertEqual(proofs["kmalloc"], "proven")
        self.assertRegex(proofs["nomemcg"], "^not proven: the matrix needs a kernel where it passes and one where")

    def test_not_as_expected(self):
        rows = seeds.read_matrix(self.matrix("kmalloc patched pass\nkmalloc revert-59bb47 pass\n"
                                             "kmalloc nosuch fail\n"))
        table, proofs = seeds.expectations(seeds.load(FIX), rows)
        self.assertEqual([row[2] for row in table], ["pass", "fail", "not run"])
        self.assertEqual(proofs["kmalloc"], "not proven: revert-59bb47 fail (expected pass), nosuch not run (expected fail)")

    def test_failing_parts(self):
        # fail:PART: the check must fail, and in that part.
        rows = seeds.read_matrix(self.matrix("kmalloc revert-6a486c fail:accounting\n"
                                             "kmalloc revert-59bb47@slubdebug fail:alignment,sysfs\n"
                                             "kmalloc revert-59bb47 fail:alignment\n"))
        table, proofs = seeds.expectations(seeds.load(FIX), rows)
        self.assertEqual([(row[2], row[4]) for row in table],
                         [("fail:accounting", True), ("fail:alignment,sysfs", True), ("fail:sysfs", False)])
        self.assertEqual(proofs["kmalloc"], "not proven: revert-59bb47 fail:sysfs (expected fail:alignment)")

    def test_undetectable(self):
        rows = seeds.read_matrix(self.matrix("nomemcg patched pass\nnomemcg patched undetectable\n"))
        _, proofs = seeds.expectations(seeds.load(FIX), rows)
        self.assertRegex(proofs["nomemcg"], "^cannot detect")

    def test_bad_matrix(self):
        for text, line in (("kmalloc patched\n", 1), ("\nkmalloc patched maybe\n", 2), ("warp patched pass\n", 1),
                           ("kmalloc patched fail:\n", 1), ("kmalloc pat/ched pass\n", 1)):
            with self.assertRaises(ValueError) as e:
                seeds.read_matrix(self.matrix(text))
            self.assertIn(f"regress:{line}: want: CHECK KERNEL pass|fail|fail:PART,...|undetectable", str(e.exception))
        # A comment after a line is a comment.
        self.assertEqual(seeds.read_matrix(self.matrix("kmalloc patched pass  # why\n")),
                         [("kmalloc", "patched", "pass")])

    def test_cli_pairs_and_check(self):
        path = self.matrix("kmalloc patched pass\nnomemcg patched pass\nkmalloc revert-6a486c fail\n")
        out = self.cli("--pairs", path, "--check", "kmalloc")
        self.assertEqual((out.returncode, out.stdout), (0, "kmalloc patched\nkmalloc revert-6a486c\n"))
        self.assertEqual(self.cli("--pairs", path, "--check", "warp").returncode, 2)
        self.assertEqual(self.cli("--pairs", self.matrix("bad\n", "bad")).returncode, 2)
        # --check keeps the regress table to the checks run.
        out = self.cli(FIX, "--expect", path, "--check", "kmalloc")
        self.assertEqual(out.returncode, 0, out.stdout)
        self.assertNotIn("nomemcg", out.stdout)

    def test_cli_expect(self):
        good = self.matrix("kmalloc patched pass\nkmalloc revert-6a486c fail\n")
        out = self.cli(FIX, "--expect", good)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("| kmalloc | revert-6a486c | - | fail | fail | accounting: SUnreclaim", out.stdout)
        self.assertIn("| kmalloc | patched | - | pass | pass | alignment: 2688 objects", out.stdout)
        self.assertIn("kmalloc: proven", out.stdout)
        bad = self.matrix("kmalloc revert-6a486c pass\n")
        out = self.cli(FIX, "--expect", bad)
        self.assertEqual(out.returncode, 1)
        self.assertIn("| fail (!) | pass |", out.stdout)
        out = self.cli(FIX, "--expect", os.path.join(self.tmp, "nosuch"))
        self.assertEqual(out.returncode, 2)
        self.assertEqual(self.cli(FIX, "--expect").returncode, 2)

    def test_repository_matrix(self):
        # bench/regress itself: every check has a kernel where it must pass
        # and one where it must fail.
        rows = seeds.read_matrix(os.path.join(ROOT, "bench", "regress"))
        for check in seeds.CHECKS:
            self.assertEqual({e.partition(":")[0] for c, _, e in rows if c == check} & {"pass", "fail"},
                             {"pass", "fail"}, check)


if __name__ == "__main__":
    tap.run(__name__)
