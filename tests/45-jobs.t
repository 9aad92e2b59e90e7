#!/usr/bin/python3
"""The job contract on the host (bench/jobs.py) and the run matrix
(bench/bench.py), without booting: a scenario becomes a job directory
whose files the guest side reads; arms are applied from bench/arms; the
JSON files are written with their schema and read back, damaged ones
refused; the manifest keeps one entry per job; the plan interleaves
kernels within each repeat and knows which jobs are done. Speaks TAP."""
import contextlib
import json
import os
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "analysis"))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

import bench  # noqa: E402
import jobs  # noqa: E402
import rundata  # noqa: E402
import tap  # noqa: E402
from tempcase import TempCase  # noqa: E402

BENCH = os.path.join(ROOT, "bench", "bench.py")
JOBS = os.path.join(ROOT, "bench", "jobs.py")


def sourced(path, *names):
    """The values bash gives names after sourcing path."""
    script = f'. "{path}" && printf "%s\\n" ' + " ".join(f'"${n}"' for n in names)
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout
    return out.split("\n")[:len(names)]


class Temp(TempCase):
    @contextlib.contextmanager
    def scenarios_here(self):
        """Inside the block, scenarios are read from self.tmp."""
        old, jobs.SCENARIO_DIR = jobs.SCENARIO_DIR, self.tmp
        try:
            yield
        finally:
            jobs.SCENARIO_DIR = old

    def refusal(self, name, profile="full"):
        """What scenario NAME of self.tmp is refused with (it must be)."""
        with self.scenarios_here(), self.assertRaises(jobs.Refused) as e:
            jobs.Scenario(name, profile)
        return str(e.exception)


class Values(unittest.TestCase):
    def test_sizes(self):
        self.assertEqual(jobs.size_bytes("4096"), 4096)
        self.assertEqual(jobs.size_bytes("512M"), 512 << 20)
        self.assertEqual(jobs.size_bytes("1.5G"), 3 << 29)
        for bad in ("", "-1G", "12Q", "1 G", "G"):
            with self.assertRaises(ValueError):
                jobs.size_bytes(bad)

    def test_types(self):
        self.assertIsNone(jobs.check_value("interval", "0.25"))
        self.assertIn("above 0", jobs.check_value("interval", "0"))
        self.assertIn("positive", jobs.check_value("count", "0"))
        self.assertIsNone(jobs.check_value("steps", "90% 50% 0%"))
        self.assertIn("step '12Q'", jobs.check_value("steps", "90% 12Q"))


