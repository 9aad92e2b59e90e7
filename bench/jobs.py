#!/usr/bin/python3
"""The job contract on the host, in one place.

A job of a run travels like this, and every step is a function here:

  bench/scenarios/NAME.conf   key = value lines (SCENARIO_KEYS)
    Scenario(NAME, PROFILE)   typed, checked, the profile applied
    make_job()                a job directory: job.conf (JOB_KEYS, for
                              guest.sh), scenario.env and scenario.conf
                              (for the guest's bench-scenario)
  bench/guest.sh run K JOB    applies K's arm (job_for_kernel()), boots,
                              and records its verdict: write_result(),
                              write_meta()
  results/RUN/manifest.json   Manifest: one entry per job, its status
  analysis/rundata.py         reads them back with read_host_json() and
                              read_manifest()

The run matrix (which jobs, in which order, resumed how) is in
bench/bench.py; the QEMU command line is built in bench/guest.sh alone.
Kernel variants are patches/variants (bench/kernel.sh reads it); arms,
K@ARM, are bench/arms, read here (read_arms()).

Run as a program it is the shell scripts' door to the same code
(`jobs.py help`).
"""
import json
import os
import re
import shlex
import subprocess
import sys
import time

SUITE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARMS_FILE = os.environ.get("ARMS_FILE") or os.path.join(SUITE_ROOT, "bench", "arms")

# The schema of every JSON file the host writes (result.json, meta.json,
# run.json, manifest.json). A file from before the field counts as 1.
SCHEMA = 1

# Seconds a job gets beyond its scenario's own time: boot, start, stop.
JOB_SLACK = 180

EX_FAIL, EX_USAGE = 1, 2


class Refused(Exception):
    """Bad input: one message per line, each naming file, line and key
    where it can. Exit status 2."""

    def __init__(self, messages):
        if isinstance(messages, str):
            messages = [messages]
        self.messages = list(messages)
        super().__init__("\n".join(self.messages))


# ---------------------------------------------------------------------------
# Values

SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)([KMGT]?)")
_PERCENT = re.compile(r"[0-9]+(?:\.[0-9]+)?%")


def size_bytes(text):
    """Bytes in a size ("512M", "2G", "1.5G", "4096"); ValueError if not one."""
    m = _SIZE.fullmatch(text)
    if not m:
        raise ValueError(f"'{text}' is not a size")
    return int(round(float(m.group(1)) * SIZE_UNITS[m.group(2)]))


def _is_size(text):
    return bool(_SIZE.fullmatch(text))


def check_value(type_, value):
    """None if value fits type_, else the reason it does not."""
    if type_ == "size":
        return None if _is_size(value) else f"'{value}' is not a size (e.g. 512M, 2G, 1.5G)"
    if type_ == "count":
        return None if re.fullmatch(r"[1-9][0-9]*", value) else f"'{value}' is not a positive whole number"
    if type_ == "seconds":
        return None if re.fullmatch(r"[0-9]+", value) else f"'{value}' is not a whole number of seconds"
    if type_ == "windows":
        words = value.split()
        if not words:
            return "no seconds given"
        for word in words:
            if not re.fullmatch(r"[0-9]+", word) or int(word) == 0:
                return f"'{word}' is not a whole number of seconds above 0"
        return None
    if type_ == "interval":
        if re.fullmatch(r"[0-9]+(\.[0-9]+)?", value) and float(value) > 0:
            return None
        return f"'{value}' is not a number of seconds above 0 (e.g. 0.25)"
    if type_ == "onoff":
        return None if value in ("on", "off") else f"'{value}' is not on or off"
    if type_ == "knob":
        return None if value in ("low", "min") else f"'{value}' is not low or min"
    if type_ == "via":
        return None if value in ("systemd", "cgroupfs") else f"'{value}' is not systemd or cgroupfs"
    if type_ == "at":
        return None if value in ("parent", "workload") else f"'{value}' is not parent or workload"
    if type_ == "steps":
        if not value:
            return "no steps given"
        for word in value.split():
            if not (_PERCENT.fullmatch(word) or _is_size(word)):
                return f"step '{word}' is neither a size (800M) nor a percentage (90%)"
        return None
    if type_ == "options":
        bad = [w for w in value.split() if not re.fullmatch(r"CONFIG_[A-Z0-9_]+", w)]
        return f"'{bad[0]}' is not a kernel option (CONFIG_X)" if bad else None
    if type_ == "string":
        return None
    raise ValueError(f"no value type '{type_}'")


