#!/usr/bin/env bash
# The seed checks, booted. kmalloc: the KUnit module built with each kernel
# passes on stock 6.1 with SLUB debugging on, and fails where a fix is
# reverted: without 59bb47985c1d (under slub_debug) the objects and the
# caches' sysfs align lose their natural alignment; without 6a486c0ad4dc
# large kmalloc() does not move SUnreclaim. nomemcg: stock 6.1 booted with
# cgroup_disable=memory writes and syncs with no oops (its revert rebuilds
# most of the kernel, so it is left to make regress). Builds the two kmalloc
# revert variants on top of patched (under a minute each after the first).
set -u
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/lib/tap.sh"

[ "$(id -u)" = 0 ] || skip_all "building the guest image needs root"
command -v qemu-system-x86_64 > /dev/null || skip_all "QEMU missing (make deps installs it)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
KERNELS=(patched revert-59bb47 revert-6a486c)

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
/usr/bin/python3 "$SUITE_ROOT/analysis/seeds.py" "$tmp/results/t" --json > "$tmp/json"
is "$?" 1 "seeds.py exits 1: some checks fail"

# verdict CHECK KERNEL [PART]: the check's verdict, or one part's.
verdict() {
	local f=.verdict
	[ -n "${3:-}" ] && f=".parts.$3[0]"
	jq -r ".[\"$1\"][\"$2\"]$f" "$tmp/json"
}

is "$(verdict kmalloc patched@slubdebug)" pass "stock 6.1 under slub_debug: every part passes"
for part in alignment accounting sysfs; do
	is "$(verdict kmalloc patched@slubdebug "$part")" pass "stock 6.1 under slub_debug: $part passes"
done
like "$(jq -r '.kmalloc["patched@slubdebug"].parts.alignment[1]' "$tmp/json")" \
	"^2688 objects of 14 sizes, 0 misaligned" "all 14 sizes, 192 objects each, were checked"
is "$(jq -r '.kmalloc["patched@slubdebug"].cmdline' "$tmp/json")" slub_debug=FZPU \
	"the slubdebug arm booted with slub_debug=FZPU"

is "$(verdict kmalloc revert-59bb47@slubdebug alignment)" fail "without 59bb47985c1d, under slub_debug: misaligned objects"
is "$(verdict kmalloc revert-59bb47@slubdebug sysfs)" fail "without 59bb47985c1d: the caches' align is below their size"
is "$(verdict kmalloc revert-59bb47@slubdebug accounting)" pass "without 59bb47985c1d: the accounting still holds"

is "$(verdict kmalloc revert-6a486c accounting)" fail "without 6a486c0ad4dc: large kmalloc() does not move SUnreclaim"
is "$(verdict kmalloc revert-6a486c alignment)" pass "without 6a486c0ad4dc: alignment still holds"

is "$(verdict nomemcg patched)" pass "stock 6.1 with cgroup_disable=memory: writes and sync, no oops"
is "$(verdict nomemcg patched ext4)" pass "the ext4 part ran"
is "$(jq -r '.nomemcg.patched.cmdline' "$tmp/json")" cgroup_disable=memory "booted with cgroup_disable=memory"

# The regress table: every verdict as expected, kmalloc proven.
cat > "$tmp/matrix" <<EOF2
kmalloc  patched@slubdebug        pass
kmalloc  revert-59bb47@slubdebug  fail:alignment,sysfs
kmalloc  revert-6a486c            fail:accounting
nomemcg  patched                  pass
EOF2
"$SUITE_ROOT/bench/seeds.sh" table "$tmp/results/t" --expect "$tmp/matrix" > "$tmp/regress"
is "$?" 0 "with the expected verdicts, the table exits 0"
sed 's/^/# /' "$tmp/regress"
grep -qx 'kmalloc: proven' "$tmp/regress"
ok $? "kmalloc: proven (passes with its fixes, fails with each reverted)"
grep -q '^nomemcg: not proven' "$tmp/regress"
ok $? "nomemcg without its revert in the matrix: not proven"
echo "kmalloc  revert-6a486c  pass" > "$tmp/matrix2"
"$SUITE_ROOT/bench/seeds.sh" table "$tmp/results/t" --expect "$tmp/matrix2" > "$tmp/regress2"
is "$?" 1 "a verdict other than the expected one: the table exits 1"
grep -q '| kmalloc | revert-6a486c | - | fail (!) | pass |' "$tmp/regress2"
ok $? "and marks the row"

done_testing
