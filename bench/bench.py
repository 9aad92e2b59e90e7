#!/usr/bin/python3
"""The A/B experiment: run scenarios on kernels, each (kernel, scenario,
repeat) a self-contained job in a fresh boot, interleaved across kernels,
resumable; then print the per-step table and write the report.

What a job is (scenario file, job directory, the JSON files) is
bench/jobs.py's; booting one is bench/guest.sh's. Run with no arguments
for usage.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hosts  # noqa: E402
import jobs  # noqa: E402
from jobs import Refused  # noqa: E402

PROG = "bench.py"
ROOT = jobs.SUITE_ROOT
RESULTS = os.environ.get("RESULTS") or os.path.join(ROOT, "results")
BUILD_DIR = os.environ.get("BUILD_DIR") or os.path.join(ROOT, "build")
GUEST = os.path.join(ROOT, "bench", "guest.sh")
KERNEL_SH = os.path.join(ROOT, "bench", "kernel.sh")
PYTHON = "/usr/bin/python3"
# Seconds a job takes beyond its scenario's own time, for the estimate
# (boot and shutdown under TCG): 23 s on average over the 30 targeted jobs
# of 2026-12-07 (87.3 s a job, 64 s of scenario), 26 s in one low-steps job.
JOB_OVERHEAD = 25

USAGE = f"""usage: {PROG} COMMAND [ARGS]

  run RUN_ID [options]       run the matrix into {RESULTS}/RUN_ID (resumes:
                             finished jobs are kept, others run again)
      --kernels "A B"        kernels (default: control patched); an arm
                             K@ARM runs kernel K with the job keys
                             bench/arms gives ARM (K@mglru: MGLRU on)
      --scenarios "S T"      scenarios (default: low-steps)
      --repeat N             repeats (default: the scenario's; quick: 1)
      --profile P            full (default) or quick
      --hosts FILE           run the jobs on the hosts of FILE (a GNU
                             parallel sshloginfile) instead of here:
                             docs/hosts.md
  plan RUN_ID [options]      print the jobs run would run, in order, and
                             which are done already; boots nothing
  one RUN_ID KERNEL SCENARIO REPEAT [--profile P]
                             run one job of the matrix
  check SCENARIO [--profile P]
                             validate a scenario without booting
  list                       the scenarios
  table RUN_DIR              print the per-step table of a run

Scenarios are bench/scenarios/NAME.conf.
"""


def log(msg):
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


class Usage(Exception):
    pass


def check_kernel(kernel):
    """Refused unless kernel (K or K@ARM) names a known variant and arm;
    kernel.sh says what is wrong with the variant."""
    variant, _ = jobs.split_kernel(kernel)
    r = subprocess.run([KERNEL_SH, "path", variant], stdout=subprocess.DEVNULL)
    if r.returncode != 0:
        sys.exit(r.returncode)


class Plan:
    """The run matrix: every (scenario, kernel, repeat), interleaved:
    repeat r of every scenario on every kernel, then r + 1, so that a run
    cut short still has every kernel at every repeat it reached, and slow
    drift of the host hits every kernel alike."""

    def __init__(self, kernels, scenarios, repeat, profile):
        self.kernels, self.profile, self.repeat = kernels, profile, repeat
        self.scenarios = {}
        errors = []
        for s in scenarios:
            try:
                self.scenarios[s] = jobs.Scenario(s, profile)
            except Refused as e:
                errors += e.messages
        for k in kernels:
            try:
                jobs.split_kernel(k)
            except Refused as e:
                errors += e.messages
        if errors:
            raise Refused(errors)
        self.jobs = []
        most = max(self.repeats(s) for s in self.scenarios.values())
        for r in range(1, most + 1):
            for name, sc in self.scenarios.items():
                if r > self.repeats(sc):
                    continue
                for k in kernels:
                    self.jobs.append((name, k, r, sc.seconds() + JOB_OVERHEAD))

    def repeats(self, sc):
        return self.repeat or sc.repeats

    def seconds(self):
        return sum(j[3] for j in self.jobs)


def run_one(run, kernel, scenario, repeat, profile, tag=""):
    """Run one job of a run; True if it is ok (now or from before)."""
    sc = scenario if isinstance(scenario, jobs.Scenario) else jobs.Scenario(scenario, profile)
    d = jobs.job_dir(run, sc.name, kernel, repeat)
    if jobs.job_ok(d):
        log(f"[{kernel} {sc.name} r{repeat}] done already, kept: {d}")
        jobs.record(run, sc.name, kernel, repeat, "ok")
        return True
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.dirname(d), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".job.", dir=run)
    rc = 0
    try:
        share = jobs.make_job(sc, tmp)
        # A guest that never reached the agent failed to boot: nothing was
        # measured. Keep that attempt aside (the analysis ignores it) and
        # boot once more.
        for attempt in ("", " (2nd boot)"):
            env = dict(os.environ, LOG_KERNEL=kernel,
                       LOG_TAG=f"{sc.name} r{repeat}{' ' + tag if tag else ''}{attempt}")
            argv = [GUEST, "run", kernel, os.path.join(tmp, "job.conf"), d]
            for f in share:
                argv += ["--with", f]
            rc = _guest(argv, env)
            if rc == 0 or os.path.exists(os.path.join(d, "guest", "agent-started")) or attempt:
                break
            log(f"[{kernel} {sc.name} r{repeat}] the guest never started the agent; "
                f"kept as {d}.boot-failure, booting again")
            shutil.rmtree(d + ".boot-failure", ignore_errors=True)
            if os.path.exists(d):
                os.rename(d, d + ".boot-failure")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if rc == 0:
        jobs.record(run, sc.name, kernel, repeat, "ok")
        return True
    data, _ = jobs.read_host_json(os.path.join(d, "result.json"))
    verdict = data.get("result") if data else f"exit {rc}"
    jobs.record(run, sc.name, kernel, repeat, f"failed:{verdict}")
    return False


def _guest(argv, env):
    """Run guest.sh; stopped from outside, it goes too (it takes QEMU and
    the overlay with it) and so do we: 130 for Ctrl-C, 143 for SIGTERM."""
    p = subprocess.Popen(argv, env=env)

    def stop(signum, _frame):
        p.send_signal(signal.SIGTERM)
        p.wait()
        sys.exit(128 + signum)

    old = signal.signal(signal.SIGTERM, stop)
    try:
        return p.wait()
    except KeyboardInterrupt:
        # The terminal sent SIGINT to guest.sh as well; let it clean up.
        p.wait()
        sys.exit(130)
    finally:
        signal.signal(signal.SIGTERM, old)


def parse_options(args, allowed):
    opts = {"kernels": "control patched", "scenarios": "low-steps", "repeat": None, "profile": "full",
            "hosts": None}
    i = 0
    while i < len(args):
        key = args[i][2:] if args[i].startswith("--") else None
        if key not in allowed:
            raise Usage(f"unknown option '{args[i]}'")
        if i + 1 >= len(args):
            raise Usage(f"{args[i]} needs a value")
        opts[key] = args[i + 1]
        i += 2
    if opts["repeat"] is not None:
        if not opts["repeat"].isdigit() or int(opts["repeat"]) < 1:
            raise Usage("--repeat must be a positive number")
        opts["repeat"] = int(opts["repeat"])
    if opts["profile"] not in jobs.PROFILES:
        raise Usage(f"profile must be full or quick, not '{opts['profile']}'")
    return opts


def check_run_id(run_id):
    if not run_id or not all(c.isalnum() or c in "._-" for c in run_id):
        raise Usage(f"run id '{run_id}' may only hold letters, digits, '.', '_', '-'")
    # "run --help" once started a whole default run named "--help".
    if not run_id[0].isalnum():
        raise Usage(f"run id '{run_id}' must start with a letter or a digit "
                    f"(an option before the run id?)")


def make_plan(args, allowed=("kernels", "scenarios", "repeat", "profile")):
    check_run_id(args[0])
    o = parse_options(args[1:], allowed)
    plan = Plan(o["kernels"].split(), o["scenarios"].split(), o["repeat"], o["profile"])
    plan.hosts = o["hosts"]
    return os.path.join(RESULTS, args[0]), plan


def cmd_plan(args):
    run, plan = make_plan(args)
    for n, (s, k, r, secs) in enumerate(plan.jobs, 1):
        state = "done" if jobs.job_ok(jobs.job_dir(run, s, k, r)) else "to run"
        print(f"{n}\t{s}\t{k}\tr{r}\t{state}\tabout {secs}s")
    print(f"# {len(plan.jobs)} jobs, about {plan.seconds() // 60} min", file=sys.stderr)
    return 0


def cmd_run(args):
    run, plan = make_plan(args, ("kernels", "scenarios", "repeat", "profile", "hosts"))
    # Everything is checked before anything boots.
    host_list = hosts.check(plan.hosts) if plan.hosts else None
    for k in plan.kernels:
        check_kernel(k)
    rootfs = os.environ.get("ROOTFS") or os.path.join(BUILD_DIR, "rootfs", "rootfs.ext4")
    if not os.path.isfile(rootfs):
        log("guest image not found; build it with: make rootfs")
        return 1
    os.makedirs(run, exist_ok=True)
    if not os.path.exists(os.path.join(run, "run.json")):
        jobs.write_run_json(run, plan.profile, plan.kernels, list(plan.scenarios), plan.repeat)
    total, secs = len(plan.jobs), plan.seconds()
    where = f" on the hosts of {plan.hosts}" if plan.hosts else f", about {secs // 60} min"
    log(f"run {os.path.basename(run)}: {total} jobs ({', '.join(plan.kernels)} x "
        f"{', '.join(plan.scenarios)}){where}; results in {run}")
    if host_list:
        rc = hosts.dispatch(run, plan, host_list, rootfs,
                            os.environ.get("KOUT") or os.path.join(BUILD_DIR, "kernels"))
        summarise(run)
        return rc
    start = time.time()
    done_est = failed = 0
    for n, (s, k, r, job_est) in enumerate(plan.jobs, 1):
        # ETA: the estimate of what is left, scaled by how the estimate
        # has held so far.
        left = secs - done_est
        eta = left * (time.time() - start) / done_est if done_est else left
        log(f"job {n}/{total}: {k} {s} r{r} (elapsed {int(time.time() - start) // 60} min, "
            f"ETA {int(eta) // 60} min)")
        if not run_one(run, k, plan.scenarios[s], r, plan.profile, f"job {n}/{total}"):
            failed += 1
        done_est += job_est
    log(f"run {os.path.basename(run)} finished: {total - failed} of {total} jobs ok, "
        f"in {int(time.time() - start) // 60} min")
    summarise(run)
    return 0 if failed == 0 else 1


def summarise(run):
    """Print the run's table and write its report."""
    subprocess.run([PYTHON, os.path.join(ROOT, "analysis", "table.py"), run])
    if subprocess.run([PYTHON, "-c", "import matplotlib"], stderr=subprocess.DEVNULL).returncode == 0:
        subprocess.run([PYTHON, os.path.join(ROOT, "analysis", "report.py"), run])
    else:
        log("no report: Debian's python3-matplotlib is missing (make deps)")


def cmd_one(args):
    if len(args) not in (4, 6) or (len(args) == 6 and args[4] != "--profile"):
        raise Usage(f"usage: {PROG} one RUN_ID KERNEL SCENARIO REPEAT [--profile P]")
    check_run_id(args[0])
    profile = args[5] if len(args) == 6 else "full"
    if profile not in jobs.PROFILES:
        raise Usage(f"profile must be full or quick, not '{profile}'")
    if not args[3].isdigit() or int(args[3]) < 1:
        raise Usage("REPEAT must be a positive number")
    sc = jobs.Scenario(args[2], profile)
    check_kernel(args[1])
    run = os.path.join(RESULTS, args[0])
    os.makedirs(run, exist_ok=True)
    return 0 if run_one(run, args[1], sc, int(args[3]), profile) else 1


def main(argv):
    cmd, args = (argv[0], argv[1:]) if argv else ("help", [])
    try:
        if cmd in ("help", "-h", "--help"):
            print(USAGE, end="")
            return 0
        if cmd == "run":
            if not args:
                raise Usage(f"usage: {PROG} run RUN_ID [options]")
            return cmd_run(args)
        if cmd == "plan":
            if not args:
                raise Usage(f"usage: {PROG} plan RUN_ID [options]")
            return cmd_plan(args)
        if cmd == "one":
            return cmd_one(args)
        if cmd == "check":
            if len(args) not in (1, 3) or (len(args) == 3 and args[1] != "--profile"):
                raise Usage(f"usage: {PROG} check SCENARIO [--profile P]")
            jobs.Scenario(args[0], args[2] if len(args) == 3 else "full")
            return 0
        if cmd == "list":
            for s in jobs.scenario_names():
                try:
                    desc = jobs.Scenario(s).values["description"] or ""
                except Refused:
                    desc = "(invalid: bench.py check " + s + ")"
                print(f"{s:<14} {desc}")
            return 0
        if cmd == "table":
            if not args:
                raise Usage(f"usage: {PROG} table RUN_DIR")
            return subprocess.run([PYTHON, os.path.join(ROOT, "analysis", "table.py")] + args).returncode
        print(USAGE, end="", file=sys.stderr)
        return jobs.EX_USAGE
    except Usage as e:
        log(str(e))
        return jobs.EX_USAGE
    except Refused as e:
        for m in e.messages:
            print(m, file=sys.stderr)
        return jobs.EX_USAGE


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
