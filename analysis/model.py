"""What each kernel variant's formula predicts: the fraction of a cgroup's
LRU that one reclaim pass scans, given its usage and effective protection.

The formulas are those of get_scan_count() in each variant (the README's
table of variants gives them). Sizes may be in any one unit. The
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

VARIANTS = ("control", "v1-9783aa", "v2-9de7ca", "v3-1bc63f", "patched")

# What each variant is, for legends.
LABELS = {
    "control": "cliff (control)",
    "v1-9783aa": "9783aa9917f8",
    "v2-9de7ca": "9de7ca46ad26",
    "v3-1bc63f": "1bc63fb1272b",
    "patched": "6.1 (patched)",
}


def _clip(x):
    return min(max(x, 0.0), 1.0)


def scan_fraction(variant, usage, emin=0.0, elow=0.0, low_reclaim=False):
    """scan / L for a cgroup of this usage and effective protection, in the
    first pass or, with low_reclaim, the low-reclaim pass.

    variant: one of VARIANTS (an arm such as "patched@mglru" is not a
    formula: MGLRU bypasses get_scan_count(), so callers map it to control).
    """
    if variant not in VARIANTS:
        raise ValueError(f"no model for variant '{variant}'")
    if usage < 0 or emin < 0 or elow < 0:
        raise ValueError("sizes cannot be negative")
    # Which cgroups reclaim visits is the same in every variant.
    if usage <= emin:
        return 0.0
    if usage <= elow and not low_reclaim:
        return 0.0
    if variant == "control":
        return 1.0
    if variant in ("v1-9783aa", "v2-9de7ca"):
        protection = max(emin, elow)
        if protection == 0:
            return 1.0
        if low_reclaim and variant == "v2-9de7ca":
            # 9de7ca46ad26 scales by the use of the range between min and
            # low; with low <= min it takes its other branch, the overage,
            # as in the first pass (not v1's usage / protection).
            if elow > emin:
                return _clip((usage - emin) / (elow - emin))
            return _clip(usage / protection - 1)
        if low_reclaim:
            return _clip(usage / protection)
        return _clip(usage / protection - 1)
    # v3-1bc63f and patched (6.1): the same formula; 6.1 divides by usage+1
    # (pages), which no fraction here can show.
    if low_reclaim:
        protection = emin
    else:
        protection = max(emin, elow)
    if protection == 0:
        return 1.0
    return _clip(1 - protection / max(usage, protection))


def variant_of(kernel):
    """The formula a kernel (arm) of a run follows, or None when the suite
    has no model for it (a kernel brought by the user). K@mglru: MGLRU
    reclaims without get_scan_count()'s scaling, so a cliff; K@zswap: K's
    own formula (zswap changes where swapped pages go, not who is scanned);
    K@norecursive: K's own formula (the scenarios protect the cgroup that
    holds the pages itself, so the mount option changes nothing there)."""
    base, _, arm = kernel.partition("@")
    if base not in VARIANTS:
        return None
    return {"": base, "mglru": "control", "zswap": base, "norecursive": base}.get(arm)


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


def selftest_split(variant, recursive=False, alpha=0.1, cluster=32 * 4 / 1024,
                   epsilon=1e-7, limit=1000):
    """What the children of the selftest's A/B end with under variant's
    formula: the simulation of tools/testing/selftests/cgroup/
    memcg_protection.m (the origin of the test's 29M/21M), with the scan
    formula of each variant in place of 6.1's. Returns (C, D, E, F) in MiB.

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
            r = 0.0 if u <= e + epsilon else alpha * u * scan_fraction(variant, u, elow=e)
            loss.append(max(r, cluster) if r > epsilon else 0.0)
        if not any(loss):
            break
        usage = [max(u - r, 0.0) for u, r in zip(usage, loss)]
    return tuple(usage)