class Key:
    def __init__(self, name, default, type_, doc):
        self.name, self.default, self.type, self.doc = name, default, type_, doc


# Every key a scenario file may have: name, default (None: none), type, what.
SCENARIO_KEYS = [Key(*k) for k in (
    ("description", None, "string", "one line: what the scenario does"),
    ("memory", "2G", "size", "guest RAM"),
    ("cpus", "2", "count", "guest CPUs"),
    ("swap", "0", "size", "swap file in the guest"),
    ("lru_gen", "off", "onoff", "MGLRU in the guest"),
    ("zswap", "off", "onoff", "zswap in the guest"),
    ("knob", "low", "knob", "the knob the steps set: memory.low or memory.min"),
    ("knob.via", "systemd", "via", "how a step sets it: systemctl set-property, or a write to cgroupfs"),
    ("workload", None, "string", "the protected workload's bench-load command"),
    ("workload.low", None, "size", "a fixed memory.low for the workload"),
    ("workload.min", None, "size", "a fixed memory.min for the workload"),
    ("peer", None, "string", "an unprotected peer's bench-load command"),
    ("peer.low", "0", "size", "the peer's memory.low"),
    ("peer.min", "0", "size", "the peer's memory.min"),
    ("competitor", None, "string", "the competitor's bench-load command"),
    ("competitor.count", "1", "count", "targeted reclaim: copies of the competitor, each a unit of its own"),
    ("reclaim", None, "size", "targeted reclaim: bytes per memory.reclaim request"),
    ("reclaim.every", None, "interval", "targeted reclaim: seconds between requests"),
    ("reclaim.at", "parent", "at", "targeted reclaim: the cgroup asked, exp.slice or the workload's slice"),
    ("oom_ok", "off", "onoff", "an OOM kill of the workload is expected"),
    ("warmup", "30", "seconds", "seconds before the first step"),
    ("steps", None, "steps", "the knob's values, going down"),
    ("settle", "10", "seconds", "seconds after a step before its window"),
    ("window", "30", "windows", "seconds measured at each step: one number, or one per step"),
    ("repeats", "3", "count", "repeats of a run"),
    ("quick.steps", None, "steps", "steps of the quick profile"),
    ("quick.warmup", None, "seconds", "warmup of the quick profile"),
    ("quick.settle", None, "seconds", "settle of the quick profile"),
    ("quick.window", None, "windows", "window of the quick profile"),
    ("quick.repeats", None, "count", "repeats of the quick profile"),
)]

# Every key a job file (guest.sh's input) may have.
JOB_KEYS = [Key(*k) for k in (
    ("memory", "2G", "size", "guest RAM"),
    ("cpus", "2", "count", "guest CPUs"),
    ("swap", "1G", "size", "swap file on the guest's ext4 disk (0: none)"),
    ("disk", "8G", "size", "the guest's disk; the image grows to it at boot"),
    ("timeout", "300", "seconds", "deadline for the whole boot, from QEMU start"),
    ("lru_gen", "off", "onoff", "MGLRU (/sys/kernel/mm/lru_gen/enabled)"),
    ("zswap", "off", "onoff", "zswap (/sys/module/zswap/parameters/enabled)"),
    ("recursiveprot", "on", "onoff", "off: cgroup2 remounted without memory_recursiveprot"),
    ("command", None, "string", "shell command the agent runs in the guest"),
    ("cmdline", None, "string", "extra kernel command line words"),
    ("needs", None, "options", "kernel options the job needs (CONFIG_X words): a kernel whose config lacks one is refused before booting"),
)]

PROFILES = ("full", "quick")
_LINE = re.compile(r"\s*([a-z_.]+)\s*=\s*(.*?)\s*")


