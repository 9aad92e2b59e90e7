"""What each kernel variant's formula predicts: the fraction of a cgroup's
LRU that one reclaim pass scans, given its usage and effective protection.

The formulas are those of get_scan_count() in each variant (see the README's
table and ../shared/DESIGN.md section 1). Sizes may be in any one unit. The
fraction ignores the SWAP_CLUSTER_MAX (32 pages) floor, which is nothing next
to the LRU sizes the scenarios use.

A cgroup below its effective memory.min is never scanned; one below its
effective memory.low is skipped in the first pass (every variant), and only
the low-reclaim pass (direct and limit reclaim when the first pass reclaimed
too little; never kswapd) looks at it.
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
        if low_reclaim:
            if variant == "v2-9de7ca" and elow > emin:
                return _clip((usage - emin) / (elow - emin))
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
    reclaims without get_scan_count()'s scaling, so a cliff."""
    if "@" in kernel:
        base, arm = kernel.split("@", 1)
        return "control" if arm == "mglru" and base in VARIANTS else None
    return kernel if kernel in VARIANTS else None
