#!/usr/bin/env bash
# The seed checks, booted. kmalloc: the KUnit module built with each kernel
# passes on stock 6.1 with SLUB debugging on, and fails where a fix is
# reverted: without 59bb47985c1d (under slub_debug) the objects and the
# caches' sysfs align lose their natural alignment; without 6a486c0ad4dc
# large kmalloc() does not move SUnreclaim. nomemcg: stock 6.1 booted with
# cgroup_disable=memory writes and syncs with no oops (its revert rebuilds
# most of the kernel, so it is left to make regress). ocfs2: an O_DIRECT
# write past the end of a file leaves zeros around it on stock 6.1 and the
# disk's stale bytes without 7a243c82ea52. prototypes: a W=1 build of
# mm/sparse.o, on the host, warns only without 758b8db4a56a. Builds the
# three revert variants it boots on top of patched (about a minute each
# after the first).
set -u
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/lib/tap.sh"

[ "$(id -u)" = 0 ] || skip_all "building the guest image needs root"
command -v qemu-system-x86_64 > /dev/null || skip_all "QEMU missing (make deps installs it)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
KERNELS=(patched revert-59bb47 revert-6a486c revert-7a243c)

# What make regress builds: the kernels the matrix boots, not those of a
# check built on the host.
is "$("$SUITE_ROOT/bench/seeds.sh" kernels --check ocfs2 --check prototypes | tr '\n' ' ')" \
	"patched revert-7a243c " "seeds.sh kernels: ocfs2's kernels, none for the host-built prototypes"
"$SUITE_ROOT/bench/seeds.sh" kernels --check warp > /dev/null 2> "$tmp/warp"
is "$?" 2 "seeds.sh kernels --check warp: a usage error"
grep -q "no check 'warp'; the checks: kmalloc nomemcg ocfs2 prototypes sync initfree" "$tmp/warp"
ok $? "and it lists the known checks"

"$SUITE_ROOT/bench/kernel.sh" build "${KERNELS[@]}" >&2
ok $? "kernels ${KERNELS[*]} are built"
"$SUITE_ROOT/rootfs/build.sh" > /dev/null
ok $? "the guest image is built"

export RESULTS=$tmp/results
"$SUITE_ROOT/bench/seeds.sh" run t patched@slubdebug revert-59bb47@slubdebug revert-6a486c \
	--check kmalloc > "$tmp/table" 2> "$tmp/err"
is "$?" 1 "seeds.sh run exits 1: some checks fail (the reverts)"
sed 's/^/# /' "$tmp/table"
grep -q '^  revert-6a486c  *fail$' "$tmp/table"
ok $? "the table has revert-6a486c failing"
"$SUITE_ROOT/bench/seeds.sh" run t patched@slubdebug revert-59bb47@slubdebug revert-6a486c \
	--check kmalloc > /dev/null 2> "$tmp/err2"
is "$(grep -c 'done already, kept' "$tmp/err2")/$(grep -c 'booting' "$tmp/err2")" 3/0 \
	"run again: the three finished jobs are kept, nothing boots"
"$SUITE_ROOT/bench/seeds.sh" run t patched --check nomemcg > "$tmp/table2" 2>> "$tmp/err"
is "$?" 0 "nomemcg on patched: seeds.sh run exits 0 (its one verdict is pass)"
"$SUITE_ROOT/bench/seeds.sh" run t patched revert-7a243c --check ocfs2 > "$tmp/table3" 2>> "$tmp/err"
is "$?" 1 "ocfs2 on patched and revert-7a243c: seeds.sh run exits 1 (the revert fails)"
sed 's/^/# /' "$tmp/table3"
"$SUITE_ROOT/bench/seeds.sh" run t patched revert-758b8d --check prototypes > "$tmp/table4" 2>> "$tmp/err"
is "$?" 1 "prototypes on patched and revert-758b8d: seeds.sh run exits 1 (the revert fails)"
sed 's/^/# /' "$tmp/table4"
/usr/bin/python3 "$SUITE_ROOT/analysis/seeds.py" "$tmp/results/t" --json > "$tmp/json"
is "$?" 1 "seeds.py exits 1: some checks fail"

# verdict CHECK KERNEL [PART]: the check's verdict, or one part's.
verdict() {
	local f=.verdict
	[ -n "${3:-}" ] && f=".parts[\"$3\"][0]"
	jq -r ".[\"$1\"][\"$2\"]$f" "$tmp/json"
}