class Scenarios(Temp):
    def test_shipped_scenarios_make_jobs_the_guest_reads(self):
        for name in jobs.scenario_names():
            for profile in jobs.PROFILES:
                sc = jobs.Scenario(name, profile)
                d = os.path.join(self.tmp, name, profile)
                share = jobs.make_job(sc, d)
                self.assertEqual([os.path.basename(f) for f in share], ["scenario.env", "scenario.conf"])
                job = jobs.Job(os.path.join(d, "job.conf"))
                self.assertEqual(job["command"], "bench-scenario")
                self.assertEqual(int(job["timeout"]), sc.seconds() + jobs.JOB_SLACK)
                steps, window = sourced(share[0], "SC_STEPS", "SC_WINDOW")
                self.assertEqual(steps.split(), sc.steps, name)
                self.assertEqual([int(w) for w in window.split()], sc.windows, name)
                self.assertEqual(len(sc.windows), len(sc.steps), name)

    def test_low_reclaim_in_bytes_and_quick_profile(self):
        sc = jobs.Scenario("low-reclaim", "quick")
        self.assertEqual(sc.steps, ["116%", "50%", "0%"])
        self.assertEqual(sc.repeats, 1)
        self.assertEqual(sc.seconds(), 10 + 3 * (3 + 6))
        env = self.write("s.env", sc.scenario_env())
        self.assertEqual(sourced(env, "SC_RECLAIM_BYTES", "SC_RECLAIM_EVERY", "SC_FIXED_WORKLOAD_LOW", "SC_WORKLOAD"),
                         [str(1 << 20), "0.25", "", "ws --size 400M --backing file --pattern seq"])

    def test_knob_via(self):
        self.assertEqual(sourced(self.write("a.env", jobs.Scenario("low-steps").scenario_env()), "SC_KNOB_VIA"),
                         ["systemd"])
        self.assertEqual(sourced(self.write("b.env", jobs.Scenario("low-reclaim").scenario_env()), "SC_KNOB_VIA"),
                         ["cgroupfs"])
        self.write("dec.conf", "workload = ws --size 400M\nknob.via = cgroupfs\nsteps = 1.5G 800M\n")
        self.write("via.conf", "workload = ws --size 400M\nknob.via = dbus\nsteps = 50%\n")
        self.assertIn("dec.conf:3: steps: 1.5G: cgroupfs takes whole units", self.refusal("dec"))
        self.assertIn("via.conf:2: knob.via: 'dbus' is not systemd or cgroupfs", self.refusal("via"))

    def test_reclaim_at(self):
        self.assertEqual(sourced(self.write("a.env", jobs.Scenario("low-reclaim").scenario_env()), "SC_RECLAIM_AT"),
                         ["parent"])
        self.assertEqual(sourced(self.write("b.env", jobs.Scenario("low-passes").scenario_env()), "SC_RECLAIM_AT"),
                         ["workload"])
        self.write("at.conf", "workload = ws --size 400M\ncompetitor = ws --size 100M\nreclaim = 4M\n"
                   "reclaim.every = 1\nreclaim.at = root\nsteps = 50%\n")
        self.write("glob.conf", "workload = ws --size 400M\nreclaim.at = workload\nsteps = 50%\n")
        self.assertIn("at.conf:5: reclaim.at: 'root' is not parent or workload", self.refusal("at"))
        self.assertIn("glob.conf:2: reclaim.at: only with targeted reclaim", self.refusal("glob"))

    def test_competitor_count(self):
        self.assertEqual(sourced(self.write("a.env", jobs.Scenario("low-steps").scenario_env()),
                                 "SC_COMPETITOR_COUNT"), ["1"])
        head = "workload = ws --size 400M\nreclaim = 4M\nreclaim.every = 1\nsteps = 50%\n"
        self.write("four.conf", head + "competitor = ws --size 100M\ncompetitor.count = 4\n")
        self.write("big.conf", head + "competitor = ws --size 600M\ncompetitor.count = 4\n")
        self.write("zero.conf", head + "competitor = ws --size 100M\ncompetitor.count = 0\n")
        self.write("glob.conf", "workload = ws --size 400M\ncompetitor = ws --size 100M\n"
                   "competitor.count = 2\nsteps = 50%\n")
        with self.scenarios_here():
            sc = jobs.Scenario("four")
        self.assertEqual(sourced(self.write("four.env", sc.scenario_env()), "SC_COMPETITOR_COUNT"), ["4"])
        self.assertIn("big.conf:6: competitor.count: 4 copies of 'ws --size 600M' ask for more than the guest's 2G",
                      self.refusal("big"))
        self.assertIn("zero.conf:6: competitor.count:", self.refusal("zero"))
        self.assertIn("glob.conf:3: competitor.count: only with targeted reclaim", self.refusal("glob"))

    def test_a_window_per_step(self):
        self.write("per.conf", "workload = ws --size 400M\nwarmup = 10\nsettle = 2\n"
                   "steps = 90% 50% 0%\nwindow = 12 6 3\nquick.steps = 50%\n")
        self.write("count.conf", "workload = ws --size 400M\nsteps = 90% 50% 0%\nwindow = 12 6\n")
        self.write("zero.conf", "workload = ws --size 400M\nsteps = 90% 0%\nwindow = 6 0\n")
        self.write("qcount.conf", "workload = ws --size 400M\nsteps = 90% 0%\nwindow = 6\n"
                   "quick.steps = 50%\nquick.window = 3 3\n")
        with self.scenarios_here():
            sc = jobs.Scenario("per")
        self.assertEqual(sc.windows, [12, 6, 3])
        self.assertEqual(sc.seconds(), 10 + 3 * 2 + 12 + 6 + 3)
        env = self.write("per.env", sc.scenario_env())
        self.assertEqual(sourced(env, "SC_WINDOW"), ["12 6 3"])
        # The quick profile's one step keeps a window of its own count.
        self.assertIn("per.conf:5: window: 3 windows for 1 steps", self.refusal("per", "quick"))
        for name, line, key, said in (("count", 3, "window", "2 windows for 3 steps"),
                                      ("zero", 3, "window", "'0' is not a whole number of seconds above 0"),
                                      ("qcount", 5, "quick.window", "2 windows for 1 steps")):
            self.assertIn(f"{name}.conf:{line}: {key}: {said}",
                          self.refusal(name, "quick" if name == "qcount" else "full"))

    def test_unknown_scenario_and_profile(self):
        with self.assertRaises(jobs.Refused) as e:
            jobs.Scenario("no-such")
        self.assertIn("known scenarios: emin-baseline", str(e.exception))
        with self.assertRaises(jobs.Refused) as e:
            jobs.Scenario("low-reclaim", "slow")
        self.assertIn("profile must be full or quick", str(e.exception))


