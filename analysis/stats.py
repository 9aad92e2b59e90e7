"""Statistics across repeats, with the standard library only: mean, sample
standard deviation, Student-t 95% confidence interval, and Welch's unequal
variances t-test (two-sided), as mmtests' compare-kernels reports it.

The t distribution's CDF comes from the regularized incomplete beta
function, evaluated by its continued fraction (Lentz's method).
"""
import math


def mean(xs):
    return sum(xs) / len(xs) if xs else None


def sd(xs):
    """Sample standard deviation (n - 1); None below two values."""
    if len(xs) < 2:
        return None
    m = mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def _betacf(a, b, x):
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1 + aa * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1 + aa * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            break
    return h


def betainc(a, b, x):
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(lbeta + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1 - front * _betacf(b, a, 1 - x) / b


def t_sf2(t, df):
    """Two-sided p-value of a t statistic with df degrees of freedom."""
    if math.isinf(t):
        return 0.0
    return betainc(df / 2, 0.5, df / (df + t * t))


def t_quantile(p, df):
    """The t value below which a fraction p (> 0.5) of the distribution lies."""
    target = 2 * (1 - p)  # two-sided tail
    lo, hi = 0.0, 1.0
    while t_sf2(hi, df) > target:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_sf2(mid, df) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def ci95(xs):
    """Half-width of the 95% confidence interval of the mean; None below two
    values."""
    s = sd(xs)
    if s is None:
        return None
    return t_quantile(0.975, len(xs) - 1) * s / math.sqrt(len(xs))


def welch(a, b):
    """(t, df, two-sided p) of Welch's t-test between samples a and b; None
    when either has fewer than two values. Two samples without spread give
    p = 1 when their means are equal and 0 when not."""
    if len(a) < 2 or len(b) < 2:
        return None
    ma, mb = mean(a), mean(b)
    va, vb = sd(a) ** 2 / len(a), sd(b) ** 2 / len(b)
    if va + vb == 0:
        return (0.0 if ma == mb else math.inf, None, 1.0 if ma == mb else 0.0)
    t = (ma - mb) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return (t, df, t_sf2(t, df))


def paired(a, b):
    """(t, df, two-sided p) of the paired t-test of a against b (a[i] and
    b[i] measured together, e.g. on one host); None below two pairs. Pairs
    that all differ alike give p = 1 when the difference is 0, else 0."""
    if len(a) != len(b):
        raise ValueError(f"paired samples of different sizes ({len(a)} and {len(b)})")
    if len(a) < 2:
        return None
    d = [x - y for x, y in zip(a, b)]
    m, s = mean(d), sd(d)
    if s == 0:
        return (0.0 if m == 0 else math.inf, len(d) - 1, 1.0 if m == 0 else 0.0)
    t = m / (s / math.sqrt(len(d)))
    return (t, len(d) - 1, t_sf2(abs(t), len(d) - 1))


def detectable(a, b, alpha=0.05, power=0.8):
    """The smallest difference of means a two-sided Welch test between
    samples of a's and b's size and spread finds at level alpha with the
    given power: (t[1 - alpha/2] + t[power]) * sqrt(sa^2/na + sb^2/nb),
    with Welch's degrees of freedom. None below two values a side; 0 when
    neither has any spread."""
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = sd(a) ** 2 / len(a), sd(b) ** 2 / len(b)
    if va + vb == 0:
        return 0.0
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return (t_quantile(1 - alpha / 2, df) + t_quantile(power, df)) * math.sqrt(va + vb)


def repeats_for(diff, sd_a, sd_b, alpha=0.05, power=0.8, limit=1000):
    """Repeats per side that make a difference diff detectable (as
    detectable() computes it, with these spreads), or None beyond limit."""
    if diff <= 0:
        return None
    for n in range(2, limit + 1):
        v = (sd_a ** 2 + sd_b ** 2) / n
        if v == 0:
            return n
        df = v ** 2 / ((sd_a ** 2 / n) ** 2 / (n - 1) + (sd_b ** 2 / n) ** 2 / (n - 1))
        if (t_quantile(1 - alpha / 2, df) + t_quantile(power, df)) * math.sqrt(v) <= diff:
            return n
    return None


def summary(xs):
    """{n, mean, sd, ci95} of a list of numbers (None entries dropped)."""
    xs = [x for x in xs if x is not None]
    return {"n": len(xs), "mean": mean(xs), "sd": sd(xs), "ci95": ci95(xs)}


def text(s, scale=1, digits=0, unit=""):
    """A summary as the plain-text tables print it: "mean ± ci95 (n)", the
    numbers times scale with digits decimals and unit after them."""
    if not s["n"]:
        return "-"
    ci = f" ± {s['ci95'] * scale:.{digits}f}" if s["ci95"] is not None else ""
    return f"{s['mean'] * scale:.{digits}f}{ci}{unit} ({s['n']})"


def cv(s):
    """Coefficient of variation (sd / mean) of a summary, or None."""
    if s["n"] < 2 or s["sd"] is None or not s["mean"]:
        return None
    return s["sd"] / abs(s["mean"])


def print_table(header, rows, right=False):
    """Print a table as the command-line tools do: Markdown pipes, each
    column as wide as its widest cell, left-aligned (right=True: right)."""
    pad = str.rjust if right else str.ljust
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    print("| " + " | ".join(pad(h, w) for h, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(pad(c, w) for c, w in zip(r, widths)) + " |")
