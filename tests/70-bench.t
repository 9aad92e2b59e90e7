#!/usr/bin/env bash
# The A/B experiment: scenario files refused before anything boots when they
# are wrong, then a quick end-to-end run (two steps, control and patched,
# under QEMU): the table exists, the workload is not scanned while its
# protection exceeds its usage, and is scanned once protection is gone.
set -u
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/lib/tap.sh"

BENCH=$SUITE_ROOT/bench/bench.sh
FIX=$SUITE_ROOT/tests/fixtures/scenarios

# Bad scenarios, checked without booting.
check() {
	SCENARIO_DIR=$FIX "$BENCH" check "$@" 2>&1
}
out=$(check bad-keys)
is "$?" 2 "a scenario with bad keys and values is refused"
like "$out" "bad-keys.conf:3: unknown key 'colour'" "the unknown key is named with file and line"
like "$out" "bad-keys.conf:4: knob: 'medium' is not low or min" "the bad knob is named"
like "$out" "bad-keys.conf:5: steps: step '12Q' is neither a size" "the bad step is named"
out=$(check not-down)
is "$?" 2 "steps that do not go down are refused"
like "$out" "not-down.conf: steps: not going down \(90% after a smaller step\)" "and the step is named"
out=$(check too-big)
is "$?" 2 "a workload and steps larger than the guest are refused"
like "$out" "too-big.conf: workload: ws --size 3G asks for more than the guest's 1G" "the workload is named"
like "$out" "too-big.conf: steps: 1500M exceeds the guest's memory" "the step is named"
out=$(check mixed)
is "$?" 2 "steps mixing sizes and percentages are refused"
out=$(check no-workload)
is "$?" 2 "a scenario without a workload is refused"
like "$out" "workload: missing" "and says so"
out=$(check no-such-scenario)
is "$?" 2 "an unknown scenario is refused"
like "$out" "known scenarios: bad-keys" "listing the known ones"
for s in "$SUITE_ROOT"/bench/scenarios/*.conf; do
	s=$(basename "$s" .conf)
	"$BENCH" check "$s" > /dev/null 2>&1
	ok $? "the shipped scenario $s is valid"
	"$BENCH" check "$s" --profile quick > /dev/null 2>&1
	ok $? "the shipped scenario $s is valid in the quick profile"
done
out=$("$BENCH" run smoke --kernels no-such-kernel 2>&1)
is "$?" 2 "an unknown kernel is refused before anything boots"

# The quick end-to-end run.
[ "$(id -u)" = 0 ] || { diag "skipping the real run: needs root"; done_testing; exit; }
export RESULTS
RESULTS=$(mktemp -d)
trap 'rm -rf "$RESULTS"' EXIT
"$SUITE_ROOT/bench/kernel.sh" build control patched >&2 && "$SUITE_ROOT/rootfs/build.sh" > /dev/null
ok $? "kernels and image are built"
out=$("$BENCH" run smoke --profile quick --kernels "control patched" --scenarios low-steps 2> "$RESULTS/err")
ok $? "the quick run of low-steps on control and patched finished"
printf '%s\n' "$out" | sed 's/^/# /'
like "$out" "^\| memory.low \|" "it printed the per-step table"
is "$(wc -l < "$RESULTS/smoke/manifest.tsv")" 2 "the manifest lists both jobs"
like "$(cat "$RESULTS/smoke/manifest.tsv")" "low-steps	patched	1	ok	low-steps/patched/r1" "with their status and directory"
for k in control patched; do
	dir=$RESULTS/smoke/low-steps/$k/r1/guest/out
	[ -s "$dir/samples.csv" ] && [ -s "$dir/steps.tsv" ]
	ok $? "$k: samples and steps came back"
done
# The rates themselves, per kernel, from the table (columns: patched, control).
protected=$(printf '%s\n' "$out" | awk -F'|' '$2 ~ /116%/ { gsub(/\(.*/, "", $4); gsub(/\(.*/, "", $5); print $4 + 0, $5 + 0 }')
open=$(printf '%s\n' "$out" | awk -F'|' '$2 ~ / 0%/ { gsub(/\(.*/, "", $4); gsub(/\(.*/, "", $5); print $4 + 0, $5 + 0 }')
read -r p_prot c_prot <<< "$protected"
read -r p_open c_open <<< "$open"
[ "${p_prot:-1}" -le 10 ] && [ "${c_prot:-1}" -le 10 ]
ok $? "protection above usage: no scanning (patched $p_prot/s, control $c_prot/s)"
[ "${p_open:-0}" -ge 100 ] && [ "${c_open:-0}" -ge 100 ]
ok $? "no protection: the workload is scanned (patched $p_open/s, control $c_open/s)"
out=$("$BENCH" run smoke --profile quick --kernels "control patched" --scenarios low-steps 2>&1)
like "$out" "done already, kept" "running the same run id again keeps the finished jobs"

done_testing