class KvFile:
    """A parsed key = value file: values[key] (the text, defaults filled
    in, None where a key has neither), lines[key] (where the file gives
    it). refuse() collects messages naming file, line and key."""

    def __init__(self, path, keys, text=None):
        self.path = path
        self.keys = {k.name: k for k in keys}
        self.values = {k.name: k.default for k in keys}
        self.lines = {}
        self.errors = []
        if text is None:
            try:
                with open(path) as f:
                    text = f.read()
            except OSError:
                raise Refused(f"'{path}' not found") from None
        for n, line in enumerate(text.splitlines(), 1):
            if re.fullmatch(r"\s*(#.*)?", line):
                continue
            m = _LINE.fullmatch(line)
            if not m:
                self.errors.append(f"{path}:{n}: not a 'key = value' line: {line}")
                continue
            key, value = m.groups()
            if key not in self.keys:
                self.errors.append(f"{path}:{n}: unknown key '{key}' (known: {' '.join(self.keys)})")
            elif key in self.lines:
                self.errors.append(f"{path}:{n}: '{key}' is given twice")
            else:
                reason = check_value(self.keys[key].type, value)
                if reason:
                    self.errors.append(f"{path}:{n}: {key}: {reason}")
                else:
                    self.lines[key] = n
                    self.values[key] = value
        self.check()

    def refuse(self, key, reason):
        line = self.lines.get(key)
        self.errors.append(f"{self.path}{':' + str(line) if line else ''}: {key}: {reason}")

    def check(self):
        if self.errors:
            raise Refused(self.errors)

    def __getitem__(self, key):
        return self.values[key]

    def bytes(self, key):
        v = self.values[key]
        return None if v is None else size_bytes(v)


# ---------------------------------------------------------------------------
# Scenarios

SCENARIO_DIR = os.environ.get("SCENARIO_DIR") or os.path.join(SUITE_ROOT, "bench", "scenarios")


def scenario_names():
    try:
        return sorted(f[:-5] for f in os.listdir(SCENARIO_DIR) if f.endswith(".conf"))
    except FileNotFoundError:
        return []


def scenario_path(name):
    path = os.path.join(SCENARIO_DIR, name + ".conf")
    if not os.path.isfile(path):
        raise Refused(f"unknown scenario '{name}'; known scenarios: {' '.join(scenario_names())}")
    return path


def _command_sizes(command):
    """The sizes a bench-load command line asks for, in bytes."""
    words = (command or "").split()
    sizes = []
    for i, w in enumerate(words):
        if w in ("--size", "-s", "--stream", "--anon", "--max") and i + 1 < len(words) and _is_size(words[i + 1]):
            sizes.append(size_bytes(words[i + 1]))
    return sizes


