#!/usr/bin/python3
"""The dispatcher over hosts (bench/hosts.py), without ssh or a guest: the
hosts file is read or refused with file and line; blocks keep every kernel
of a (scenario, repeat) together, in an order the run id fixes; a job that
comes back is imported only when it holds exactly what its SHA256SUMS
lists (a truncated file, a missing one or an extra one is set aside, and
its block marked failed in GNU parallel's joblog so that --resume-failed
runs it again); a finished job is never replaced. Speaks TAP."""
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import unittest
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

import bench  # noqa: E402
import hosts  # noqa: E402
import jobs  # noqa: E402
import tap  # noqa: E402
from tempcase import TempCase  # noqa: E402
from jobs import Refused  # noqa: E402

BENCH = os.path.join(ROOT, "bench", "bench.py")
JOBLOG_HEAD = "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n"


class HostsFile(TempCase):
    def test_lines(self):
        path = self.write("hosts", "# the lab\n\nbench1\n2/ssh -p 2222 -i /k root@10.0.0.2  # big one\n"
                          "ssh -p 2223 root@10.0.0.2\n")
        hs = hosts.read_hosts(path)
        self.assertEqual([(h.name, h.slots, h.target) for h in hs],
                         [("bench1", 1, "bench1"), ("root@10.0.0.2:2222", 2, "root@10.0.0.2"),
                          ("root@10.0.0.2:2223", 1, "root@10.0.0.2")])
        self.assertEqual(hs[1].ssh, ["ssh", "-p", "2222", "-i", "/k"])
        # GNU parallel is given the same ssh, never asking for a password.
        self.assertTrue(hs[0].login().startswith("ssh -o BatchMode=yes"))
        self.assertTrue(hs[1].login().endswith("-o ServerAliveCountMax=4 root@10.0.0.2"))

    def test_same_host_twice_named_apart(self):
        path = self.write("hosts", "ssh -i /a x@h\nssh -i /b x@h\n")
        self.assertEqual([h.name for h in hosts.read_hosts(path)], ["x@h#1", "x@h#2"])

    def test_refused(self):
        path = self.write("hosts", "ok1\n:\n0/h2\nscp h3\nok1\n3/\nssh 'h4\n")
        with self.assertRaises(Refused) as e:
            hosts.read_hosts(path)
        m = "\n".join(e.exception.messages)
        for says in (f"{path}:2: ':' is this machine", f"{path}:3: '0/h2': a host runs at least 1",
                     f"{path}:4: 'scp h3': the command must be ssh", f"{path}:5: ok1 is listed already on line 1",
                     f"{path}:6: no host after '3/'", f"{path}:7: cannot read"):
            self.assertIn(says, m)

    def test_empty_and_missing(self):
        with self.assertRaises(Refused) as e:
            hosts.read_hosts(self.write("hosts", "# nothing\n"))
        self.assertIn("no hosts in it", e.exception.messages[0])
        with self.assertRaises(Refused) as e:
            hosts.read_hosts(os.path.join(self.tmp, "nope"))
        self.assertIn("nope: No such file", e.exception.messages[0])

    def test_bench_refuses_a_bad_hosts_file_before_booting(self):
        path = self.write("hosts", "scp h\n")
        out = subprocess.run([BENCH, "run", "x", "--kernels", "control", "--hosts", path],
                             capture_output=True, text=True,
                             env=dict(os.environ, RESULTS=self.tmp, PATH="/usr/bin:/bin"))
        # Refused (2) when the tools are there; without GNU parallel, that.
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertRegex(out.stderr, "the command must be ssh|GNU parallel is missing")


