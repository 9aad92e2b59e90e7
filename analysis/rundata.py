"""Read a bench run's result directory: results/RUN/ with run.json,
manifest.json and SCENARIO/KERNEL/rN/ job directories (docs/formats.md).

Nothing here boots or writes anything. Files that are missing or damaged
raise RunError naming the file (and line), or, where a run can still be
analysed without them, are listed in Run.problems.
"""
import csv
import json
import os
import sys

# The host's files (result.json, meta.json, run.json, the manifest) are
# read with the module that writes them.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import jobs  # noqa: E402

# The schema of samples.csv this analysis reads.
SCHEMA = "1"


class RunError(Exception):
    pass


class Samples:
    """A job's samples.csv: series[(cgroup, source, key)] = [(t, step, value)]
    in time order; statuses = [(t, step, cgroup, file, status)]."""

    def __init__(self, path):
        self.path = path
        self.series = {}
        self.statuses = []
        self.interval = None
        try:
            f = open(path, newline="")
        except OSError as e:
            raise RunError(f"{path}: {e.strerror}") from None
        with f:
            first = f.readline()
            if not first.startswith("# bench-collect "):
                raise RunError(f"{path}:1: not a bench-collect file (no '# bench-collect' line)")
            fields = dict(w.split("=", 1) for w in first.split()[2:] if "=" in w)
            if fields.get("schema") != SCHEMA:
                raise RunError(f"{path}:1: schema {fields.get('schema')!r}, this analysis reads schema {SCHEMA}")
            try:
                self.interval = float(fields.get("interval_s", "1"))
            except ValueError:
                raise RunError(f"{path}:1: bad interval_s") from None
            header = f.readline().strip()
            if header != "time_s,step,cgroup,source,key,value":
                raise RunError(f"{path}:2: unexpected header '{header}'")
            for n, row in enumerate(csv.reader(f), start=3):
                if not row:
                    continue
                if len(row) != 6:
                    # The last line of a killed collector may be cut short.
                    self.truncated = n
                    continue
                t, step, cgroup, source, key, value = row
                try:
                    t = float(t)
                except ValueError:
                    raise RunError(f"{path}:{n}: time '{t}' is not a number") from None
                if source == "_status":
                    self.statuses.append((t, step, cgroup, key, value))
                    continue
                try:
                    v = float(value)
                except ValueError:
                    if value == "max":
                        v = float("inf")
                    else:
                        raise RunError(f"{path}:{n}: value '{value}' is not a number") from None
                self.series.setdefault((cgroup, source, key), []).append((t, step, v))

    truncated = None

    def get(self, cgroup, source, key):
        return self.series.get((cgroup, source, key), [])

    def cgroups(self):
        return sorted({c for c, _, _ in self.series if c != "-"})


# The parts cgroups play in a job, for runs without cgroups.tsv.
DEFAULT_ROLES = {
    "workload": "workload.slice",
    "workload_unit": "workload.slice/workload.service",
    "competitor": "system.slice/competitor.service",
    "peer": "peer.slice",
}


class Job:
    def __init__(self, run, scenario, kernel, repeat, path):
        self.run = run
        self.scenario = scenario
        self.kernel = kernel
        self.repeat = repeat
        self.path = path
        self.out = os.path.join(path, "guest", "out")
        self.status = run.manifest.get((scenario, kernel, repeat))
        # A damaged or unknown result.json leaves the job out; a damaged
        # meta.json only its provenance. Either is named in problems.
        self.problems = []
        self.result, result_ok = _host_json(os.path.join(path, "result.json"), self.problems)
        self.meta, _ = _host_json(os.path.join(path, "meta.json"), self.problems)
        self.meta = self.meta or {}
        self.usable = result_ok
        try:
            self.guest_meta = _json(os.path.join(self.out, "guest-meta.json"))
        except RunError as e:
            self.problems.append(f"guest-meta.json: {str(e).split(': ', 1)[1]}")
            self.guest_meta = None
        self.steps = read_tsv(os.path.join(self.out, "steps.tsv"))
        self.units = {u["unit"]: u for u in read_tsv(os.path.join(self.out, "units.tsv")) or []}
        self.ramp = _kv_words(os.path.join(self.out, "ramp.report"))
        # Which cgroup plays which part (cgroups.tsv, written by the guest);
        # runs from before it was written had the global-pressure layout.
        roles = read_tsv(os.path.join(self.out, "cgroups.tsv"))
        self.roles = dict(DEFAULT_ROLES)
        if roles is not None:
            self.roles = {r["role"]: r["path"] for r in roles if r.get("role") and r.get("path")}
        self._samples = None

    def cgroup(self, role):
        """The path (below the cgroup2 mount) of the cgroup playing role
        ("workload", "competitor", "peer", "parent"), or None."""
        return self.roles.get(role)

    @property
    def name(self):
        return f"{self.scenario}/{self.kernel}/r{self.repeat}"

    @property
    def ok(self):
        """Whether the job has what the analysis needs."""
        return self.usable and self.steps is not None and os.path.exists(os.path.join(self.out, "samples.csv"))

    @property
    def samples(self):
        if self._samples is None:
            self._samples = Samples(os.path.join(self.out, "samples.csv"))
        return self._samples


