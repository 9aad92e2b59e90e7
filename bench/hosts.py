#!/usr/bin/python3
"""A run's jobs spread over other machines with GNU parallel.

`bench.py run RUN --hosts FILE` comes here. FILE is a GNU parallel
sshloginfile: one host a line, `[N/]SSHLOGIN`, where SSHLOGIN is
`user@host` or a whole ssh command ending in the host (`ssh -p 2222 -i KEY
user@host`), N the guests it may run at once (default 1); `#` starts a
comment. The steps, each a function below:

  qualify()    every host is asked, over ssh, for its QEMU, tools, KVM,
               memory and disk; one that cannot be reached or does not
               qualify is named and left out
  ship()       what the jobs need goes to each host once, by hash, into
               its remote directory ($BENCH_REMOTE_DIR, by default
               ~/.cache/cgroup-bench): the suite (suite/HASH), the guest
               image (images/HASH), each kernel (kernels/INPUTS_HASH)
  blocks()     one block per (scenario, repeat): every kernel of it on the
               same host, in a random order fixed by the run id
  dispatch()   GNU parallel sends each block's directory to a host, runs
               bench/remote-block.sh there (bench.py one per job, as a
               local run does) and brings its out/ back; --joblog, with
               --resume-failed, makes a re-run go on where it stopped, and
               --retries sends a failed block to another host
  collect()    each job that came back is checked against the SHA256SUMS
               the host wrote, then moved to results/RUN/SCENARIO/KERNEL/rN
               with the host in meta.json ("dispatch"); a job that came
               back incomplete is set aside and its block marked failed in
               the joblog, so the next round (or re-run) does it again. A
               finished job is never replaced or deleted.
"""
import concurrent.futures
import hashlib
import io
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jobs  # noqa: E402
from jobs import Refused  # noqa: E402

PROG = "bench.py"
REMOTE_DIR = "${BENCH_REMOTE_DIR:-$HOME/.cache/cgroup-bench}"
# Every ssh this file runs (and GNU parallel's) fails instead of asking.
SSH_OPTIONS = ["-o", "BatchMode=yes", "-o", "ConnectTimeout=15",
               "-o", "ServerAliveInterval=30", "-o", "ServerAliveCountMax=4"]
# Retries of a failed block, each on a host where it has not failed yet.
RETRIES = 2
# Rounds of GNU parallel: the second does again the blocks whose results
# came back incomplete from the first.
ROUNDS = 2
# What a host keeps free beyond its guests' memory, and its disk beyond the
# image and kernels, per guest.
MEMORY_SPARE = 512 << 20
DISK_PER_GUEST = 1 << 30
# Debian packages behind the commands a host needs.
HOST_TOOLS = {"qemu-system-x86_64": "qemu-system-x86", "qemu-img": "qemu-utils",
              "python3": "python3", "rsync": "rsync", "bash": "bash",
              "sha256sum": "coreutils", "tar": "tar"}


def log(msg):
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# The hosts file

class Host:
    """One line of the hosts file."""

    def __init__(self, where, text):
        self.where = where
        m = re.fullmatch(r"(?:([0-9]+)/)?(.*)", text.strip())
        self.slots = int(m.group(1)) if m.group(1) else 1
        login = m.group(2).strip()
        try:
            words = shlex.split(login)
        except ValueError as e:
            raise Refused(f"{where}: cannot read '{login}': {e}") from None
        if self.slots < 1:
            raise Refused(f"{where}: '{text.strip()}': a host runs at least 1 guest")
        if not words:
            raise Refused(f"{where}: no host after '{m.group(1)}/'")
        if login == ":":
            raise Refused(f"{where}: ':' is this machine; for a local run leave HOSTS out")
        self.ssh = words[:-1] or ["ssh"]
        self.target = words[-1]
        if os.path.basename(self.ssh[0]) != "ssh":
            raise Refused(f"{where}: '{login}': the command must be ssh, not '{self.ssh[0]}'")
        port = None
        for i, w in enumerate(self.ssh[:-1]):
            if w == "-p":
                port = self.ssh[i + 1]
        self.name = self.target + (f":{port}" if port else "")
        self.remote_dir = None
        self.info = {}

    def ssh_argv(self):
        return self.ssh + SSH_OPTIONS

    def login(self):
        """The sshlogin GNU parallel is given (and reports back)."""
        return shlex.join(self.ssh_argv() + [self.target])

    def run(self, script, stdin=None, timeout=120):
        """Run shell script on the host (sh -s, script then stdin's bytes
        are not mixed: the script is an argument). CompletedProcess with
        bytes; returncode 255 is ssh's own failure."""
        argv = self.ssh_argv() + [self.target, "sh -c " + shlex.quote(script)]
        try:
            return subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout,
                                  stdin=None if stdin is not None else subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(argv, 255, b"", b"timed out after %d s" % timeout)