class Qualify(unittest.TestCase):
    def host(self, out, rc=0, slots=1):
        h = hosts.Host("f:1", f"{slots}/h")

        def run(script, stdin=None, timeout=0):
            return subprocess.CompletedProcess([], rc, out.encode(), b"ssh: connect to host h port 22: Connection refused")
        h.run = run
        return h

    NEED = {"memory": 2 << 30, "disk": 1 << 30, "qemu": "QEMU emulator version 7.2.19 (Debian)",
            "accel": "auto"}
    GOOD = ("remote_dir=/r\nhostname=b1\nqemu=QEMU emulator version 7.2.3\nkvm=no\n"
            "mem_available_kb=8000000\ndisk_free_kb=90000000\n")

    def test_good(self):
        h = self.host(self.GOOD)
        self.assertIsNone(hosts.probe(h, self.NEED))
        self.assertEqual((h.remote_dir, h.info["kvm"]), ("/r", "no"))

    def test_unreachable(self):
        self.assertRegex(hosts.probe(self.host("", rc=255), self.NEED),
                         "unreachable: ssh exited 255 .*Connection refused")

    def test_each_lack_named(self):
        out = ("remote_dir_wanted=/proc/x\nremote_dir=\nqemu=QEMU emulator version 8.0.0\nmissing=rsync\nkvm=no\n"
               "mem_available_kb=1000\ndisk_free_kb=10\n")
        why = hosts.probe(self.host(out), dict(self.NEED, accel="kvm"))
        for says in ("lacks rsync (Debian: apt-get install rsync)", "QEMU major version 8, not 7",
                     "ACCEL=kvm, but its /dev/kvm is not usable", "0 MiB available, 1 guest(s) need 2560 MiB",
                     "cannot make its directory /proc/x"):
            self.assertIn(says, why)

    def test_memory_counts_every_guest(self):
        self.assertIsNone(hosts.probe(self.host(self.GOOD, slots=2), self.NEED))
        self.assertIn("4 guest(s) need 8704 MiB", hosts.probe(self.host(self.GOOD, slots=4), self.NEED))

    def test_disk(self):
        self.assertIn("MiB free in /r", hosts.probe(self.host(self.GOOD), dict(self.NEED, disk=100 << 30)))


class Blocks(unittest.TestCase):
    def test_each_block_holds_every_kernel(self):
        plan = bench.Plan(["control", "v1-9783aa", "patched"], ["low-reclaim", "min-reclaim"], 3, "quick")
        bs = hosts.blocks("run1", plan)
        self.assertEqual(len(bs), 6)
        self.assertEqual([b.name for b in bs], [f"b{i:04d}" for i in range(1, 7)])
        self.assertEqual(sorted((b.scenario, b.repeat) for b in bs),
                         sorted({(s, r) for s, _, r, _ in plan.jobs}))
        for b in bs:
            self.assertEqual(sorted(b.kernels), ["control", "patched", "v1-9783aa"])
        # Random orders, fixed by the run id: the same again, another for another id.
        self.assertEqual([b.kernels for b in bs], [b.kernels for b in hosts.blocks("run1", plan)])
        self.assertGreater(len({tuple(b.kernels) for b in bs}), 1)
        self.assertNotEqual([b.kernels for b in bs], [b.kernels for b in hosts.blocks("run2", plan)])


def fake_job(root, verdict="ok", extra=None):
    """A job directory as a host leaves it, SHA256SUMS written last."""
    os.makedirs(os.path.join(root, "guest", "out"))
    files = {"result.json": json.dumps({"schema": 1, "result": verdict}),
             "meta.json": json.dumps({"schema": 1, "kernel": "k"}),
             "guest/out/samples.csv": "t,step,cgroup\n" * 50}
    files.update(extra or {})
    for rel, text in files.items():
        with open(os.path.join(root, rel), "w") as f:
            f.write(text)
    subprocess.run("find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum > ../.s && mv ../.s SHA256SUMS",
                   shell=True, cwd=root, check=True)