class Jobs(Temp):
    def test_job_checks_name_file_line_key(self):
        path = self.write("job.conf", "memory = 1G\ncolour = blue\nswap = 7G\n")
        with self.assertRaises(jobs.Refused) as e:
            jobs.Job(path)
        self.assertEqual(e.exception.messages, [f"{path}:2: unknown key 'colour' (known: "
                                                + " ".join(k.name for k in jobs.JOB_KEYS) + ")"])
        path = self.write("job.conf", "memory = 1G\nswap = 7G\n")
        with self.assertRaises(jobs.Refused) as e:
            jobs.Job(path)
        self.assertRegex(str(e.exception), rf"^{path}:2: swap: 7G does not fit on the guest's disk")

    def test_arm_replaces_and_adds_keys(self):
        arm = jobs.Arm("x", {"lru_gen": "on", "recursiveprot": "off"}, "cliff", "", "-")
        text = jobs.apply_arm("# lru_gen = off stays a comment\nmemory = 1G\nlru_gen=off\n", arm)
        self.assertEqual(text, "# lru_gen = off stays a comment\nmemory = 1G\nlru_gen = on\nrecursiveprot = off\n")

    def test_arm_cmdline_adds_words(self):
        # A job's own command line words stay; the arm's come after them.
        arm = jobs.Arm("x", {"cmdline": "slub_debug=FZPU"}, "variant", "", "-")
        self.assertEqual(jobs.apply_arm("cmdline = cgroup_disable=memory\n", arm),
                         "cmdline = cgroup_disable=memory slub_debug=FZPU\n")
        self.assertEqual(jobs.apply_arm("memory = 1G\n", arm), "memory = 1G\ncmdline = slub_debug=FZPU\n")

    def test_arm_needs_add_options(self):
        arm = jobs.read_arms()["slubdebug"]
        self.assertEqual(jobs.apply_arm("needs = CONFIG_MEMCG_KMEM\n", arm),
                         "needs = CONFIG_MEMCG_KMEM CONFIG_SLUB_DEBUG\ncmdline = slub_debug=FZPU\n")

    def test_job_for_kernel(self):
        path = self.write("job.conf", "memory = 1G\nlru_gen = off\n")
        job, variant, arm = jobs.job_for_kernel("patched@mglru", path)
        self.assertEqual((job["lru_gen"], variant, arm), ("on", "patched", "mglru"))
        job, variant, arm = jobs.job_for_kernel("patched", path)
        self.assertEqual((job["lru_gen"], variant, arm), ("off", "patched", None))
        with self.assertRaises(jobs.Refused) as e:
            jobs.job_for_kernel("patched@warp", path)
        self.assertIn("an arm is one of: K@mglru K@zswap K@norecursive", str(e.exception))

    def test_every_arm_sets_keys_a_job_takes(self):
        path = self.write("job.conf", "memory = 1G\n")
        for name, arm in jobs.read_arms().items():
            self.assertTrue(arm.keys, name)
            jobs.job_for_kernel("control@" + name, path)

    def test_job_env_for_the_agent(self):
        path = self.write("job.conf", "swap = 512M\nzswap = on\ncommand = echo 'it''s' > x\n")
        env = self.write("job.env", jobs.Job(path).job_env())
        self.assertEqual(sourced(env, "JOB_SWAP_BYTES", "JOB_ZSWAP", "JOB_LRU_GEN", "JOB_COMMAND"),
                         [str(512 << 20), "Y", "0", "echo 'it''s' > x"])