def read_hosts(path):
    """The hosts of FILE, in order; Refused naming file and line."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise Refused(f"hosts file {path}: {e.strerror}") from None
    hosts, errors, seen = [], [], {}
    for n, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        try:
            h = Host(f"{path}:{n}", text)
        except Refused as e:
            errors += e.messages
            continue
        if h.login() in seen:
            errors.append(f"{path}:{n}: {h.name} is listed already on line {seen[h.login()]}")
            continue
        seen[h.login()] = n
        hosts.append(h)
    if errors:
        raise Refused(errors)
    if not hosts:
        raise Refused(f"hosts file {path}: no hosts in it (one [N/]SSHLOGIN a line)")
    names = [h.name for h in hosts]
    for h in hosts:
        if names.count(h.name) > 1:
            h.name += "#" + h.where.rsplit(":", 1)[1]
    return hosts


# ---------------------------------------------------------------------------
# Qualifying a host

PROBE = """
R=%s
echo "remote_dir_wanted=$R"
mkdir -p "$R" 2> /dev/null
echo "remote_dir=$(cd "$R" 2> /dev/null && pwd)"
echo "hostname=$(uname -n)"
echo "kernel=$(uname -r)"
echo "cpus=$(getconf _NPROCESSORS_ONLN)"
echo "qemu=$(qemu-system-x86_64 --version 2> /dev/null | head -n 1)"
for t in %s; do command -v "$t" > /dev/null 2>&1 || echo "missing=$t"; done
if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then echo kvm=yes; else echo kvm=no; fi
echo "mem_available_kb=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)"
echo "disk_free_kb=$(df -Pk "$R" 2> /dev/null | awk 'NR == 2 { print $4 }')"
""" % (REMOTE_DIR, " ".join(HOST_TOOLS))


def qemu_major(version_line):
    m = re.search(r"version ([0-9]+)\.", version_line or "")
    return int(m.group(1)) if m else None


def local_qemu():
    try:
        return subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True,
                              text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        return ""


def probe(host, need):
    """Ask host what it has; None if it qualifies, else why not. need:
    memory (bytes per guest), disk (bytes), qemu (the local version line),
    accel (ACCEL)."""
    r = host.run(PROBE, timeout=60)
    if r.returncode != 0:
        err = r.stderr.decode(errors="replace").strip().splitlines()
        return f"unreachable: ssh exited {r.returncode}" + (f" ({err[-1]})" if err else "")
    info, missing = {}, []
    for line in r.stdout.decode(errors="replace").splitlines():
        k, _, v = line.partition("=")
        if k == "missing":
            missing.append(v)
        else:
            info[k] = v
    host.info = info
    host.remote_dir = info.get("remote_dir") or None
    why = []
    if missing:
        pkgs = sorted({HOST_TOOLS.get(t, t) for t in missing})
        why.append(f"lacks {', '.join(missing)} (Debian: apt-get install {' '.join(pkgs)})")
    mine, theirs = qemu_major(need["qemu"]), qemu_major(info.get("qemu"))
    if "qemu-system-x86_64" not in missing and mine != theirs:
        why.append(f"QEMU major version {theirs}, not {mine} as here ({info.get('qemu') or '?'})")
    if need["accel"] == "kvm" and info.get("kvm") != "yes":
        why.append("ACCEL=kvm, but its /dev/kvm is not usable")
    try:
        mem = int(info.get("mem_available_kb", "")) << 10
        if mem < host.slots * need["memory"] + MEMORY_SPARE:
            why.append(f"{mem >> 20} MiB available, {host.slots} guest(s) need "
                       f"{(host.slots * need['memory'] + MEMORY_SPARE) >> 20} MiB")
    except ValueError:
        why.append("cannot read its MemAvailable")
    if not host.remote_dir:
        why.append(f"cannot make its directory {info.get('remote_dir_wanted') or '?'}")
    else:
        try:
            disk = int(info.get("disk_free_kb", "")) << 10
            want = need["disk"] + host.slots * DISK_PER_GUEST
            if disk < want:
                why.append(f"{disk >> 20} MiB free in {host.remote_dir}, needs {want >> 20} MiB")
        except ValueError:
            why.append(f"cannot read the free space of {host.remote_dir}")
    return "; ".join(why) or None


def qualify(hosts, need):
    """The hosts that qualify, probed at once; the others named, with why."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(16, len(hosts))) as ex:
        verdicts = list(ex.map(lambda h: probe(h, need), hosts))
    good = []
    for h, why in zip(hosts, verdicts):
        if why:
            log(f"host {h.name} ({h.where}) left out: {why}")
        else:
            kvm = "KVM usable" if h.info.get("kvm") == "yes" else "no KVM: TCG"
            log(f"host {h.name}: {h.info.get('hostname')}, {h.info.get('cpus')} CPUs, "
                f"{h.info.get('qemu')}, {kvm}, {h.slots} guest(s) at a time")
            good.append(h)
    return good