class Collect(TempCase):
    def setUp(self):
        super().setUp()
        self.run_dir = os.path.join(self.tmp, "results", "R")
        self.bdir = os.path.join(self.tmp, "blocks", "b0001")
        self.block = hosts.Block(1, "low-reclaim", 1, ["patched", "control"])
        os.makedirs(self.run_dir)

    def attempt(self, name, login, kernels, **kw):
        adir = os.path.join(self.bdir, "out", name)
        os.makedirs(adir)
        with open(os.path.join(adir, "attempt.json"), "w") as f:
            json.dump({"sshlogin": login, "hostname": "box"}, f)
        for k in kernels:
            fake_job(jobs.job_dir(os.path.join(adir, "R"), "low-reclaim", k, 1), **kw.get(k, {}))
        return adir

    def test_verify(self):
        d = os.path.join(self.tmp, "j")
        fake_job(d)
        self.assertIsNone(hosts.verify(d))
        with open(os.path.join(d, "guest/out/samples.csv"), "r+") as f:
            f.truncate(100)
        self.assertRegex(hosts.verify(d), "samples.csv: its sha256 differs .*truncated")
        os.remove(os.path.join(d, "guest/out/samples.csv"))
        self.assertEqual(hosts.verify(d), "missing guest/out/samples.csv")
        self.write("j/stray", "x")
        self.assertRegex(hosts.verify(d), "missing|stray is not in SHA256SUMS")
        os.remove(os.path.join(d, "SHA256SUMS"))
        self.assertRegex(hosts.verify(d), "no SHA256SUMS")

    def test_import_with_the_host(self):
        self.attempt("a1", "ssh -o X root@h:22", ["patched", "control"])
        left = hosts.collect(self.run_dir, "R", self.bdir, self.block, {"ssh -o X root@h:22": "h:22"})
        self.assertEqual(left, 0)
        for k in ("patched", "control"):
            d = jobs.job_dir(self.run_dir, "low-reclaim", k, 1)
            self.assertTrue(jobs.job_ok(d))
            self.assertFalse(os.path.exists(os.path.join(d, "SHA256SUMS")))
            meta = jobs._json_or_none(os.path.join(d, "meta.json"))
            self.assertEqual((meta["kernel"], meta["dispatch"]["host"], meta["dispatch"]["block"],
                              meta["dispatch"]["hostname"]), ("k", "h:22", "b0001", "box"))
        self.assertEqual(set(jobs.read_manifest(self.run_dir).values()), {"ok"})
        self.assertEqual(os.listdir(os.path.join(self.bdir, "out")), [])

    def test_truncated_is_set_aside_and_failed_recorded(self):
        adir = self.attempt("a1", "L", ["patched", "control"], control={"verdict": "timeout"})
        with open(os.path.join(jobs.job_dir(os.path.join(adir, "R"), "low-reclaim", "patched", 1),
                               "guest/out/samples.csv"), "r+") as f:
            f.truncate(10)
        left = hosts.collect(self.run_dir, "R", self.bdir, self.block, {})
        self.assertEqual(left, 2)
        self.assertFalse(os.path.exists(jobs.job_dir(self.run_dir, "low-reclaim", "patched", 1)))
        self.assertTrue(os.path.isdir(os.path.join(self.run_dir, ".dispatch", "rejected", "b0001-a1-patched")))
        self.assertEqual(jobs.read_manifest(self.run_dir), {("low-reclaim", "control", 1): "failed:timeout"})

    def test_finished_job_never_replaced(self):
        self.attempt("a1", "L", ["patched"])
        hosts.collect(self.run_dir, "R", self.bdir, self.block, {"L": "one"})
        self.attempt("a2", "M", ["patched"], patched={"verdict": "panic"})
        self.attempt("a3", "M", ["patched"])
        hosts.collect(self.run_dir, "R", self.bdir, self.block, {"M": "two"})
        meta = jobs._json_or_none(os.path.join(jobs.job_dir(self.run_dir, "low-reclaim", "patched", 1), "meta.json"))
        self.assertEqual(meta["dispatch"]["host"], "one")

    def test_later_attempt_replaces_a_failed_one(self):
        self.attempt("a1", "L", ["control"], control={"verdict": "panic"})
        self.attempt("a2", "M", ["control"])
        hosts.collect(self.run_dir, "R", self.bdir, self.block, {"L": "one", "M": "two"})
        d = jobs.job_dir(self.run_dir, "low-reclaim", "control", 1)
        self.assertTrue(jobs.job_ok(d))
        self.assertEqual(jobs._json_or_none(os.path.join(d, "meta.json"))["dispatch"]["host"], "two")