class HostJson(Temp):
    def test_round_trip_and_refusals(self):
        path = os.path.join(self.tmp, "run.json")
        jobs.write_json(path, {"profile": "quick"})
        self.assertEqual(json.load(open(path)), {"schema": 1, "profile": "quick"})
        self.assertEqual(jobs.read_host_json(path), ({"schema": 1, "profile": "quick"}, None))
        self.assertEqual(jobs.read_host_json(os.path.join(self.tmp, "none.json")), (None, None))
        for text, problem in (('{"schema": 2}', "schema 2"), ('{"schema": 1', "not readable JSON"),
                              ("[1]", "not a JSON object")):
            self.write("x.json", text)
            data, p = jobs.read_host_json(os.path.join(self.tmp, "x.json"))
            self.assertIsNone(data)
            self.assertIn(problem, p)

    def test_result_keeps_the_console_tail_clean(self):
        d = self.tmp
        self.write("console.log", "".join(f"line {i}\r\n" for i in range(20)) + "\x1b[0mlast \"one\"\\\n")
        jobs.write_result(d, "panic", "Kernel panic - not syncing", 12.5, None)
        r = json.load(open(os.path.join(d, "result.json")))
        self.assertEqual((r["schema"], r["result"], r["boot_seconds"], r["agent_start_seconds"]),
                         (1, "panic", 12.5, None))
        lines = r["last_console_lines"].split("\n")
        self.assertEqual(len(lines), 15)
        self.assertEqual(lines[0], "line 6")
        self.assertEqual(lines[-1], '[0mlast "one"\\')
        self.assertFalse(jobs.job_ok(d))
        # A seed check keeps a job that panicked: its verdict is a finding.
        self.assertTrue(jobs.job_ok(d, ("ok", "timeout", "panic")))
        cli = [sys.executable, os.path.join(ROOT, "bench", "jobs.py"), "job-ok", d]
        self.assertEqual(subprocess.run(cli).returncode, 1)
        self.assertEqual(subprocess.run(cli + ["ok", "panic"]).returncode, 0)
        jobs.write_result(d, "ok", "the job finished", 1, 0.5)
        self.assertTrue(jobs.job_ok(d))
        self.assertFalse(jobs.job_ok(d, ("timeout", "panic")))

    def test_meta_names_variant_and_arm(self):
        d = self.tmp
        self.write("job.conf", "memory = 1G\nlru_gen = on\n")
        self.write("qemu.cmd", "qemu-system-x86_64\n-append\nroot=/dev/vda rw\n")
        os.makedirs(os.path.join(d, "k"))
        self.write("k/manifest.json", '{"variant": "patched"}')
        jobs.write_meta(d, "patched@mglru", os.path.join(d, "k"), "tcg", os.path.join(d, "no", "rootfs.ext4"), "QEMU 7.2")
        m = json.load(open(os.path.join(d, "meta.json")))
        self.assertEqual((m["schema"], m["kernel"], m["variant"], m["arm"]), (1, "patched@mglru", "patched", "mglru"))
        self.assertEqual(m["qemu_command"], "qemu-system-x86_64 -append 'root=/dev/vda rw'")
        self.assertEqual((m["job"]["memory"], m["job"]["lru_gen"], m["job"]["cmdline"]), ("1G", "on", ""))
        self.assertEqual((m["kernel_manifest"], m["guest"], m["rootfs_hash"]), ({"variant": "patched"}, None, "unknown"))