# ---------------------------------------------------------------------------
# What the jobs need, shipped once per host by hash

def suite_files(root):
    """The suite's files: git's (tracked and not ignored), or every file
    outside build/ and results/ where there is no git; and variants.local."""
    files = None
    if os.path.isdir(os.path.join(root, ".git")):
        r = subprocess.run(["git", "-C", root, "ls-files", "-z", "-c", "-o", "--exclude-standard"],
                           capture_output=True)
        if r.returncode == 0:
            files = [f for f in r.stdout.decode().split("\0") if f]
    if files is None:
        files = []
        for d, dirs, names in os.walk(root):
            rel = os.path.relpath(d, root)
            if rel == ".":
                dirs[:] = [x for x in dirs if x not in ("build", "results", ".git")]
            files += [os.path.normpath(os.path.join(rel, n)) for n in names]
    if os.path.exists(os.path.join(root, "variants.local")):
        files.append("variants.local")
    return sorted({f for f in files if os.path.isfile(os.path.join(root, f))})


def suite_tar(root):
    """(hash, bytes): the suite as a tar that is the same bytes for the
    same files (names sorted, owner, group and times zero)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for f in suite_files(root):
            path = os.path.join(root, f)
            ti = tar.gettarinfo(path, arcname=f)
            ti.uid = ti.gid = 0
            ti.uname = ti.gname = ""
            ti.mtime = 0
            ti.mode = 0o755 if os.access(path, os.X_OK) else 0o644
            with open(path, "rb") as fh:
                tar.addfile(ti, fh)
    data = buf.getvalue()
    return hashlib.sha256(data).hexdigest()[:16], data


class Inputs:
    """What every block needs: the suite, the image, the kernels."""

    def __init__(self, root, rootfs, kout, variants):
        self.suite_hash, self.suite_bytes = suite_tar(root)
        self.suite_version = jobs.suite_version()
        self.rootfs = rootfs
        try:
            with open(os.path.join(os.path.dirname(rootfs), "rootfs.hash")) as f:
                self.image_hash = f.read().strip()[:16]
        except OSError:
            raise Refused(f"{rootfs}: no rootfs.hash beside it; rebuild it with: make rootfs") from None
        self.kernels = {}
        for v in variants:
            d = os.path.join(kout, v)
            m = jobs._json_or_none(os.path.join(d, "manifest.json")) or {}
            if not m.get("inputs_hash") or not os.path.isfile(os.path.join(d, "bzImage")):
                raise Refused(f"kernel '{v}': no {d}/bzImage with a manifest.json; build it with: make kernel K={v}")
            self.kernels[v] = (m["inputs_hash"][:16], d)

    def disk_bytes(self):
        st = os.stat(self.rootfs)
        size = st.st_blocks * 512
        for _, d in self.kernels.values():
            size += sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
                        if os.path.isfile(os.path.join(d, f)))
        return size


def _rsync(host, src, dest):
    """rsync src to dest on host: (rc, stderr)."""
    ssh = shlex.join(host.ssh_argv())
    r = subprocess.run(["rsync", "-a", "-S", "--partial", "-e", ssh, src, f"{host.target}:{dest}"],
                       capture_output=True, text=True)
    return r.returncode, r.stderr.strip()


def _send_image(host, rootfs, dest):
    """The image and its rootfs.hash to dest on host, as a sparse tar: only
    the image's data is read and sent (about 360 MB of its 8 GB), where
    rsync -S would read all of it. (rc, stderr)."""
    tar = subprocess.Popen(["tar", "-C", os.path.dirname(rootfs), "--sparse", "--hole-detection=seek",
                            "-cf", "-", os.path.basename(rootfs), "rootfs.hash"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    r = subprocess.run(host.ssh_argv() + [host.target, "tar -x -C " + shlex.quote(dest)],
                       stdin=tar.stdout, capture_output=True)
    tar.stdout.close()
    terr = tar.stderr.read().decode(errors="replace").strip()
    if tar.wait() != 0:
        return tar.returncode, f"tar here: {terr}"
    return r.returncode, r.stderr.decode(errors="replace").strip()


def ship(host, inputs):
    """Put what is missing of inputs into host's remote directory. None, or
    why it failed."""
    R = host.remote_dir
    want = {f"suite/{inputs.suite_hash}": None, f"images/{inputs.image_hash}": None}
    for v, (h, _) in inputs.kernels.items():
        want[f"kernels/{h}"] = v
    have = host.run("cd " + shlex.quote(R) + " && for d in " + " ".join(want) +
                    "; do [ -f $d/.complete ] && echo $d; done; true", timeout=60)
    if have.returncode != 0:
        return f"cannot list {R}: {have.stderr.decode(errors='replace').strip()}"
    present = set(have.stdout.decode().split())
    sent = []
    for rel, variant in want.items():
        if rel in present:
            continue
        part = shlex.quote(f"{R}/{rel}.part")
        prep = host.run(f"rm -rf {part} && mkdir -p {part}", timeout=60)
        if prep.returncode != 0:
            return f"cannot make {R}/{rel}.part: {prep.stderr.decode(errors='replace').strip()}"
        if rel.startswith("suite/"):
            r = host.run(f"tar -x -C {part}", stdin=inputs.suite_bytes, timeout=300)
            rc, err = r.returncode, r.stderr.decode(errors="replace").strip()
        elif rel.startswith("images/"):
            rc, err = _send_image(host, inputs.rootfs, f"{R}/{rel}.part")
        else:
            rc, err = _rsync(host, inputs.kernels[variant][1] + "/", f"{R}/{rel}.part/")
        if rc != 0:
            return f"sending {rel} failed: {err}"
        done = host.run(f"touch {part}/.complete && rm -rf {shlex.quote(f'{R}/{rel}')} && "
                        f"mv {part} {shlex.quote(f'{R}/{rel}')}", timeout=60)
        if done.returncode != 0:
            return f"cannot finish {R}/{rel}: {done.stderr.decode(errors='replace').strip()}"
        sent.append({"suite": "suite", "images": "image"}.get(rel.split("/")[0])
                    if variant is None else f"kernel {variant}")
    log(f"host {host.name}: " + (f"sent {', '.join(sent)}" if sent else "has everything already")
        + f" ({R})")
    return None


# ---------------------------------------------------------------------------
# Blocks

class Block:
    def __init__(self, seq, scenario, repeat, kernels):
        self.seq, self.scenario, self.repeat, self.kernels = seq, scenario, repeat, kernels
        self.name = f"b{seq:04d}"
        self.desc = f"{scenario} r{repeat}"

    def todo(self, run):
        """Its kernels whose job in run is not ok (yet), in its order."""
        return [k for k in self.kernels
                if not jobs.job_ok(jobs.job_dir(run, self.scenario, k, self.repeat))]


def blocks(run_id, plan):
    """One block per (scenario, repeat) of the plan, in its order; the
    kernels of a block in a random order that the run id fixes, so that a
    re-run makes the same blocks (GNU parallel's joblog numbers them)."""
    out, seen = [], set()
    for s, _, r, _ in plan.jobs:
        if (s, r) in seen:
            continue
        seen.add((s, r))
        ks = list(plan.kernels)
        random.Random(f"{run_id}/{s}/{r}").shuffle(ks)
        out.append(Block(len(out) + 1, s, r, ks))
    return out


RUN_SH = """#!/bin/sh
# bench/hosts.py wrote this: GNU parallel runs it on a host, in the
# block's directory it sent there.
. "$1/block.env"
exec bash "%s/suite/$SUITE_HASH/bench/remote-block.sh" "$1"
""" % REMOTE_DIR


def write_block_env(bdir, block, inputs, kernels, **extra):
    """bdir/block.env for remote-block.sh: extra, the block's name, the
    hashes of what was shipped, and the kernels' variants with theirs."""
    variants = sorted({jobs.split_kernel(k)[0] for k in kernels})
    env = {**extra, "BLOCK": block.name,
           "SUITE_HASH": inputs.suite_hash, "SUITE_VERSION": inputs.suite_version,
           "IMAGE_HASH": inputs.image_hash, "ACCEL": os.environ.get("ACCEL", "auto"),
           "KERNELS": " ".join(f"{v}={inputs.kernels[v][0]}" for v in variants)}
    jobs.write_atomic(os.path.join(bdir, "block.env"),
                      "".join(f"{k}={shlex.quote(v)}\n" for k, v in env.items()))


def write_block(bdir, block, run_id, profile, inputs, todo):
    """The block's directory for GNU parallel: block.env, jobs.tsv (the
    kernels still to run, in the block's order), run.sh."""
    os.makedirs(bdir, exist_ok=True)
    write_block_env(bdir, block, inputs, todo, RUN=run_id, PROFILE=profile)
    jobs.write_atomic(os.path.join(bdir, "jobs.tsv"),
                      "".join(f"{k}\t{block.scenario}\t{block.repeat}\n" for k in todo))
    jobs.write_atomic(os.path.join(bdir, "run.sh"), RUN_SH)


# ---------------------------------------------------------------------------
# GNU parallel's joblog

def read_joblog(path):
    """{seq: (host, exitval, signal)} of the last line of each seq."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                fields = line.rstrip("\n").split("\t")
                if len(fields) >= 9 and fields[0].isdigit():
                    out[int(fields[0])] = (fields[1], int(fields[6]), int(fields[7]))
    except OSError:
        pass
    return out


def mark_failed(path, seqs, reason):
    """Make the joblog say blocks seqs failed (Exitval 1), so that
    --resume-failed runs them again."""
    if not seqs or not os.path.exists(path):
        return
    with open(path) as f:
        lines = f.read().splitlines(True)
    last = {}
    for i, line in enumerate(lines):
        fields = line.split("\t")
        if fields[0].isdigit():
            last[int(fields[0])] = i
    for s in seqs:
        if s in last:
            fields = lines[last[s]].rstrip("\n").split("\t")
            if fields[6] == "0":
                fields[6] = "1"
                lines[last[s]] = "\t".join(fields) + "\n"
    jobs.write_atomic(path, "".join(lines))
    log(f"joblog: block(s) {', '.join(f'b{s:04d}' for s in sorted(seqs))} marked failed ({reason})")


# ---------------------------------------------------------------------------
# Results coming back

def verify(jobdir):
    """None if jobdir holds exactly the files its SHA256SUMS lists, each
    with its sum; else what is wrong."""
    sums = os.path.join(jobdir, "SHA256SUMS")
    try:
        with open(sums) as f:
            listed = {}
            for line in f:
                m = re.fullmatch(r"([0-9a-f]{64})  \./(.+)\n?", line)
                if not m:
                    return f"SHA256SUMS: cannot read line '{line.rstrip()}'"
                listed[m.group(2)] = m.group(1)
    except OSError:
        return "no SHA256SUMS (the job did not finish writing)"
    present = set()
    for d, _, names in os.walk(jobdir):
        for n in names:
            rel = os.path.relpath(os.path.join(d, n), jobdir)
            if rel != "SHA256SUMS":
                present.add(rel)
    if set(listed) - present:
        return f"missing {sorted(set(listed) - present)[0]}" + \
            (f" and {len(set(listed) - present) - 1} more" if len(set(listed) - present) > 1 else "")
    if present - set(listed):
        return f"{sorted(present - set(listed))[0]} is not in SHA256SUMS"
    for rel, want in listed.items():
        h = hashlib.sha256()
        with open(os.path.join(jobdir, rel), "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        if h.hexdigest() != want:
            return f"{rel}: its sha256 differs from SHA256SUMS (truncated or damaged)"
    return None


def import_job(src, dest, keep, tag, dispatch):
    """Move job directory src, as a host left it, to dest, checked against
    its SHA256SUMS, with dispatch (where it ran) in its meta.json; one that
    does not match is named and moved to keep instead. Its verdict, or None
    when it was set aside."""
    problem = verify(src)
    if problem:
        log(f"{tag} came back incomplete: {problem}; set aside in {keep}")
        os.makedirs(os.path.dirname(keep), exist_ok=True)
        shutil.rmtree(keep, ignore_errors=True)
        os.rename(src, keep)
        return None
    os.remove(os.path.join(src, "SHA256SUMS"))
    meta = jobs._json_or_none(os.path.join(src, "meta.json"))
    if isinstance(meta, dict):
        meta["dispatch"] = dispatch
        jobs.write_json(os.path.join(src, "meta.json"), meta)
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    os.rename(src, dest)
    data, _ = jobs.read_host_json(os.path.join(dest, "result.json"))
    verdict = (data or {}).get("result", "no result.json")
    log(f"{tag}: {verdict}")
    return verdict


def attempts(bdir, names):
    """The attempts a block's out/ holds, oldest first: (name, directory,
    host, dispatch record without the block)."""
    outdir = os.path.join(bdir, "out")
    out = []
    for a in sorted(os.listdir(outdir)) if os.path.isdir(outdir) else []:
        adir = os.path.join(outdir, a)
        info = jobs._json_or_none(os.path.join(adir, "attempt.json")) or {}
        login = info.get("sshlogin", "")
        host = names.get(login, login or "?")
        out.append((a, adir, host, {"host": host, "hostname": info.get("hostname", ""),
                                    "sshlogin": login, "attempt": a}))
    return out


def collect(run, run_id, bdir, block, names, failed_on=()):
    """Import what block's attempts brought back into run; the number of
    its jobs that are not ok afterwards. names: sshlogin -> host name;
    failed_on: the hosts where a try of the block failed in this round
    (meta.json keeps them)."""
    for a, adir, host, where in attempts(bdir, names):
        for k in block.kernels:
            src = jobs.job_dir(os.path.join(adir, run_id), block.scenario, k, block.repeat)
            if not os.path.isdir(src):
                continue
            dest = jobs.job_dir(run, block.scenario, k, block.repeat)
            tag = f"[{k} {block.scenario} r{block.repeat}] from {host}"
            if jobs.job_ok(dest):
                log(f"{tag}: a finished result is here already, this one is not imported")
                shutil.rmtree(src)
                continue
            verdict = import_job(src, dest, os.path.join(run, ".dispatch", "rejected", f"{block.name}-{a}-{k}"),
                                 tag, {**where, "block": block.name, "failed_tries_on": list(failed_on)})
            if verdict is not None:
                jobs.record(run, block.scenario, k, block.repeat,
                            "ok" if verdict == "ok" else f"failed:{verdict}")
        shutil.rmtree(adir, ignore_errors=True)
    return len(block.todo(run))


# ---------------------------------------------------------------------------
# The whole of it

# remote-block.sh's first line, as GNU parallel passes it on, tagged with
# the block: every try of a block says where it runs, even one whose host
# then dies (the joblog keeps only a block's last try).
TRY_LINE = re.compile(r"(b\d+)\tremote-block\.sh: \[\S+ \1\] try \S+ starts \(sshlogin (.*)\)")


def run_parallel(argv, cwd, names):
    """Run GNU parallel in cwd, every line of its output (each try's,
    tagged with its block) passed on to stderr as it comes; {block name:
    [host of each try that started, in order]}. names: sshlogin -> host."""
    tries = {}
    with subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace") as p:
        for line in p.stdout:
            sys.stderr.write(line)
            sys.stderr.flush()
            m = TRY_LINE.fullmatch(line.rstrip("\n"))
            if m:
                tries.setdefault(m.group(1), []).append(names.get(m.group(2), m.group(2)))
    return tries


def failed_tries(tries, last):
    """The hosts of a block's tries that failed in one round of GNU
    parallel: every try but the last (parallel tries again only after a
    failure), and the last too when the joblog says it failed. tries: its
    hosts in order; last: its joblog entry (host, exitval, signal) or None."""
    failed = list(tries[:-1])
    if tries and last is not None and (last[1] != 0 or last[2] != 0):
        failed.append(tries[-1])
    return failed


def parallel_argv(slf, joblog, names):
    return ["parallel", "--will-cite", "--sshloginfile", slf, "--joblog", joblog,
            "--resume-failed", "--retries", str(RETRIES), "--wd", "...",
            "--transferfile", "{}", "--return", "{}/out", "--cleanup",
            "--tagstring", "{}", "--line-buffer", "sh", "{}/run.sh", "{}", ":::"] + names


def check(hosts_file):
    """Refused unless GNU parallel is here and hosts_file reads."""
    hosts = read_hosts(hosts_file)
    if shutil.which("parallel") is None:
        raise Refused("GNU parallel is missing: bench/deps.sh hosts (or apt-get install parallel)")
    return hosts


def ready_hosts(hosts, inputs, memory):
    """The hosts that qualify for guests of memory bytes and have been
    sent inputs (the others named and left out); [] if none can."""
    need = {"memory": memory, "disk": inputs.disk_bytes(), "qemu": local_qemu(),
            "accel": os.environ.get("ACCEL", "auto")}
    good = qualify(hosts, need)
    shipped = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(8, len(good)))) as ex:
        whys = list(ex.map(lambda h: ship(h, inputs), good))
    for h, why in zip(good, whys):
        if why:
            log(f"host {h.name} left out: {why}")
        else:
            shipped.append(h)
    if not shipped:
        log("no host can run the jobs")
    return shipped


def rounds(run, shipped, all_blocks, write, collect_block):
    """GNU parallel over the shipped hosts, ROUNDS times at most: each
    round writes every block that has work left (write(bdir, block, todo))
    and runs them; after it, names the failed tries and imports what came
    back (collect_block(bdir, block, names, failed_on): the block's jobs
    still to do); a block that exited 0 but left work is marked failed in
    the joblog for the next round. Everything lives under run/.dispatch,
    the joblog is run/hosts.joblog."""
    names = {h.login(): h.name for h in shipped}
    ddir = os.path.join(run, ".dispatch")
    bdir = os.path.join(ddir, "blocks")
    os.makedirs(bdir, exist_ok=True)
    slf = os.path.join(ddir, "sshloginfile")
    jobs.write_atomic(slf, "".join(f"{h.slots}/{h.login()}\n" for h in shipped))
    jobs.write_json(os.path.join(ddir, "hosts.json"), {"hosts": [
        {"name": h.name, "sshlogin": h.login(), "slots": h.slots, "remote_dir": h.remote_dir,
         **{k: h.info.get(k, "") for k in ("hostname", "kernel", "cpus", "qemu", "kvm")}}
        for h in shipped]})
    joblog = os.path.join(run, "hosts.joblog")
    total = sum(len(b.kernels) for b in all_blocks)
    for rnd in range(1, ROUNDS + 1):
        todo_jobs = 0
        for b in all_blocks:
            todo = b.todo(run)
            todo_jobs += len(todo)
            write(os.path.join(bdir, b.name), b, todo)
        if todo_jobs == 0:
            break
        slots = sum(h.slots for h in shipped)
        log(f"round {rnd}: {todo_jobs} of {total} jobs in {len(all_blocks)} blocks on "
            f"{len(shipped)} host(s), {slots} guest(s) at a time; joblog {joblog}")
        tries = run_parallel(parallel_argv(slf, joblog, [b.name for b in all_blocks]),
                             bdir, names)
        log_now = read_joblog(joblog)
        incomplete = set()
        for b in all_blocks:
            failed = failed_tries(tries.get(b.name, []), log_now.get(b.seq))
            if failed:
                log(f"block {b.name} ({b.desc}): "
                    + "; ".join(f"a try on {h} failed" for h in failed)
                    + f" (tried on {', '.join(tries[b.name])})")
            left = collect_block(os.path.join(bdir, b.name), b, names, failed)
            if left and log_now.get(b.seq, ("", 1, 0))[1] == 0:
                incomplete.add(b.seq)
        mark_failed(joblog, incomplete, "its results came back incomplete or not at all")
        if not incomplete:
            break


def dispatch(run, plan, hosts, rootfs, kout):
    """Run plan's jobs in directory run on hosts (check()'s list); 0 if
    every job is ok."""
    run_id = os.path.basename(run)
    variants = sorted({jobs.split_kernel(k)[0] for k in plan.kernels})
    inputs = Inputs(jobs.SUITE_ROOT, rootfs, kout, variants)
    memory = max(plan.scenarios[s].bytes("memory") for s in plan.scenarios)
    shipped = ready_hosts(hosts, inputs, memory)
    if not shipped:
        return 1
    all_blocks = blocks(run_id, plan)
    total = sum(len(b.kernels) for b in all_blocks)
    start = time.time()
    rounds(run, shipped, all_blocks,
           lambda bdir, b, todo: write_block(bdir, b, run_id, plan.profile, inputs, todo),
           lambda bdir, b, names, failed: collect(run, run_id, bdir, b, names, failed))
    ok = total - sum(len(b.todo(run)) for b in all_blocks)
    log(f"run {run_id} on {len(shipped)} host(s): {ok} of {total} jobs ok, "
        f"in {int(time.time() - start) // 60} min")
    return 0 if ok == total else 1


# ---------------------------------------------------------------------------
# Prepared guest jobs: make peers and make regress

class GuestBlock:
    """Prepared guest jobs (bench/lib.sh's guest_job queued them) that run
    on one host: those of one block key (a seed check, the selftests)."""

    def __init__(self, seq, key, entries):
        self.seq, self.key, self.entries = seq, key, entries
        self.name = f"b{seq:04d}"
        self.desc = key
        self.kernels = [e[0] for e in entries]

    def todo(self, _run=None):
        """Its entries (id, kernel, dest) whose job has not come back (or
        came back failed by its host)."""
        return [e for e in self.entries if not _guest_done(e[2])]


def read_queue(queue):
    """The queue's jobs as GuestBlocks, one per key in the order keys first
    appear; refused with the line for a bad one."""
    path = os.path.join(queue, "jobs.tsv")
    by_key = {}
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise Refused(f"{path}: {e.strerror}") from None
    for n, line in enumerate(lines, 1):
        fields = line.split("\t")
        if len(fields) != 4 or not re.fullmatch(r"j\d+", fields[0]) or \
                not os.path.isfile(os.path.join(queue, "jobs", fields[0], "job.conf")):
            raise Refused(f"{path}:{n}: not 'ID<TAB>KERNEL<TAB>DEST<TAB>KEY' of a queued job")
        by_key.setdefault(fields[3], []).append(tuple(fields[:3]))
    return [GuestBlock(i, k, e) for i, (k, e) in enumerate(by_key.items(), 1)]


def write_guest_block(bdir, queue, block, inputs, todo):
    """The block's directory: block.env (KIND=guest), jobs.tsv (id,
    kernel), jobs/ID (its job file and files) for the jobs in todo."""
    if os.path.isdir(os.path.join(bdir, "jobs")):
        shutil.rmtree(os.path.join(bdir, "jobs"))
    os.makedirs(bdir, exist_ok=True)
    for jid, _, _ in todo:
        shutil.copytree(os.path.join(queue, "jobs", jid), os.path.join(bdir, "jobs", jid))
    write_block_env(bdir, block, inputs, [k for _, k, _ in todo], KIND="guest", RUN="-", PROFILE="-")
    jobs.write_atomic(os.path.join(bdir, "jobs.tsv"), "".join(f"{j}\t{k}\n" for j, k, _ in todo))
    jobs.write_atomic(os.path.join(bdir, "run.sh"), RUN_SH)


# What a guest job leaves when its host failed it, not the job: a retry
# elsewhere may replace it.
HOST_FAILURES = ("qemu-error",)


def _guest_done(dest):
    """Whether a prepared guest job has its result: a verdict, other than
    one that says its host failed it."""
    data, _ = jobs.read_host_json(os.path.join(dest, "result.json"))
    return data is not None and data.get("result") not in HOST_FAILURES


def collect_guest(queue, bdir, block, names, failed_on=()):
    """Move each job that came back whole to its destination, with the
    host in its meta.json; set aside one that did not. The number of the
    block's jobs still to do."""
    dest_of = {j: (k, d) for j, k, d in block.entries}
    for a, adir, host, where in attempts(bdir, names):
        gdir = os.path.join(adir, "guest")
        for jid in sorted(os.listdir(gdir)) if os.path.isdir(gdir) else []:
            if jid not in dest_of:
                continue
            kernel, dest = dest_of[jid]
            tag = f"[{kernel} {block.key}] from {host}"
            if _guest_done(dest):
                log(f"{tag}: a result is here already, this one is not imported")
                continue
            import_job(os.path.join(gdir, jid), dest,
                       os.path.join(queue, "rejected", f"{block.name}-{a}-{jid}"), tag,
                       {**where, "block": block.name, "failed_tries_on": list(failed_on)})
        shutil.rmtree(adir, ignore_errors=True)
    return len(block.todo())