# expect CHECK KERNEL PART WANT DESCRIPTION: one verdict; when it is not
# WANT, what the job left (its verdict's evidence, the guest's files of
# one line, the console's end), so that a failure in CI can be told from
# a guest that did not get that far.
expect() {
	local job=$tmp/results/t/seeds/$1/$2 f
	is "$(verdict "$1" "$2" "$3")" "$4" "$5" && return 0
	diag "$1 on $2: $(jq -c ".[\"$1\"][\"$2\"] | del(.cmdline)" "$tmp/json")"
	for f in "$job"/guest/out/*; do
		if [ -f "$f" ] && [ "$(wc -l < "$f")" -le 10 ]; then
			diag "guest/out/${f##*/}:"
			diag_tail "$(cat "$f")"
		fi
	done
	if [ -f "$job/console.log" ]; then
		diag "the end of $job/console.log:"
		TAP_TAIL=15 diag_tail "$(tr -d '\r' < "$job/console.log")"
	fi
	return 1
}

expect kmalloc patched@slubdebug "" pass "stock 6.1 under slub_debug: every part passes"
for part in alignment accounting sysfs; do
	expect kmalloc patched@slubdebug "$part" pass "stock 6.1 under slub_debug: $part passes"
done
like "$(jq -r '.kmalloc["patched@slubdebug"].parts.alignment[1]' "$tmp/json")" \
	"^2688 objects of 14 sizes, 0 misaligned" "all 14 sizes, 192 objects each, were checked"
is "$(jq -r '.kmalloc["patched@slubdebug"].cmdline' "$tmp/json")" slub_debug=FZPU \
	"the slubdebug arm booted with slub_debug=FZPU"

expect kmalloc revert-59bb47@slubdebug alignment fail "without 59bb47985c1d, under slub_debug: misaligned objects"
expect kmalloc revert-59bb47@slubdebug sysfs fail "without 59bb47985c1d: the caches' align is below their size"
expect kmalloc revert-59bb47@slubdebug accounting pass "without 59bb47985c1d: the accounting still holds"

expect kmalloc revert-6a486c accounting fail "without 6a486c0ad4dc: large kmalloc() does not move SUnreclaim"
expect kmalloc revert-6a486c alignment pass "without 6a486c0ad4dc: alignment still holds"

expect nomemcg patched "" pass "stock 6.1 with cgroup_disable=memory: writes and sync, no oops"
expect nomemcg patched ext4 pass "the ext4 part ran"
is "$(jq -r '.nomemcg.patched.cmdline' "$tmp/json")" cgroup_disable=memory "booted with cgroup_disable=memory"
expect nomemcg patched xfs pass "the XFS part ran (the guest config has XFS, the image xfsprogs)"

for part in 12K-14K 15K-16K; do
	expect ocfs2 patched "$part" pass "ocfs2 on stock 6.1: $part reads back as zeros"
	expect ocfs2 revert-7a243c "$part" fail "ocfs2 without 7a243c82ea52: $part holds stale data"
done
expect prototypes patched "" pass "stock 6.1: mm/sparse.o builds with W=1 and no missing prototype"
like "$(jq -r '.prototypes["revert-758b8d"].evidence' "$tmp/json")" "^missing prototype: subsection_mask_set" \
	"without 758b8db4a56a: subsection_mask_set has no prototype"

# The regress table: every verdict as expected, kmalloc proven.
cat > "$tmp/matrix" <<EOF2
kmalloc  patched@slubdebug        pass
kmalloc  revert-59bb47@slubdebug  fail:alignment,sysfs
kmalloc  revert-6a486c            fail:accounting
nomemcg  patched                  pass
ocfs2       patched        pass
ocfs2       revert-7a243c  fail
prototypes  patched        pass
prototypes  revert-758b8d  fail
EOF2
"$SUITE_ROOT/bench/seeds.sh" table "$tmp/results/t" --expect "$tmp/matrix" > "$tmp/regress"
is "$?" 0 "with the expected verdicts, the table exits 0"
sed 's/^/# /' "$tmp/regress"
grep -qx 'kmalloc: proven' "$tmp/regress"
ok $? "kmalloc: proven (passes with its fixes, fails with each reverted)"
grep -qx 'ocfs2: proven' "$tmp/regress" && grep -qx 'prototypes: proven' "$tmp/regress"
ok $? "ocfs2 and prototypes: proven"
grep -q '^nomemcg: not proven' "$tmp/regress"
ok $? "nomemcg without its revert in the matrix: not proven"
echo "kmalloc  revert-6a486c  pass" > "$tmp/matrix2"
"$SUITE_ROOT/bench/seeds.sh" table "$tmp/results/t" --expect "$tmp/matrix2" > "$tmp/regress2"
is "$?" 1 "a verdict other than the expected one: the table exits 1"
grep -q '| kmalloc | revert-6a486c | - | fail (!) | pass |' "$tmp/regress2"
ok $? "and marks the row"

done_testing
