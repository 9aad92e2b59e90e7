#!/usr/bin/env bash
# The trace arm, booted: patched+trace (stock 6.1 plus the protection
# tracepoint) runs the quick low-passes scenario in QEMU; the guest records
# mm_vmscan_memcg_protection inside the measuring windows, and
# analysis/tracecheck.py finds events in both steps (the low-reclaim pass
# above usage, the first pass below it), none lost, every one matching 6.1's
# formula exactly, and the same events checked against another formula do
# not. Builds patched+trace if needed (about a minute on top of patched).
set -u
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/lib/tap.sh"

BENCH=$SUITE_ROOT/bench/bench.py
KERNEL=patched+trace

[ "$(id -u)" = 0 ] || skip_all "building the guest image needs root"
command -v qemu-system-x86_64 > /dev/null || skip_all "QEMU missing (make deps installs it)"

"$SUITE_ROOT/bench/kernel.sh" build "$KERNEL" >&2
ok $? "$KERNEL is built"
"$SUITE_ROOT/rootfs/build.sh" > /dev/null
ok $? "the guest image is built"

export RESULTS
RESULTS=$(mktemp -d)
trap 'rm -rf "$RESULTS"' EXIT
"$BENCH" run trace --profile quick --kernels "$KERNEL" --scenarios low-passes 2> "$RESULTS/err" > /dev/null
if ! ok $? "the quick run of low-passes on $KERNEL finished"; then
	diag_tail "$(cat "$RESULTS/err")"
fi
out=$RESULTS/trace/low-passes/$KERNEL/r1/guest/out
[ -s "$out/trace.log" ]
ok $? "the guest wrote trace.log"
like "$(cat "$out/trace-cgroups.tsv" 2> /dev/null)" $'[0-9]+\texp.slice/exp-workload.slice/workload.service' \
	"trace-cgroups.tsv names the workload's cgroup by inode"
is "$(awk '{ n += $4 } END { print n + 0 }' "$out/trace-stats" 2> /dev/null)" 0 "no event was lost"

cd "$SUITE_ROOT" || exit 1
report=$(analysis/tracecheck.py "$RESULTS/trace" 2>&1)
status=$?
is "$status" 0 "tracecheck.py: every event matches 6.1's formula"
[ "$status" = 0 ] || diag_tail "$report"
# counts STEP: "events low-reclaim-events" of step STEP of the job.
counts() {
	/usr/bin/python3 - "$RESULTS/trace" "$1" <<'PY'
import sys
sys.path.insert(0, "analysis")
import rundata, tracecheck
c = tracecheck.check_run(rundata.Run(sys.argv[1]))[0]
row = next(r for r in c.steps() if r[0] == sys.argv[2])
print(row[2], row[3], len(c.events), c.exact)
PY
}
read -r s1_n s1_low all exact <<< "$(counts s1)"
read -r s2_n s2_low _ _ <<< "$(counts s2)"
[ "${all:-0}" -gt 0 ] && [ "$all" = "$exact" ]
ok $? "events arrived and all match (${exact:-?} of ${all:-?})"
[ "${s1_low:-0}" -gt 0 ]
ok $? "above usage, the workload is reached by the low-reclaim pass only (${s1_low:-?} of ${s1_n:-?} events)"
[ "${s1_n:-0}" = "${s1_low:-x}" ]
ok $? "and by no first pass"
[ "${s2_n:-0}" -gt 0 ] && [ "${s2_low:-1}" = 0 ]
ok $? "below usage, the first pass reaches it and no low-reclaim pass runs (${s2_n:-?} events, ${s2_low:-?} in that pass)"
# The same events against the wrong formula: the check can fail.
wrong=$(/usr/bin/python3 - "$RESULTS/trace" <<'PY'
import sys
sys.path.insert(0, "analysis")
import rundata, tracecheck
c = tracecheck.check_run(rundata.Run(sys.argv[1]))[0]
print(sum(tracecheck.kernel_scan("1bc63f", e.size, e.min, e.low, e.usage, e.low_reclaim) != e.scan
          for e in c.events))
PY
)
[ "${wrong:-0}" -gt 0 ]
ok $? "checked against 1bc63f's formula instead, ${wrong:-no} events do not match"

/usr/bin/python3 analysis/report.py "$RESULTS/trace" > /dev/null 2> "$RESULTS/report.err"
ok $? "the report renders"
like "$(cat "$RESULTS/trace/report.md" 2> /dev/null)" "## Formula check \(protection tracepoint\)" \
	"the report has the formula check"
like "$(cat "$RESULTS/trace/report.md" 2> /dev/null)" "every event matches its formula exactly" \
	"and says every event matched"

done_testing