def dispatch_guest_jobs(queue, hosts_file, rootfs, kout):
    """Run the queue's prepared guest jobs on the hosts of hosts_file, each
    block on one host; 0 if every job came back (whatever its verdict:
    that is the caller's table's)."""
    hosts = check(hosts_file)
    all_blocks = read_queue(queue)
    entries = [e for b in all_blocks for e in b.entries]
    memory = 0
    for jid, kernel, _ in entries:
        job, _, _ = jobs.job_for_kernel(kernel, os.path.join(queue, "jobs", jid, "job.conf"))
        job.check()
        memory = max(memory, job.bytes("memory"))
    variants = sorted({jobs.split_kernel(k)[0] for _, k, _ in entries})
    inputs = Inputs(jobs.SUITE_ROOT, rootfs, kout, variants)
    shipped = ready_hosts(hosts, inputs, memory)
    if not shipped:
        return 1
    start = time.time()
    rounds(queue, shipped, all_blocks,
           lambda bdir, b, todo: write_guest_block(bdir, queue, b, inputs, todo),
           lambda bdir, b, names, failed: collect_guest(queue, bdir, b, names, failed))
    left = sum(len(b.todo()) for b in all_blocks)
    log(f"{len(entries) - left} of {len(entries)} guest jobs came back from "
        f"{len(shipped)} host(s), in {int(time.time() - start) // 60} min")
    return 0 if left == 0 else 1


USAGE = """usage: hosts.py guest-jobs QUEUE HOSTS_FILE
  run the guest jobs bench/lib.sh's guest_job queued in QUEUE on the hosts
  of HOSTS_FILE (make peers HOSTS=..., make regress HOSTS=...)"""


def main(argv):
    global PROG
    PROG = "hosts.py"
    if len(argv) != 3 or argv[0] != "guest-jobs":
        print(USAGE, file=sys.stderr)
        return 2
    build = os.environ.get("BUILD_DIR") or os.path.join(jobs.SUITE_ROOT, "build")
    rootfs = os.environ.get("ROOTFS") or os.path.join(build, "rootfs", "rootfs.ext4")
    kout = os.environ.get("KOUT") or os.path.join(build, "kernels")
    try:
        return dispatch_guest_jobs(argv[1], argv[2], rootfs, kout)
    except Refused as e:
        for m in e.messages:
            log(m)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