class Scenario(KvFile):
    """A scenario file with a profile applied and every check that needs
    several values done. name, profile; seconds(): its length."""

    def __init__(self, name, profile="full"):
        if profile not in PROFILES:
            raise Refused(f"profile must be full or quick, not '{profile}'")
        self.name, self.profile = name, profile
        super().__init__(scenario_path(name), SCENARIO_KEYS)

    def check(self):
        if self.errors:
            raise Refused(self.errors)
        steps_key = "steps"
        if self.profile == "quick":
            for key in ("steps", "warmup", "settle", "window", "repeats"):
                if self.values["quick." + key] is not None:
                    self.values[key] = self.values["quick." + key]
            if "quick.steps" in self.lines:
                steps_key = "quick.steps"
        v = self.values
        mem = self.bytes("memory")
        for key in ("workload", "steps"):
            if not v[key]:
                self.refuse(key, "missing (it has no default)")
        knob = v["knob"]
        if v["workload." + knob] is not None:
            self.refuse("workload." + knob, f"memory.{knob} is the knob this scenario steps")
        for key in ("workload.low", "workload.min", "peer.low", "peer.min"):
            if v[key] is not None and self.bytes(key) > mem:
                self.refuse(key, f"{v[key]} exceeds the guest's memory ({v['memory']})")
        if not v["peer"]:
            for key in ("peer.low", "peer.min"):
                if v[key] != "0":
                    self.refuse(key, "set, but there is no peer workload")
        for key in ("workload", "peer", "competitor"):
            if any(s >= mem for s in _command_sizes(v[key])):
                self.refuse(key, f"{v[key]} asks for more than the guest's {v['memory']}")
        copies = int(v["competitor.count"]) if v["competitor.count"].isdigit() else 1
        if copies > 1 and v["competitor"] and sum(_command_sizes(v["competitor"])) * copies >= mem:
            self.refuse("competitor.count", f"{copies} copies of '{v['competitor']}' ask for more than "
                        f"the guest's {v['memory']}")
        # Targeted reclaim: the amount and the cadence together, a
        # competitor to compare with, none of the global-pressure keys.
        if v["reclaim"] is not None or v["reclaim.every"] is not None:
            if v["reclaim"] is None:
                self.refuse("reclaim", "missing (reclaim.every is given: how much per request?)")
            elif self.bytes("reclaim") == 0:
                self.refuse("reclaim", "must be more than 0")
            elif self.bytes("reclaim") >= mem:
                self.refuse("reclaim", f"{v['reclaim']} per request is not less than the guest's memory ({v['memory']})")
            if v["reclaim.every"] is None:
                self.refuse("reclaim.every", "missing (reclaim is given: how often?)")
            if not v["competitor"]:
                self.refuse("competitor", "missing (a targeted-reclaim scenario compares the workload with it)")
            for key in ("peer", "peer.low", "peer.min", "oom_ok"):
                if key in self.lines:
                    self.refuse(key, "only for global-pressure scenarios, not with reclaim")
        else:
            for key in ("reclaim.at", "competitor.count"):
                if key in self.lines:
                    self.refuse(key, "only with targeted reclaim (reclaim and reclaim.every)")
        # Steps: all percentages or all sizes, going down, within the guest.
        prev = prev_kind = None
        for word in (v["steps"] or "").split():
            if word.endswith("%"):
                kind, x = "pct", float(word[:-1])
                if x > 200:
                    self.refuse(steps_key, f"{word} is more than 200% of the workload's usage")
            else:
                kind, x = "size", size_bytes(word)
                if x > mem:
                    self.refuse(steps_key, f"{word} exceeds the guest's memory ({v['memory']})")
                if v["knob.via"] == "cgroupfs" and "." in word:
                    self.refuse(steps_key, f"{word}: cgroupfs takes whole units (knob.via); "
                                "write it in a smaller unit (1.5G: 1536M)")
            if prev_kind is not None and kind != prev_kind:
                self.refuse(steps_key, "mixes percentages and sizes")
            elif prev is not None and x > prev:
                self.refuse(steps_key, f"not going down ({word} after a smaller step)")
            prev, prev_kind = x, kind
        windows = (v["window"] or "").split()
        steps = (v["steps"] or "").split()
        if len(windows) > 1 and len(windows) != len(steps):
            key = "quick.window" if self.profile == "quick" and "quick.window" in self.lines else "window"
            self.refuse(key, f"{len(windows)} windows for {len(steps)} steps: give one, or one per step")
        if self.errors:
            raise Refused(self.errors)

    @property
    def steps(self):
        return self.values["steps"].split()

    @property
    def repeats(self):
        return int(self.values["repeats"])

    @property
    def windows(self):
        """Each step's measuring window, in seconds."""
        w = [int(x) for x in self.values["window"].split()]
        return w * len(self.steps) if len(w) == 1 else w

    def seconds(self):
        v = self.values
        return int(v["warmup"]) + len(self.steps) * int(v["settle"]) + sum(self.windows)

    def job_conf(self):
        """The job file guest.sh runs this scenario with (an arm's keys are
        guest.sh's to apply)."""
        v = self.values
        return "".join(f"{line}\n" for line in (
            f"# Made by bench.py from scenario {self.name} ({self.profile}): {v['description'] or ''}",
            f"memory = {v['memory']}",
            f"cpus = {v['cpus']}",
            f"swap = {v['swap']}",
            f"lru_gen = {v['lru_gen']}",
            f"zswap = {v['zswap']}",
            "recursiveprot = on",
            f"timeout = {self.seconds() + JOB_SLACK}",
            "command = bench-scenario",
        ))

    def scenario_env(self):
        """The scenario as shell assignments for the guest's
        bench-scenario: sizes in bytes, empty where not set."""
        v = self.values

        def b(key):
            return "" if v[key] is None else str(self.bytes(key))

        env = [
            ("SC_KNOB", shlex.quote(v["knob"])),
            ("SC_KNOB_VIA", v["knob.via"]),
            ("SC_MEMORY_BYTES", b("memory")),
            ("SC_WORKLOAD", shlex.quote(v["workload"] or "")),
            ("SC_COMPETITOR", shlex.quote(v["competitor"] or "")),
            # Copies of the competitor (targeted reclaim): each a unit.
            ("SC_COMPETITOR_COUNT", v["competitor.count"]),
            ("SC_PEER", shlex.quote(v["peer"] or "")),
            # Fixed protection, in bytes; empty: not set.
            ("SC_FIXED_WORKLOAD_LOW", b("workload.low")),
            ("SC_FIXED_WORKLOAD_MIN", b("workload.min")),
            ("SC_FIXED_PEER_LOW", b("peer.low")),
            ("SC_FIXED_PEER_MIN", b("peer.min")),
            ("SC_OOM_OK", v["oom_ok"]),
            # Targeted reclaim: bytes per memory.reclaim request (empty:
            # global pressure), seconds between requests.
            ("SC_RECLAIM_BYTES", b("reclaim")),
            ("SC_RECLAIM_EVERY", v["reclaim.every"] or ""),
            # parent: exp.slice; workload: exp.slice/exp-workload.slice.
            ("SC_RECLAIM_AT", v["reclaim.at"]),
            ("SC_WARMUP", v["warmup"]),
            ("SC_STEPS", shlex.quote(v["steps"])),
            ("SC_SETTLE", v["settle"]),
            # One window a step, in the steps' order.
            ("SC_WINDOW", shlex.quote(" ".join(str(w) for w in self.windows))),
        ]
        return "".join(f"{k}={val}\n" for k, val in env)


