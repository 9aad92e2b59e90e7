"""A run's scenarios, analysed: per step and kernel, every metric across
repeats (mean, sd, 95% CI), each kernel against the baseline (% and Welch
p), the measured scan fraction beside each variant's model."""
import metrics
import model
import stats

# The parts cgroups play (rundata.Job.cgroup() gives each one's path).
PRIMARY = "workload"
PEER = "peer"
COMPETITOR = "competitor"


class Step:
    def __init__(self, number, label, knob, requested):
        self.number = number
        self.label = label
        self.knob = knob  # "low" or "min"
        self.requested = requested
        self.values = []  # value_bytes of every job

    @property
    def value(self):
        return stats.mean(self.values)


class ScenarioResult:
    def __init__(self, run, scenario, baseline=None):
        self.run = run
        self.scenario = scenario
        self.jobs = run.good_jobs(scenario)
        self.problems = []
        self.steps = {}
        # windows[role][kernel][step number] = [Window per repeat]
        self.windows = {PRIMARY: {}, PEER: {}, COMPETITOR: {}}
        self.ooms = {}
        # (kernel, repeat): the host a dispatched job ran on (bench.py run
        # --hosts); empty for a run on this machine.
        self.hosts = {}
        for job in self.jobs:
            try:
                job.samples
            except Exception as e:  # a damaged file: say so, go on
                self.problems.append(f"{job.name}: {e}")
                continue
            if job.samples.truncated:
                self.problems.append(f"{job.name}: samples.csv line {job.samples.truncated} is cut short (ignored)")
            roles = [(PRIMARY, "workload")]
            for role in (PEER, COMPETITOR):
                if job.samples.get(job.cgroup(role), "memory.stat", "pgscan"):
                    roles.append((role, role))
            for st in job.steps:
                n = int(st["step"])
                step = self.steps.setdefault(n, Step(n, st["label"], st["knob"], st["requested"]))
                step.values.append(int(st["value_bytes"]))
                made = {}
                for role, app in roles:
                    w = made[role] = metrics.window(job, st, role, app)
                    for p in w.problems:
                        self.problems.append(f"{job.name} step {st['label']}: {p}")
                    self.windows[role].setdefault(job.kernel, {}).setdefault(n, []).append(w)
                if COMPETITOR in made:
                    metrics.normalise(made[PRIMARY], made[COMPETITOR])
            self.ooms.setdefault(job.kernel, []).append((job.repeat, metrics.oom_story(job)))
            d = job.meta.get("dispatch")
            if isinstance(d, dict) and d.get("host"):
                self.hosts[(job.kernel, job.repeat)] = str(d["host"])
        self.kernels = sorted({j.kernel for j in self.jobs})
        if baseline and baseline not in self.kernels:
            raise ValueError(f"baseline kernel '{baseline}' is not in scenario {scenario} ({', '.join(self.kernels)})")
        self.baseline = baseline or ("control" if "control" in self.kernels else (self.kernels or [None])[0])
        # The baseline first, then the others in name order.
        self.kernels = [self.baseline] + [k for k in self.kernels if k != self.baseline] if self.kernels else []
        self.has_peer = bool(self.windows[PEER])
        self.has_competitor = bool(self.windows[COMPETITOR])
        self.knob = next(iter(self.steps.values())).knob if self.steps else "low"

    def step_numbers(self):
        return sorted(self.steps)

    def values(self, kernel, step, key, cgroup=PRIMARY):
        ws = self.windows[cgroup].get(kernel, {}).get(step, [])
        return [w[key] for w in ws if w[key] is not None]

    def summary(self, kernel, step, key, cgroup=PRIMARY):
        return stats.summary(self.values(kernel, step, key, cgroup))

    def versus(self, kernel, step, key="pgscan/s", cgroup=PRIMARY):
        """(kernel's mean as % of the baseline's, Welch p) at a step."""
        a = self.values(kernel, step, key, cgroup)
        b = self.values(self.baseline, step, key, cgroup)
        pct = None
        if a and b and stats.mean(b) >= 1:
            pct = 100 * stats.mean(a) / stats.mean(b)
        w = stats.welch(a, b)
        return pct, (w[2] if w else None)

    def spans_hosts(self):
        """Whether this scenario's jobs ran on more than one host."""
        return len(set(self.hosts.values())) > 1

    def paired(self, kernel, step, key, cgroup=PRIMARY):
        """kernel against the baseline at a step, paired by repeat where
        both jobs of the repeat ran on the same host (one block of a run
        over hosts): {pairs, hosts, diff (mean of kernel - baseline), p
        (paired t-test)}, or None without two such pairs."""
        def by_repeat(k):
            ws = self.windows[cgroup].get(k, {}).get(step, [])
            return {w.job.repeat: w[key] for w in ws if w[key] is not None}
        a, b = by_repeat(kernel), by_repeat(self.baseline)
        host = {r: self.hosts.get((kernel, r)) for r in set(a) & set(b)}
        reps = sorted(r for r, h in host.items() if h and h == self.hosts.get((self.baseline, r)))
        if len(reps) < 2:
            return None
        xs, ys = [a[r] for r in reps], [b[r] for r in reps]
        t = stats.paired(xs, ys)
        return {"pairs": len(reps), "hosts": sorted({host[r] for r in reps}),
                "diff": stats.mean(xs) - stats.mean(ys), "p": t[2]}

    def unprotected_step(self):
        """The step without protection (knob value 0), the reference for
        "% of unprotected"."""
        zero = [n for n, s in self.steps.items() if s.values and max(s.values) == 0]
        return zero[-1] if zero else None

    def measured_fraction(self, kernel, step, cgroup=PRIMARY):
        ref = self.unprotected_step()
        if ref is None:
            return None
        a = self.values(kernel, step, "pgscan/s", cgroup)
        b = self.values(kernel, ref, "pgscan/s", cgroup)
        if not a or not b or stats.mean(b) < 1:
            return None
        return stats.mean(a) / stats.mean(b)

    def cgroup_name(self, role=PRIMARY):
        """The path of the cgroup playing role in this scenario's jobs."""
        names = sorted({j.cgroup(role) for j in self.jobs if j.cgroup(role)})
        return " / ".join(names) if names else role

    def protection(self, kernel, step, cgroup=PRIMARY):
        """(usage, emin, elow) as measured in the step's windows, means of
        repeats; None when a value is missing."""
        usage = stats.mean(self.values(kernel, step, "memory.current", cgroup))
        low = stats.mean(self.values(kernel, step, "memory.low", cgroup))
        mn = stats.mean(self.values(kernel, step, "memory.min", cgroup))
        if usage is None or low is None or mn is None:
            return None
        return usage, mn, low

    def model_fraction(self, kernel, step, cgroup=PRIMARY, low_reclaim=False, formula=None):
        formula = formula or model.formula_of(kernel)
        p = self.protection(kernel, step, cgroup)
        if formula is None or p is None:
            return None
        usage, emin, elow = p
        return model.scan_fraction(formula, usage, emin, elow, low_reclaim)

    def peer_ratio(self, kernel, step, key="pgscan/s"):
        """workload.slice's mean of a metric over peer.slice's: pgscan/s, or
        memory.current (what the difference in pressure leaves each with)."""
        a = self.values(kernel, step, key, PRIMARY)
        b = self.values(kernel, step, key, PEER)
        if not a or not b or stats.mean(b) < 1:
            return None
        return stats.mean(a) / stats.mean(b)

    def peer_ratio_model(self, kernel, step, formula=None):
        """The same ratio as the low-reclaim pass of the kernel's formula
        predicts it from each slice's measured usage and protection. The
        scan target is the fraction times the LRU size, so each fraction is
        weighted by its slice's measured LRU (when the run recorded it)."""
        a = self.model_fraction(kernel, step, PRIMARY, True, formula)
        b = self.model_fraction(kernel, step, PEER, True, formula)
        if a is None or not b:
            return None
        la = stats.mean(self.values(kernel, step, "lru_pages", PRIMARY))
        lb = stats.mean(self.values(kernel, step, "lru_pages", PEER))
        if la and lb:
            return a * la / (b * lb)
        return a / b


def analyse(run, baseline=None):
    return [ScenarioResult(run, s, baseline) for s in run.scenarios()]
