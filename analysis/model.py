"""What each kernel variant's formula predicts: the fraction of a cgroup's
LRU that one reclaim pass scans, given its usage and effective protection.

The formulas are those of get_scan_count() in each variant (docs/kernels.md
has the table of variants). Sizes may be in any one unit. The
fraction ignores the SWAP_CLUSTER_MAX (32 pages) floor, which is nothing next
to the LRU sizes the scenarios use.

A cgroup below its effective memory.min is never scanned; one below its
effective memory.low is skipped in the first pass (every variant), and only
the low-reclaim pass looks at it. That pass (do_try_to_free_pages() running
the priority loop again with memcg_low_reclaim set) comes only when a whole
priority loop reclaimed nothing and some cgroup was skipped for its low
protection (on 6.1, or had its scanning scaled by it); direct reclaim,
limit reclaim and memory.reclaim have it, kswapd never.
"""

import functools
import os
import sys

# The formulas, by the name patches/variants gives them in a variant's
# model= word, and how legends call them.
FORMULAS = ("cliff", "9783aa", "9de7ca", "1bc63f", "6.1")
LABELS = {
    "cliff": "cliff (control)",
    "9783aa": "9783aa9917f8",
    "9de7ca": "9de7ca46ad26",
    "1bc63f": "1bc63fb1272b",
    "6.1": "6.1 (patched)",
}

SUITE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SUITE_ROOT, "bench"))
import jobs  # noqa: E402  (the reader of bench/arms)


def read_variant_models(files=None):
    """{variant: {"": formula or None, ARM: formula}} from patches/variants
    and variants.local (the files kernel.sh reads: a name, key=value words,
    a description). model=F is the variant's formula; model@ARM=F its
    formula under arm ARM, where it differs from what bench/arms says (a
    variant that changes how MGLRU reclaims: model@mglru=6.1). A variant
    without a model= word has no formula (a kernel brought by the user); an
    unknown formula is an error naming the file and line."""
    if files is None:
        files = (os.path.join(SUITE_ROOT, "patches", "variants"),
                 os.environ.get("VARIANTS_LOCAL", os.path.join(SUITE_ROOT, "variants.local")))
    variants = {}
    for path in files:
        try:
            with open(path) as fh:
                lines = fh.read().splitlines()
        except FileNotFoundError:
            continue
        for n, line in enumerate(lines, 1):
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            models = {"": None}
            for w in words[1:]:
                if "=" not in w:
                    break
                key, _, value = w.partition("=")
                name, at, arm = key.partition("@")
                if name != "model":
                    continue
                if value not in FORMULAS:
                    raise ValueError(f"{path}:{n}: {key}={value}: not a formula "
                                     f"(one of: {', '.join(FORMULAS)})")
                if at and not arm:
                    raise ValueError(f"{path}:{n}: {key}: say model@ARM=F")
                models[arm] = value
            variants[words[0]] = models
    return variants


def read_variants(files=None):
    """{variant: formula or None}: each variant's own formula (model=)."""
    return {v: m[""] for v, m in read_variant_models(files).items()}


@functools.lru_cache(maxsize=None)
def variant_models():
    """The suite's variants and their formulas by arm, read once."""
    return read_variant_models()


@functools.lru_cache(maxsize=None)
def variants():
    """The suite's variants and their own formulas, read once."""
    return {v: m[""] for v, m in variant_models().items()}


def read_arms(path=None):
    """{arm: formula, or "variant" for the variant's own} from bench/arms
    (read by bench/jobs.py: a name, the job keys it sets, model=F, a
    description)."""
    arms = {}
    for name, arm in jobs.read_arms(path).items():
        if arm.model != "variant" and arm.model not in FORMULAS:
            raise ValueError(f"{arm.where}: arm {name}: model={arm.model}: say variant or one of: "
                             f"{', '.join(FORMULAS)}")
        arms[name] = arm.model
    return arms


@functools.lru_cache(maxsize=None)
def arms():
    """The suite's arms and their models, read once."""
    return read_arms()


def _clip(x):
    return min(max(x, 0.0), 1.0)


def scan_fraction(formula, usage, emin=0.0, elow=0.0, low_reclaim=False):
    """scan / L for a cgroup of this usage and effective protection, in the
    first pass or, with low_reclaim, the low-reclaim pass.

    formula: one of FORMULAS; formula_of() gives a kernel's.
    """
    if formula not in FORMULAS:
        raise ValueError(f"no formula '{formula}' (one of: {', '.join(FORMULAS)})")
    if usage < 0 or emin < 0 or elow < 0:
        raise ValueError("sizes cannot be negative")
    # Which cgroups reclaim visits is the same in every variant.
    if usage <= emin:
        return 0.0
    if usage <= elow and not low_reclaim:
        return 0.0
    if formula == "cliff":
        return 1.0
    if formula in ("9783aa", "9de7ca"):
        protection = max(emin, elow)
        if protection == 0:
            return 1.0
        if low_reclaim and formula == "9de7ca":
            # 9de7ca46ad26 scales by the use of the range between min and
            # low; with low <= min it takes its other branch, the overage,
            # as in the first pass (not v1's usage / protection).
            if elow > emin:
                return _clip((usage - emin) / (elow - emin))
            return _clip(usage / protection - 1)
        if low_reclaim:
            return _clip(usage / protection)
        return _clip(usage / protection - 1)
    # 1bc63f and 6.1: the same formula; 6.1 divides by usage+1
    # (pages), which no fraction here can show.
    if low_reclaim:
        protection = emin
    else:
        protection = max(emin, elow)
    if protection == 0:
        return 1.0
    return _clip(1 - protection / max(usage, protection))