def make_job(scenario, directory):
    """Write what a job of scenario (a Scenario) needs into directory:
    job.conf (guest.sh's), and scenario.env and scenario.conf (copied into
    the guest's share). Returns the paths of the two for the share."""
    os.makedirs(directory, exist_ok=True)
    write_atomic(os.path.join(directory, "job.conf"), scenario.job_conf())
    env = os.path.join(directory, "scenario.env")
    write_atomic(env, scenario.scenario_env())
    conf = os.path.join(directory, "scenario.conf")
    with open(scenario.path) as f:
        write_atomic(conf, f.read())
    return [env, conf]


# ---------------------------------------------------------------------------
# Arms and jobs

class Arm:
    def __init__(self, name, keys, model, description, where):
        self.name, self.keys, self.model, self.description = name, keys, model, description
        self.where = where  # FILE:LINE


def read_arms(path=None):
    """{name: Arm} from bench/arms: each line a name, the job keys it sets
    (key=value words), model=F (a formula of analysis/model.py, or
    "variant": the variant's own) and a description."""
    path = path or ARMS_FILE
    arms = {}
    with open(path) as f:
        for n, line in enumerate(f.read().splitlines(), 1):
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            keys, model, i = {}, None, 1
            while i < len(words) and "=" in words[i]:
                k, _, val = words[i].partition("=")
                if k == "model":
                    model = val
                else:
                    keys[k] = val
                i += 1
            if model is None:
                raise Refused(f"{path}:{n}: arm {words[0]}: no model= word")
            arms[words[0]] = Arm(words[0], keys, model, " ".join(words[i:]), f"{path}:{n}")
    return arms


def split_kernel(kernel, arms=None):
    """(variant, arm or None) of a kernel name, K or K@ARM; Refused for an
    unknown arm."""
    variant, at, arm = kernel.partition("@")
    if not at:
        return kernel, None
    arms = read_arms() if arms is None else arms
    if not variant or arm not in arms:
        raise Refused(f"kernel '{kernel}': an arm is one of: {' '.join('K@' + a for a in arms)}")
    return variant, arm


def apply_arm(text, arm):
    """Job file text with arm's job keys set: a key the text has gets the
    arm's value (cmdline and needs: the arm's words after its own), one it
    has not is added."""
    out, done = [], set()
    for line in text.splitlines():
        m = _LINE.fullmatch(line)
        if m and not line.lstrip().startswith("#") and m.group(1) in arm.keys:
            value = arm.keys[m.group(1)]
            if m.group(1) in ("cmdline", "needs") and m.group(2).strip():
                value = f"{m.group(2).strip()} {value}"
            out.append(f"{m.group(1)} = {value}")
            done.add(m.group(1))
        else:
            out.append(line)
    out += [f"{k} = {v}" for k, v in arm.keys.items() if k not in done]
    return "".join(line + "\n" for line in out)


