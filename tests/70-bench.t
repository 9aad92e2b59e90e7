#!/usr/bin/env bash
# The A/B experiment: scenario files refused before anything boots when they
# are wrong, then a quick end-to-end run (two steps, control and patched,
# under QEMU): the table exists, the workload is not scanned while its
# protection exceeds its usage, and is scanned once protection is gone;
# then a quick targeted-reclaim run on both: the same, and at half
# protection control's scan fraction is the cliff's 1 and patched's lower.
set -u
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/lib/tap.sh"

BENCH=$SUITE_ROOT/bench/bench.py
FIX=$SUITE_ROOT/tests/fixtures/scenarios

# Bad scenarios, checked without booting.
# scenario_refused NAME WHAT [PATTERN SAYS]...: scenario NAME is refused
# before anything boots (tap.sh's refused), and its message matches each
# PATTERN.
scenario_refused() {
	local name=$1 what=$2
	shift 2
	refused "$what" env SCENARIO_DIR="$FIX" "$BENCH" check "$name"
	while [ $# -ge 2 ]; do
		like "$REFUSED_OUT" "$1" "$2"
		shift 2
	done
}
scenario_refused bad-keys "a scenario with bad keys and values is refused" \
	"bad-keys.conf:3: unknown key 'colour'" "the unknown key is named with file and line" \
	"bad-keys.conf:4: knob: 'medium' is not low or min" "the bad knob is named" \
	"bad-keys.conf:5: steps: step '12Q' is neither a size" "the bad step is named"
scenario_refused not-down "steps that do not go down are refused" \
	"not-down.conf:3: steps: not going down \(90% after a smaller step\)" "and the step is named, with file and line"
scenario_refused too-big "a workload and steps larger than the guest are refused" \
	"too-big.conf:2: workload: ws --size 3G asks for more than the guest's 1G" "the workload is named, with file and line" \
	"too-big.conf:4: steps: 1500M exceeds the guest's memory" "the step is named, with file and line"
scenario_refused mixed "steps mixing sizes and percentages are refused" \
	"mixed.conf:3: steps: mixes percentages and sizes" "with file and line"
scenario_refused no-workload "a scenario without a workload is refused" \
	"workload: missing" "and says so"
scenario_refused fixed-knob "a scenario fixing the knob it steps is refused" \
	"fixed-knob.conf:5: workload.min: memory.min is the knob this scenario steps" "and says which, with file and line" \
	"fixed-knob.conf:6: peer.low: set, but there is no peer workload" \
	"as is a peer's protection without a peer"
scenario_refused targeted-bad "a targeted-reclaim scenario with everything wrong is refused" \
	"targeted-bad.conf:4: reclaim: 2G per request is not less than the guest's memory" \
	"an amount larger than the guest, with file and line" \
	"targeted-bad.conf: reclaim.every: missing" "a missing cadence" \
	"targeted-bad.conf: competitor: missing" "a missing competitor" \
	"targeted-bad.conf:5: peer: only for global-pressure scenarios" "a global-pressure-only key" \
	"targeted-bad.conf:6: oom_ok: only for global-pressure scenarios" "and another"
scenario_refused targeted-half "a cadence without an amount is refused" \
	"targeted-half.conf: reclaim: missing" "saying so"
scenario_refused targeted-zero "a cadence of 0 s is refused" \
	"targeted-zero.conf:6: reclaim.every: '0' is not a number of seconds above 0" "with file and line"
scenario_refused targeted-nothing "an amount of 0 is refused" \
	"targeted-nothing.conf:5: reclaim: must be more than 0" "with file and line"
scenario_refused no-such-scenario "an unknown scenario is refused" \
	"known scenarios: bad-keys" "listing the known ones"
for s in "$SUITE_ROOT"/bench/scenarios/*.conf; do
	s=$(basename "$s" .conf)
	runs "the shipped scenario $s is valid" "$BENCH" check "$s"
	runs "the shipped scenario $s is valid in the quick profile" \
		"$BENCH" check "$s" --profile quick
done
refused "an unknown kernel is refused before anything boots" "$BENCH" run smoke --kernels no-such-kernel
refused "an unknown arm is refused" "$BENCH" run smoke --kernels control@lru
like "$REFUSED_OUT" "kernel 'control@lru': an arm is one of: K@mglru K@zswap K@norecursive" "and the known arms are named"

# The quick end-to-end run.
[ "$(id -u)" = 0 ] || { note "skipping the real run: needs root"; done_testing; exit; }
export RESULTS
RESULTS=$(mktemp -d)
trap 'rm -rf "$RESULTS"' EXIT
"$SUITE_ROOT/bench/kernel.sh" build control patched >&2 && "$SUITE_ROOT/rootfs/build.sh" > /dev/null
ok $? "kernels and image are built"
KERNELS="control patched patched@mglru"
out=$("$BENCH" run smoke --profile quick --kernels "$KERNELS" --scenarios low-steps 2> "$RESULTS/err")
if ! ok $? "the quick run of low-steps on $KERNELS finished"; then
	tail -n 30 "$RESULTS/err" >&2
	for f in "$RESULTS"/smoke/low-steps/*/r1/result.json; do
		grep -q '"result": "ok"' "$f" && continue
		echo "--- $f" >&2
		cat "$f" >&2
		echo "--- the end of its console log" >&2
		tail -n 40 "$(dirname "$f")/console.log" >&2
	done
fi
printf '%s\n' "$out" | sed 's/^/# /'
like "$out" "^\| memory.low \|" "it printed the per-step table"
like "$(cat "$RESULTS/err")" "guest.sh: \[patched@mglru\] ok in" "the progress names the arm, not just its kernel"
is "$(jq -r '.jobs | length' "$RESULTS/smoke/manifest.json" 2> /dev/null)" 3 "the manifest lists the three jobs"
is "$(jq -r '.jobs[] | select(.kernel == "patched") | [.scenario, .repeat, .status, .dir] | join(" ")' \
	"$RESULTS/smoke/manifest.json" 2> /dev/null)" "low-steps 1 ok low-steps/patched/r1" "with their status and directory"
is "$(jq -r .schema "$RESULTS/smoke/manifest.json" 2> /dev/null)" 1 "and its schema"
for k in $KERNELS; do
	dir=$RESULTS/smoke/low-steps/$k/r1/guest/out
	[ -s "$dir/samples.csv" ] && [ -s "$dir/steps.tsv" ]
	ok $? "$k: samples and steps came back"
done
grep -q '^[0-9.]*,s2,workload,app,pages_touched,[1-9]' "$RESULTS/smoke/low-steps/patched/r1/guest/out/samples.csv"
ok $? "the workload's own counters (--stats) are in the samples, labelled by step"
like "$out" "^\| memory.low \| value \|" "the table printed at the end has the steps"
like "$out" "report.py: wrote .*/smoke/report.md" "and the report was written"
[ -s "$RESULTS/smoke/report.html" ] && [ -s "$RESULTS/smoke/plots/low-steps-pgscan.png" ]
ok $? "with its HTML and plots"
lru() {
	jq -r .lru_gen_enabled "$RESULTS/smoke/low-steps/$1/r1/guest/out/guest-meta.json"
}
is "$(lru patched)" 0x0000 "MGLRU is off in the guest of the patched arm"
like "$(lru patched@mglru)" "^0x0*[1-9a-f]" "and on in the guest of the patched@mglru arm ($(lru patched@mglru))"
like "$(jq -r .infrastructure_memory_min "$RESULTS/smoke/low-steps/patched/r1/guest/out/guest-meta.json")" \
	"bench.slice=100663296" "the agent and the collector are kept out of reclaim"

# rate KERNEL STEP: the workload's mean pgscan/s at STEP in the table, by
# column name, rounded to an integer; empty when the table has no such cell
# or the cell holds no number.
rate() {
	printf '%s\n' "$out" | awk -F'|' -v k="$1" -v step="$2" '
		$2 ~ /memory.low/ { for (i = 2; i < NF; i++) { c = $i; gsub(/ /, "", c); col[c] = i } }
		{ s = $2; gsub(/ /, "", s) }
		s == step && (k in col) { v = $(col[k]); sub(/(±|\().*/, "", v); gsub(/ /, "", v)
			if (v ~ /^[0-9]+(\.[0-9]+)?$/) printf "%d\n", v + 0.5; exit }'
}
p_prot=$(rate patched 116%)
c_prot=$(rate control 116%)
p_open=$(rate patched 0%)
c_open=$(rate control 0%)
# An empty rate (the table could not be read) fails both checks.
[ -n "$p_prot" ] && [ -n "$c_prot" ] && [ "$p_prot" -le 10 ] && [ "$c_prot" -le 10 ]
ok $? "protection above usage: no scanning (patched ${p_prot:-?}/s, control ${c_prot:-?}/s)"
[ -n "$p_open" ] && [ -n "$c_open" ] && [ "$p_open" -ge 100 ] && [ "$c_open" -ge 100 ]
ok $? "no protection: the workload is scanned (patched ${p_open:-?}/s, control ${c_open:-?}/s)"
# On a failure, show the table and the window samples where prove shows them.
if [ "$TAP_FAILED" -gt 0 ]; then
	printf '%s\n' "$out" >&2
	for k in $KERNELS; do
		echo "$k: workload.slice pgscan by sample:" >&2
		awk -F, '$3 == "workload.slice" && $5 == "pgscan" { print "  " $1, $2, $6 }' \
			"$RESULTS/smoke/low-steps/$k/r1/guest/out/samples.csv" >&2
	done
fi
out=$("$BENCH" run smoke --profile quick --kernels "$KERNELS" --scenarios low-steps 2>&1)
like "$out" "done already, kept" "running the same run id again keeps the finished jobs"

# Targeted reclaim, quick: protected (116%), half (50%), unprotected (0%).
out=$("$BENCH" run targeted --profile quick --kernels "control patched" --scenarios low-reclaim 2> "$RESULTS/err2")
if ! ok $? "the quick run of low-reclaim on control and patched finished"; then
	diag_tail "$(cat "$RESULTS/err2")"
fi
for k in control patched; do
	like "$(cat "$RESULTS/targeted/low-reclaim/$k/r1/guest/out/cgroups.tsv" 2> /dev/null)" \
		"workload	exp.slice/exp-workload.slice" "$k: the workload ran under exp.slice"
	like "$(awk -F, '$3 == "reclaimer" && $5 == "requests" { v = $6 } END { print v }' \
		"$RESULTS/targeted/low-reclaim/$k/r1/guest/out/samples.csv" 2> /dev/null)" "^[1-9][0-9]+$" \
		"$k: the reclaimer's requests are in the samples"
done
# fraction KERNEL STEP: the scan fraction (x 1000, an integer) from the
# analysis, or nothing.
fraction() {
	/usr/bin/python3 - "$RESULTS/targeted" "$1" "$2" <<'PY'
import sys
sys.path.insert(0, "analysis")
import analyse, rundata, stats
sr = analyse.analyse(rundata.Run(sys.argv[1]))[0]
n = next(n for n, st in sr.steps.items() if st.requested == sys.argv[3])
v = stats.mean(sr.values(sys.argv[2], n, "scan_fraction"))
print("" if v is None else round(1000 * v))
PY
}
cd "$SUITE_ROOT" || exit 1
c_prot=$(fraction control 116%) p_prot=$(fraction patched 116%)
c_half=$(fraction control 50%) p_half=$(fraction patched 50%)
c_open=$(fraction control 0%) p_open=$(fraction patched 0%)
[ -n "$c_prot" ] && [ -n "$p_prot" ] && [ "$c_prot" -le 10 ] && [ "$p_prot" -le 10 ]
ok $? "targeted, protection above usage: no scanning (fraction x1000: control ${c_prot:-?}, patched ${p_prot:-?})"
[ -n "$c_open" ] && [ -n "$p_open" ] && [ "$c_open" -ge 800 ] && [ "$p_open" -ge 800 ]
ok $? "targeted, no protection: scanned like the competitor (control ${c_open:-?}, patched ${p_open:-?})"
[ -n "$c_half" ] && [ "$c_half" -ge 850 ] && [ "$c_half" -le 1150 ]
ok $? "targeted, half protected: control scans it all, the cliff (${c_half:-?})"
[ -n "$p_half" ] && [ -n "$c_half" ] && [ "$p_half" -lt $((c_half - 200)) ]
ok $? "targeted, half protected: patched scans less than control (${p_half:-?} against ${c_half:-?})"

done_testing