def formula_of(kernel, table=None, arm_table=None, overrides=None):
    """The formula a kernel (arm) of a run follows, or None when the suite
    has no model for it (a variant without model=, e.g. a kernel brought by
    the user, or an unknown arm). An arm's model= in bench/arms says which:
    K@mglru the cliff (MGLRU reclaims without get_scan_count()'s scaling);
    K@zswap and K@norecursive K's own (zswap changes where swapped pages
    go, not who is scanned; the scenarios protect the cgroup that holds the
    pages itself, so the mount option changes nothing there). A variant's
    model@ARM= in patches/variants comes before the arm's. table: {variant:
    formula}, arm_table: {arm: model}, overrides: {variant: {arm:
    formula}}, by default the suite's."""
    base, _, arm = kernel.partition("@")
    formula = (variants() if table is None else table).get(base)
    if formula is None:
        return None
    if not arm:
        return formula
    if overrides is None:
        overrides = variant_models() if table is None else {}
    own = overrides.get(base, {})
    if arm in own:
        return own[arm]
    model = (arms() if arm_table is None else arm_table).get(arm)
    return formula if model == "variant" else model


# The selftest's hierarchy (test_memcg_protection() in
# tools/testing/selftests/cgroup/test_memcontrol.c): A/B has protection 50M
# and is the top of the reclaim, so it keeps all of it; its children C, D,
# E, F ask for 75M, 25M, 0 and 500M and start with 50M, 50M, 50M and 0 of
# page cache. Sizes in MiB.
SELFTEST_PARENT = 50.0
SELFTEST_SETTINGS = (75.0, 25.0, 0.0, 500.0)
SELFTEST_USAGE = (50.0, 50.0, 50.0, 0.0)


def effective_protection(usage, settings, parent_effective, recursive):
    """6.1's effective_protection() for the children of one cgroup whose own
    effective protection is parent_effective: each child's share of it.
    recursive: the cgroup2 mount has memory_recursiveprot, which hands the
    part of the parent's protection the children do not claim to those that
    use more than they ask for, in proportion to that excess."""
    protected = [min(u, s) for u, s in zip(usage, settings)]
    siblings = sum(protected)
    if siblings > parent_effective:
        return [p * parent_effective / siblings for p in protected]
    ep = list(protected)
    parent_usage = sum(usage)
    if recursive and parent_effective > siblings and parent_usage > siblings:
        unclaimed = parent_effective - siblings
        for i, (u, p) in enumerate(zip(usage, protected)):
            if u > p:
                ep[i] += unclaimed * (u - p) / (parent_usage - siblings)
    return ep


def selftest_split(formula, recursive=False, alpha=0.1, cluster=32 * 4 / 1024,
                   epsilon=1e-7, limit=1000):
    """What the children of the selftest's A/B end with under a formula: the simulation of tools/testing/selftests/cgroup/
    memcg_protection.m (the origin of the test's 29M/21M), with the scan
    formula in place of 6.1's. Returns (C, D, E, F) in MiB.

    Each round every child has its effective protection worked out anew
    from the current usages and loses alpha (think 0.5^priority) of its
    usage times the fraction its formula scans, but at least a reclaim
    batch (cluster: 32 pages); the rounds end when nobody loses anything.
    Like the upstream model this is the first reclaim pass only (no
    low-reclaim pass, which reclaims below memory.low when nothing else is
    left), and it reclaims all children at once where the kernel goes one
    by one. The same for memory.min and memory.low: the first pass treats
    both alike."""
    usage = list(SELFTEST_USAGE)
    for _ in range(limit):
        prot = effective_protection(usage, SELFTEST_SETTINGS, SELFTEST_PARENT, recursive)
        loss = []
        for u, e in zip(usage, prot):
            # A cgroup at (or within epsilon of) its protection is skipped.
            r = 0.0 if u <= e + epsilon else alpha * u * scan_fraction(formula, u, elow=e)
            loss.append(max(r, cluster) if r > epsilon else 0.0)
        if not any(loss):
            break
        usage = [max(u - r, 0.0) for u, r in zip(usage, loss)]
    return tuple(usage)