class Joblog(TempCase):
    def test_mark_failed(self):
        path = self.write("joblog", JOBLOG_HEAD
                          + "1\th1\t1.0\t5\t0\t0\t0\t0\tsh b0001/run.sh b0001\n"
                          + "2\th2\t1.0\t5\t0\t0\t255\t0\tsh b0002/run.sh b0002\n"
                          + "3\th1\t1.0\t5\t0\t0\t0\t0\tsh b0003/run.sh b0003\n"
                          + "2\th1\t9.0\t5\t0\t0\t0\t0\tsh b0002/run.sh b0002\n")
        self.assertEqual(hosts.read_joblog(path), {1: ("h1", 0, 0), 2: ("h1", 0, 0), 3: ("h1", 0, 0)})
        hosts.mark_failed(path, {2, 3}, "test")
        self.assertEqual(hosts.read_joblog(path), {1: ("h1", 0, 0), 2: ("h1", 1, 0), 3: ("h1", 1, 0)})
        with open(path) as f:
            lines = f.read().splitlines()
        # Only the last line of a block changes; the header and history stay.
        self.assertEqual(lines[0] + "\n", JOBLOG_HEAD)
        self.assertEqual(lines[2].split("\t")[6], "255")
        self.assertEqual(len(lines), 5)


class Tries(TempCase):
    """GNU parallel's joblog keeps only a block's last try; the line every
    try of remote-block.sh prints first names the host of one that failed.
    Here with the real remote-block.sh and GNU parallel (no ssh: its
    sshlogin is ':'), a block whose first try fails."""

    def setUp(self):
        super().setUp()
        remote = os.path.join(self.tmp, "remote")
        for d in ("suite/S", "images/I", "kernels/KH"):
            os.makedirs(os.path.join(remote, d))
        for f in ("suite/S/.complete", "images/I/rootfs.ext4", "kernels/KH/.complete"):
            self.write(os.path.join("remote", f), "")
        self.write("blocks/b0001/block.env",
                   "RUN=R\nPROFILE=quick\nBLOCK=b0001\nSUITE_HASH=S\nSUITE_VERSION=v\n"
                   "IMAGE_HASH=I\nACCEL=tcg\nKERNELS=patched=KH\n")
        self.write("blocks/b0001/jobs.tsv", "")
        self.remote = remote

    @unittest.skipUnless(shutil.which("parallel"), "GNU parallel is not installed (bench/deps.sh hosts)")
    def test_a_failed_try_is_named(self):
        # The first try fails after it started (a host that died under it),
        # the second succeeds.
        cmd = (f"bash {ROOT}/bench/remote-block.sh {{}} && "
               "{ [ -e {}/tried ] || { touch {}/tried; exit 1; }; }")
        argv = ["parallel", "--will-cite", "--retries", "2", "--tagstring", "{}",
                "--line-buffer", "--joblog", "jl", cmd, ":::", "b0001"]
        with mock.patch.dict(os.environ, BENCH_REMOTE_DIR=self.remote), \
                contextlib.redirect_stderr(io.StringIO()) as err:
            tries = hosts.run_parallel(argv, os.path.join(self.tmp, "blocks"), {":": "here"})
        # Each try's output was passed on.
        self.assertEqual(err.getvalue().count("remote-block.sh: ["), 2)
        self.assertEqual(tries, {"b0001": ["here", "here"]})
        last = hosts.read_joblog(os.path.join(self.tmp, "blocks", "jl"))[1]
        self.assertEqual(last[1:], (0, 0))
        self.assertEqual(hosts.failed_tries(tries["b0001"], last), ["here"])

    def test_failed_tries(self):
        self.assertEqual(hosts.failed_tries([], None), [])
        self.assertEqual(hosts.failed_tries(["a"], ("a", 0, 0)), [])
        self.assertEqual(hosts.failed_tries(["a", "b"], ("b", 0, 0)), ["a"])
        self.assertEqual(hosts.failed_tries(["a", "b", "a"], ("a", 255, 0)), ["a", "b", "a"])
        self.assertEqual(hosts.failed_tries(["a"], ("a", 0, 9)), ["a"])