def host_memory():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no MemTotal in /proc/meminfo")


class Job(KvFile):
    """A job file, checked (types, then what needs several values)."""

    def __init__(self, path, text=None):
        super().__init__(path, JOB_KEYS, text)

    def check(self):
        if self.errors:
            raise Refused(self.errors)
        v = self.values
        mem, swap, disk = self.bytes("memory"), self.bytes("swap"), self.bytes("disk")
        host = host_memory()
        if mem < 256 << 20:
            self.refuse("memory", "at least 256M is needed to boot systemd")
        elif mem > host - (1 << 30):
            self.refuse("memory", f"{v['memory']} leaves this machine less than 1G ({host >> 20}M in all)")
        if disk < 8 << 30:
            self.refuse("disk", f"{v['disk']} is smaller than the image (8G)")
        elif swap > disk - (2 << 30):
            self.refuse("swap", f"{v['swap']} does not fit on the guest's disk ({v['disk']}, 2G of it "
                        "is the system); raise disk")
        if int(v["timeout"]) < 10:
            self.refuse("timeout", f"{v['timeout']}s is too short to boot")
        if self.errors:
            raise Refused(self.errors)

    def job_env(self):
        """The job as shell assignments for the guest's agent."""
        v = self.values
        return "".join(f"{k}={val}\n" for k, val in (
            ("JOB_SWAP_BYTES", self.bytes("swap")),
            ("JOB_DISK_BYTES", self.bytes("disk")),
            ("JOB_LRU_GEN", "y" if v["lru_gen"] == "on" else "0"),
            ("JOB_ZSWAP", "Y" if v["zswap"] == "on" else "N"),
            ("JOB_RECURSIVEPROT", v["recursiveprot"]),
            ("JOB_COMMAND", shlex.quote(v["command"] or "")),
        ))


def job_for_kernel(kernel, path):
    """(Job, variant, arm): the job file at path as kernel (K or K@ARM)
    runs it, the arm's keys applied."""
    variant, arm = split_kernel(kernel)
    text = _read(path)
    Job(path, text)
    if arm is None:
        return Job(path, text), variant, None
    try:
        return Job(path, apply_arm(text, read_arms()[arm])), variant, arm
    except Refused as e:
        raise Refused(e.messages + [f"arm '{arm}' (bench/arms) sets a job key this job cannot take"]) from None


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        raise Refused(f"'{path}' not found") from None


# ---------------------------------------------------------------------------
# The host's JSON files

def write_atomic(path, text):
    """Readers see the old file or the new one, never half of one."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def write_json(path, data):
    """data (a dict) as path, with the schema first."""
    write_atomic(path, json.dumps({"schema": SCHEMA, **data}, indent=2) + "\n")


def read_host_json(path):
    """(data, problem) of one of the host's JSON files: (None, None) when
    it is missing; (None, reason) when it is not JSON, not an object, or
    of a schema this suite does not read."""
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as e:
        return None, f"not readable JSON ({e})"
    if not isinstance(data, dict):
        return None, "not a JSON object"
    if data.get("schema", 1) != SCHEMA:
        return None, f"schema {data.get('schema')!r}, this analysis reads schema {SCHEMA}"
    return data, None


def job_ok(rundir, results=("ok",)):
    """Whether guest.sh's verdict in rundir/result.json is one of results
    (by default: ok)."""
    data, _ = read_host_json(os.path.join(rundir, "result.json"))
    return data is not None and data.get("result") in results


def suite_version():
    """git describe of the suite; a dispatched job's host has no .git and
    is told the version in BENCH_SUITE_VERSION."""
    if os.environ.get("BENCH_SUITE_VERSION"):
        return os.environ["BENCH_SUITE_VERSION"]
    try:
        return subprocess.run(["git", "-C", SUITE_ROOT, "describe", "--always", "--dirty"],
                              capture_output=True, text=True, check=True).stdout.strip() or "unknown"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def host_description():
    u = os.uname()
    return f"{u.nodename} {u.release}, {os.cpu_count()} CPUs"


def _clean(text):
    """Text without control characters other than tab and newline
    (terminal escapes, carriage returns in console logs)."""
    return re.sub(r"[\x00-\x08\x0b-\x1f]", "", text)


def _tail(path, n):
    try:
        with open(path, errors="replace") as f:
            lines = f.read().replace("\r", "").splitlines()
    except OSError:
        return ""
    return _clean("\n".join(lines[-n:]))


def write_result(rundir, verdict, detail, boot_seconds, agent_start_seconds):
    """guest.sh's verdict on a job: RUNDIR/result.json (docs/formats.md)."""
    write_json(os.path.join(rundir, "result.json"), {
        "result": verdict,
        "detail": _clean(detail),
        "boot_seconds": boot_seconds,
        "agent_start_seconds": agent_start_seconds,
        "last_console_lines": _tail(os.path.join(rundir, "console.log"), 15),
    })