class Manifest(Temp):
    def test_one_entry_per_job_latest_wins(self):
        run = self.tmp
        jobs.record(run, "low-reclaim", "patched", 2, "failed:timeout")
        jobs.record(run, "low-reclaim", "control", 1, "ok")
        jobs.record(run, "low-reclaim", "patched", 2, "ok")
        self.assertEqual(jobs.read_manifest(run), {("low-reclaim", "control", 1): "ok",
                                                   ("low-reclaim", "patched", 2): "ok"})
        data = json.load(open(os.path.join(run, "manifest.json")))
        self.assertEqual(data["schema"], 1)
        self.assertEqual([j["dir"] for j in data["jobs"]], ["low-reclaim/control/r1", "low-reclaim/patched/r2"])

    def test_an_old_tsv_manifest_is_read_and_replaced(self):
        run = self.tmp
        self.write("manifest.tsv", "low-steps\tcontrol\t1\tok\tlow-steps/control/r1\n")
        self.assertEqual(jobs.read_manifest(run), {("low-steps", "control", 1): "ok"})
        jobs.record(run, "low-steps", "patched", 1, "ok")
        self.assertFalse(os.path.exists(os.path.join(run, "manifest.tsv")))
        self.assertEqual(len(jobs.read_manifest(run)), 2)

    def test_a_damaged_manifest_is_named(self):
        self.write("manifest.json", '{"schema": 1, "jobs": [{"scenario": "s", "kernel": "k"}]}')
        with self.assertRaises(jobs.Refused) as e:
            jobs.read_manifest(self.tmp)
        self.assertIn("manifest.json: jobs[0]: needs scenario, kernel, repeat", str(e.exception))
        os.makedirs(os.path.join(self.tmp, "s", "k", "r1"))
        with self.assertRaises(rundata.RunError) as e:
            rundata.Run(self.tmp)
        self.assertIn("manifest.json: jobs[0]", str(e.exception))


class Matrix(Temp):
    def test_interleaved_by_repeat(self):
        plan = bench.Plan(["control", "patched@mglru"], ["low-reclaim", "min-reclaim"], 2, "quick")
        self.assertEqual([(s, k, r) for s, k, r, _ in plan.jobs], [
            ("low-reclaim", "control", 1), ("low-reclaim", "patched@mglru", 1),
            ("min-reclaim", "control", 1), ("min-reclaim", "patched@mglru", 1),
            ("low-reclaim", "control", 2), ("low-reclaim", "patched@mglru", 2),
            ("min-reclaim", "control", 2), ("min-reclaim", "patched@mglru", 2)])
        sc = jobs.Scenario("low-reclaim", "quick")
        self.assertEqual(plan.jobs[0][3], sc.seconds() + bench.JOB_OVERHEAD)

    def test_every_mistake_at_once(self):
        with self.assertRaises(jobs.Refused) as e:
            bench.Plan(["control@warp"], ["no-such", "low-reclaim"], None, "full")
        self.assertEqual(len(e.exception.messages), 2)

    def test_plan_shows_what_is_done(self):
        env = dict(os.environ, RESULTS=self.tmp)
        d = jobs.job_dir(os.path.join(self.tmp, "r"), "low-reclaim", "patched", 1)
        os.makedirs(d)
        jobs.write_result(d, "ok", "the job finished", 1, 1)
        out = subprocess.run([BENCH, "plan", "r", "--profile", "quick", "--scenarios", "low-reclaim"],
                             env=env, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual([line.split("\t")[:5] for line in out.stdout.splitlines()],
                         [["1", "low-reclaim", "control", "r1", "to run"],
                          ["2", "low-reclaim", "patched", "r1", "done"]])
        self.assertIn("2 jobs", out.stderr)

    def test_bad_options(self):
        for args, says in ((["run", "a/b"], "run id 'a/b'"), (["run", "--help"], "run id '--help' must start"),
                           (["plan", ".x"], "run id '.x' must start"), (["run", "x", "--repeat", "0"], "--repeat must be"),
                           (["run", "x", "--colour", "red"], "unknown option '--colour'"),
                           (["plan", "x", "--profile", "slow"], "profile must be full or quick")):
            out = subprocess.run([BENCH] + args, capture_output=True, text=True)
            self.assertEqual(out.returncode, 2, args)
            self.assertIn(says, out.stderr)

    def test_cli_door(self):
        out = subprocess.run([JOBS, "variant", "v1-9783aa@zswap"], capture_output=True, text=True)
        self.assertEqual((out.returncode, out.stdout), (0, "v1-9783aa\n"))
        out = subprocess.run([JOBS, "variant", "x@y"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 2)
        out = subprocess.run([JOBS, "nonsense"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 2)


if __name__ == "__main__":
    tap.run(__name__)