class Run:
    """A run directory. jobs: every job with a directory; problems: what is
    missing or odd, as sentences."""

    def __init__(self, path):
        if not os.path.isdir(path):
            raise RunError(f"'{path}' is not a run directory")
        self.path = os.path.abspath(path)
        self.id = os.path.basename(self.path.rstrip("/"))
        self.problems = []
        self.info = _host_json(os.path.join(path, "run.json"), self.problems)[0] or {}
        try:
            self.manifest = jobs.read_manifest(path)
        except jobs.Refused as e:
            raise RunError(str(e)) from None
        self.jobs = []
        for scenario in sorted(os.listdir(path)):
            sdir = os.path.join(path, scenario)
            if scenario.startswith(".") or not os.path.isdir(sdir):
                continue
            for kernel in sorted(os.listdir(sdir)):
                kdir = os.path.join(sdir, kernel)
                if not os.path.isdir(kdir):
                    continue
                for rep in sorted(os.listdir(kdir)):
                    if rep.startswith("r") and rep[1:].isdigit():
                        self.jobs.append(Job(self, scenario, kernel, int(rep[1:]), os.path.join(kdir, rep)))
        if not self.jobs and not self.manifest and not os.path.isdir(os.path.join(path, "peers")):
            raise RunError(f"'{path}' holds no jobs (no SCENARIO/KERNEL/rN directories, no manifest, no peers/)")
        have = {(j.scenario, j.kernel, j.repeat) for j in self.jobs}
        for key, status in sorted(self.manifest.items()):
            if key not in have:
                self.problems.append(f"{key[0]}/{key[1]}/r{key[2]}: in the manifest ({status}) but no directory")
        for j in self.jobs:
            self.problems += [f"{j.name}: {p}" for p in j.problems]
            if j.status and j.status != "ok":
                self.problems.append(f"{j.name}: {j.status}")
            elif not j.usable:
                self.problems.append(f"{j.name}: left out (its result.json cannot be read)")
            elif not j.ok:
                self.problems.append(f"{j.name}: no results (steps.tsv or samples.csv missing)")

    def scenarios(self):
        return sorted({j.scenario for j in self.jobs})

    def kernels(self, scenario):
        return sorted({j.kernel for j in self.jobs if j.scenario == scenario})

    def good_jobs(self, scenario):
        return [j for j in self.jobs if j.scenario == scenario and j.ok and (j.status in (None, "ok"))]


def _host_json(path, problems):
    """(data, ok) of one of the host's JSON files: a missing file is
    (None, True); one that is not JSON, not an object, or of a schema this
    suite does not read is (None, False), named in problems."""
    data, problem = jobs.read_host_json(path)
    if problem:
        problems.append(f"{os.path.basename(path)}: {problem}")
        return None, False
    return data, True


def _json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise RunError(f"{path}: not readable JSON ({e})") from None


def read_tsv(path):
    """The rows of a tab-separated file with a header, as dicts; None if
    it does not exist."""
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f, delimiter="\t"))
    except FileNotFoundError:
        return None


def _kv_words(path):
    try:
        with open(path) as f:
            return dict(w.split("=", 1) for w in f.read().split() if "=" in w)
    except FileNotFoundError:
        return None