def print_command(argv):
    """A command line as one line a shell reads back."""
    return " ".join(a if re.fullmatch(r"[A-Za-z0-9_./:=,+-]+", a) else shlex.quote(a) for a in argv)


def _json_or_none(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def write_meta(rundir, kernel, kdir, accel, rootfs, qemu_version):
    """What ran a job: RUNDIR/meta.json (docs/formats.md). The job is
    RUNDIR/job.conf (the arm's keys applied), the QEMU command
    RUNDIR/qemu.cmd (one argument a line)."""
    variant, arm = split_kernel(kernel)
    job = Job(os.path.join(rundir, "job.conf"))
    try:
        with open(os.path.join(rundir, "qemu.cmd")) as f:
            qemu = print_command(f.read().splitlines())
    except OSError:
        qemu = ""
    try:
        with open(os.path.join(os.path.dirname(rootfs), "rootfs.hash")) as f:
            rootfs_hash = f.read().strip()
    except OSError:
        rootfs_hash = "unknown"
    write_json(os.path.join(rundir, "meta.json"), {
        "suite_version": suite_version(),
        "kernel": kernel,
        "variant": variant,
        "arm": arm or "",
        "kernel_manifest": _json_or_none(os.path.join(kdir, "manifest.json")),
        "rootfs_hash": rootfs_hash,
        "accelerator": accel,
        "qemu_version": qemu_version,
        "qemu_command": qemu,
        "host": host_description(),
        "job": {k: v if v is not None else "" for k, v in job.values.items()},
        "guest": _json_or_none(os.path.join(rundir, "guest", "out", "guest-meta.json")),
    })


def write_run_json(run, profile, kernels, scenarios, repeats):
    write_json(os.path.join(run, "run.json"), {
        "suite_version": suite_version(),
        "profile": profile,
        "kernels": " ".join(kernels),
        "scenarios": " ".join(scenarios),
        "repeats": str(repeats) if repeats else "per scenario",
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": host_description(),
    })


# ---------------------------------------------------------------------------
# The manifest: one entry per job of a run, its latest status.

def job_dir(run, scenario, kernel, repeat):
    return os.path.join(run, scenario, kernel, f"r{repeat}")


def read_manifest(run):
    """{(scenario, kernel, repeat): status} of a run, from manifest.json
    (or the header-less manifest.tsv of runs from before it). A missing
    manifest is empty; a damaged one is a Refused naming the file (and
    line)."""
    path = os.path.join(run, "manifest.json")
    if os.path.exists(path):
        data, problem = read_host_json(path)
        if problem:
            raise Refused(f"{path}: {problem}")
        entries = data.get("jobs")
        if not isinstance(entries, list):
            raise Refused(f"{path}: no \"jobs\" list")
        manifest = {}
        for i, e in enumerate(entries):
            try:
                manifest[(str(e["scenario"]), str(e["kernel"]), int(e["repeat"]))] = str(e["status"])
            except (TypeError, KeyError, ValueError):
                raise Refused(f"{path}: jobs[{i}]: needs scenario, kernel, repeat (a number) and status") from None
        return manifest
    path = os.path.join(run, "manifest.tsv")
    manifest = {}
    if os.path.exists(path):
        with open(path) as f:
            for n, line in enumerate(f, 1):
                fields = line.rstrip("\n").split("\t")
                if len(fields) < 4 or not fields[2].isdigit():
                    raise Refused(f"{path}:{n}: not a manifest line (scenario, kernel, repeat, status, dir)")
                manifest[(fields[0], fields[1], int(fields[2]))] = fields[3]
    return manifest


def record(run, scenario, kernel, repeat, status):
    """Set a job's status in the run's manifest (rewritten atomically)."""
    manifest = read_manifest(run)
    manifest[(scenario, kernel, int(repeat))] = status
    write_json(os.path.join(run, "manifest.json"), {"jobs": [
        {"scenario": s, "kernel": k, "repeat": r, "status": st,
         "dir": os.path.relpath(job_dir(run, s, k, r), run)}
        for (s, k, r), st in sorted(manifest.items())]})
    old = os.path.join(run, "manifest.tsv")
    if os.path.exists(old):
        os.remove(old)


# ---------------------------------------------------------------------------
# The shell scripts' door

USAGE = """usage: jobs.py COMMAND [ARGS]   (for guest.sh and selftests.sh)

  job-check JOB                  validate a job file
  job-values KERNEL JOB          the job as KERNEL (K or K@ARM) runs it, as
                                 shell assignments (JOB_*), checked
  job-write KERNEL JOB RUNDIR    write RUNDIR/job.conf (the arm applied) and
                                 RUNDIR/guest/job.env
  result RUNDIR VERDICT DETAIL BOOT_S AGENT_S
                                 write RUNDIR/result.json
  meta RUNDIR KERNEL KDIR ACCEL ROOTFS QEMU_VERSION
                                 write RUNDIR/meta.json
  job-ok RUNDIR [RESULT...]      exit 0 if RUNDIR's verdict is ok (or one of RESULTs)
  variant KERNEL                 the variant of K or K@ARM (checks the arm)
  arms                           the arms: name, job keys, model, description
"""


def _values(job, variant, arm):
    v = job.values
    out = {
        "JOB_VARIANT": variant, "JOB_ARM": arm or "",
        "JOB_MEMORY": v["memory"], "JOB_MEMORY_BYTES": job.bytes("memory"),
        "JOB_CPUS": v["cpus"], "JOB_TIMEOUT": v["timeout"],
        "JOB_DISK_BYTES": job.bytes("disk"), "JOB_CMDLINE": v["cmdline"] or "",
        "JOB_NEEDS": v["needs"] or "",
    }
    return "".join(f"{k}={shlex.quote(str(val))}\n" for k, val in out.items())


def main(argv):
    cmd, args = (argv[0], argv[1:]) if argv else ("help", [])
    want = {"job-check": 1, "job-values": 2, "job-write": 3, "result": 5, "meta": 6,
            "job-ok": 1, "variant": 1, "arms": 0}
    if cmd in ("help", "-h", "--help"):
        print(USAGE, end="")
        return 0
    if cmd not in want or len(args) != want[cmd] and not (cmd == "job-ok" and args):
        print(USAGE, end="", file=sys.stderr)
        return EX_USAGE
    try:
        if cmd == "job-check":
            Job(args[0])
        elif cmd == "job-values":
            print(_values(*job_for_kernel(args[0], args[1])), end="")
        elif cmd == "job-write":
            job, _, _ = job_for_kernel(args[0], args[1])
            rundir = args[2]
            os.makedirs(os.path.join(rundir, "guest"), exist_ok=True)
            text = _read(args[1])
            _, arm = split_kernel(args[0])
            write_atomic(os.path.join(rundir, "job.conf"), apply_arm(text, read_arms()[arm]) if arm else text)
            write_atomic(os.path.join(rundir, "guest", "job.env"), job.job_env())
        elif cmd == "result":
            write_result(args[0], args[1], args[2], float(args[3]),
                         None if args[4] in ("", "null") else float(args[4]))
        elif cmd == "meta":
            write_meta(*args)
        elif cmd == "job-ok":
            return 0 if job_ok(args[0], tuple(args[1:]) or ("ok",)) else EX_FAIL
        elif cmd == "variant":
            print(split_kernel(args[0])[0])
        elif cmd == "arms":
            for a in read_arms().values():
                keys = " ".join(f"{k}={v}" for k, v in a.keys.items())
                print(f"{a.name}\t{keys}\t{a.model}\t{a.description}")
    except Refused as e:
        for m in e.messages:
            print(m, file=sys.stderr)
        return EX_USAGE
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