class GuestQueue(TempCase):
    """make peers / make regress over hosts: bench/lib.sh's guest_job
    queues prepared jobs, hosts.py groups them in blocks by key, ships
    each block's jobs and imports what comes back, checked as for bench."""

    def setUp(self):
        super().setUp()
        self.queue = os.path.join(self.tmp, "q")
        self.dest = os.path.join(self.tmp, "results", "R", "seeds", "ocfs2")
        # guest_job checks a job as its kernel runs it: kernels of a sort.
        for k in ("control", "patched"):
            self.write(f"kernels/{k}/bzImage", "")
            self.write(f"kernels/{k}/config", "CONFIG_MEMCG=y\n")
        self.env = dict(os.environ, KOUT=os.path.join(self.tmp, "kernels"),
                        BENCH_HOSTS=self.write("hosts", "h1\n"))

    def lib_sh(self, lines, env=None):
        """Run shell lines after sourcing bench/lib.sh and starting the
        queue (guest_queue_start); the CompletedProcess."""
        script = [f". {ROOT}/bench/lib.sh", f"guest_queue_start {self.queue}"] + lines
        return subprocess.run(["bash", "-c", "\n".join(script)], capture_output=True, text=True,
                              env=env or self.env)

    def queue_jobs(self, kernels_keys):
        """Queue one job per (kernel, key) with the real guest_job."""
        self.write("job.conf", "memory = 1G\ncommand = sh /mnt/job/check.sh\n")
        self.write("check.sh", "echo hi\n")
        return self.lib_sh([f"guest_job {key} {k} {self.tmp}/job.conf {self.dest}/{k} "
                            f"--with {self.tmp}/check.sh" for k, key in kernels_keys])

    def test_queued_and_blocked_by_key(self):
        r = self.queue_jobs([("control", "ocfs2"), ("patched", "ocfs2"), ("patched", "nomemcg")])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("queued for the hosts of", r.stderr)
        bs = hosts.read_queue(self.queue)
        self.assertEqual([(b.name, b.key, [e[:2] for e in b.entries]) for b in bs],
                         [("b0001", "ocfs2", [("j0001", "control"), ("j0002", "patched")]),
                          ("b0002", "nomemcg", [("j0003", "patched")])])
        self.assertEqual(sorted(os.listdir(os.path.join(self.queue, "jobs", "j0002"))),
                         ["check.sh", "job.conf"])
        self.assertEqual(bs[0].entries[1][2], os.path.join(self.dest, "patched"))

    def test_guest_job_refuses(self):
        queue_one = [f"guest_job k patched {self.tmp}/job.conf {self.dest}/p"]
        self.write("job.conf", "memory = lots\n")
        r = self.lib_sh(queue_one)
        self.assertEqual(r.returncode, 2)
        self.assertIn("memory", r.stderr)
        # As its kernel runs it: a need the kernel's config lacks.
        self.write("job.conf", "memory = 1G\nneeds = CONFIG_MEMCG_KMEM\n")
        r = self.lib_sh(queue_one)
        self.assertEqual(r.returncode, 2)
        self.assertIn("has no CONFIG_MEMCG_KMEM", r.stderr)
        with open(os.path.join(self.queue, "jobs.tsv")) as f:
            self.assertEqual(f.read(), "")
        r = self.lib_sh([], env=dict(self.env, BENCH_HOSTS=os.path.join(self.tmp, "nohosts")))
        self.assertEqual(r.returncode, 2)
        self.assertIn("hosts file", r.stderr)

    def test_read_queue_refuses_a_bad_line(self):
        self.write("q/jobs.tsv", "j0001\tpatched\t/x\n")
        with self.assertRaisesRegex(Refused, r"jobs.tsv:1: not 'ID"):
            hosts.read_queue(self.queue)

    def test_write_and_collect(self):
        self.queue_jobs([("control", "ocfs2"), ("patched", "ocfs2")])
        b = hosts.read_queue(self.queue)[0]

        class In:
            suite_hash, suite_version, image_hash = "S", "v", "I"
            kernels = {"control": ("KC", ""), "patched": ("KP", "")}
        bdir = os.path.join(self.tmp, "blocks", b.name)
        hosts.write_guest_block(bdir, self.queue, b, In, b.todo())
        with open(os.path.join(bdir, "block.env")) as f:
            env = f.read()
        self.assertIn("KIND=guest\n", env)
        self.assertIn("KERNELS='control=KC patched=KP'\n", env)
        with open(os.path.join(bdir, "jobs.tsv")) as f:
            self.assertEqual(f.read(), "j0001\tcontrol\nj0002\tpatched\n")
        self.assertTrue(os.path.isfile(os.path.join(bdir, "jobs", "j0002", "check.sh")))
        # One came back whole, the other truncated.
        adir = os.path.join(bdir, "out", "a1")
        os.makedirs(adir)
        with open(os.path.join(adir, "attempt.json"), "w") as f:
            json.dump({"sshlogin": "L", "hostname": "box"}, f)
        fake_job(os.path.join(adir, "guest", "j0001"))
        fake_job(os.path.join(adir, "guest", "j0002"))
        with open(os.path.join(adir, "guest", "j0002", "guest/out/samples.csv"), "r+") as f:
            f.truncate(3)
        left = hosts.collect_guest(self.queue, bdir, b, {"L": "one"}, ["two"])
        self.assertEqual(left, 1)
        meta = jobs._json_or_none(os.path.join(self.dest, "control", "meta.json"))
        self.assertEqual((meta["dispatch"]["host"], meta["dispatch"]["failed_tries_on"]), ("one", ["two"]))
        self.assertFalse(os.path.exists(os.path.join(self.dest, "control", "SHA256SUMS")))
        self.assertFalse(os.path.exists(os.path.join(self.dest, "patched")))
        self.assertTrue(os.path.isdir(os.path.join(self.queue, "rejected", "b0001-a1-j0002")))
        self.assertEqual([e[1] for e in b.todo()], ["patched"])
        # The next round sends only what is left; a result here is never replaced.
        hosts.write_guest_block(bdir, self.queue, b, In, b.todo())
        self.assertEqual(os.listdir(os.path.join(bdir, "jobs")), ["j0002"])
        fake_job(os.path.join(bdir, "out", "a2", "guest", "j0001"), verdict="panic")
        fake_job(os.path.join(bdir, "out", "a2", "guest", "j0002"))
        self.assertEqual(hosts.collect_guest(self.queue, bdir, b, {}), 0)
        self.assertEqual(jobs.read_host_json(os.path.join(self.dest, "control", "result.json"))[0]["result"],
                         "ok")

    def test_a_host_failure_is_replaced_by_a_retry(self):
        # QEMU failed on the first host (qemu-error): not the job's verdict;
        # the retry's result replaces it. A panic is a verdict: kept.
        self.queue_jobs([("control", "ocfs2"), ("patched", "ocfs2")])
        b = hosts.read_queue(self.queue)[0]
        bdir = os.path.join(self.tmp, "blocks", b.name)
        fake_job(os.path.join(bdir, "out", "a1", "guest", "j0001"), verdict="qemu-error")
        fake_job(os.path.join(bdir, "out", "a1", "guest", "j0002"), verdict="panic")
        fake_job(os.path.join(bdir, "out", "a2", "guest", "j0001"))
        fake_job(os.path.join(bdir, "out", "a2", "guest", "j0002"))
        self.assertEqual(hosts.collect_guest(self.queue, bdir, b, {}), 0)
        verdicts = [jobs.read_host_json(os.path.join(self.dest, k, "result.json"))[0]["result"]
                    for k in ("control", "patched")]
        self.assertEqual(verdicts, ["ok", "panic"])
        # Left with a host failure only, the job is still to do.
        fake_job(os.path.join(bdir, "out", "a3", "guest", "j0001"), verdict="qemu-error")
        shutil.rmtree(os.path.join(self.dest, "control"))
        hosts.collect_guest(self.queue, bdir, b, {})
        self.assertEqual([e[1] for e in b.todo()], ["control"])


class Suite(unittest.TestCase):
    def test_suite_tar_is_the_same_bytes_each_time(self):
        h1, b1 = hosts.suite_tar(ROOT)
        h2, b2 = hosts.suite_tar(ROOT)
        self.assertEqual((h1, b1), (h2, b2))
        names = hosts.suite_files(ROOT)
        for f in ("bench/bench.py", "bench/remote-block.sh", "bench/scenarios/low-reclaim.conf", "patches/variants"):
            self.assertIn(f, names)
        self.assertFalse([f for f in names if f.startswith(("build/", "results/"))])


if __name__ == "__main__":
    tap.run(__name__)
