#!/usr/bin/env bash
# Compile mm/vmscan.o for every kernel variant that changes it, with the
# guest config, in the suite's shared build tree, so a port that does not
# build fails here without a full kernel build. The first run unpacks and
# configures the tree.
set -u
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/lib/tap.sh"

KERNEL=$SUITE_ROOT/bench/kernel.sh
KOBJ=${KOBJ:-${BUILD_DIR:-$SUITE_ROOT/build}/obj}
[ -f "${TARBALL:-/usr/src/linux-source-6.1.tar.xz}" ] ||
	skip_all "linux-source tarball missing (make deps installs it)"

declare -A sums
# The series variants and the others that change mm/vmscan.c; a variant
# named revert-* reverts a fix elsewhere and compiles patched's object, and
# one with a config fragment (fragment=) builds in a tree of its own (its
# config is checked below).
mapfile -t variants < <(awk '!/^#/ && NF && $1 !~ /^revert-/ && !/ fragment=/ { print $1 }' "$SUITE_ROOT/patches/variants")
[ "${#variants[@]}" -ge 6 ]
ok $? "patches/variants names the variants that change mm/vmscan.c (${#variants[@]})"
for v in "${variants[@]}"; do
	start=$(date +%s)
	out=$("$KERNEL" compile "$v" mm/vmscan.o 2>&1)
	status=$?
	ok "$status" "$v: mm/vmscan.o compiles ($(( $(date +%s) - start ))s)"
	if [ "$status" -ne 0 ]; then
		printf '%s\n' "$out" | tail -n 30 | sed 's/^/# /'
		continue
	fi
	sums[$v]=$(sha256sum < "$KOBJ/mm/vmscan.o" | cut -d' ' -f1)
done
# Each variant really was recompiled: as many different objects.
is "$(printf '%s\n' "${sums[@]}" | sort -u | wc -l)" "${#variants[@]}" \
	"the ${#variants[@]} variants compile to ${#variants[@]} different objects"

# The allocator variants' configs, merged in object trees of their own,
# leave the shared tree's alone.
before=$(sha256sum < "$KOBJ/.config")
cfg=$("$KERNEL" config patched+slab 2> /dev/null)
ok $? "the config of patched+slab is made"
is "$cfg" "$KOBJ-slab/.config" "in a tree of its own"
is "$(grep -cxE 'CONFIG_SLAB=y|CONFIG_DEBUG_SLAB=y|CONFIG_MEMCG_KMEM=y' "$cfg" 2> /dev/null)" 3 \
	"patched+slab: SLAB with CONFIG_DEBUG_SLAB, and memcg kmem accounting"
cfg=$("$KERNEL" config patched+slob 2> /dev/null)
ok $? "the config of patched+slob is made (what it lacks is not asked of it)"
is "$(grep -cxE 'CONFIG_SLOB=y|CONFIG_MEMCG=y' "$cfg" 2> /dev/null)/$(grep -c '^CONFIG_MEMCG_KMEM=' "$cfg" 2> /dev/null)" 2/0 \
	"patched+slob: SLOB, the memory controller, no memcg kmem accounting"
is "$(sha256sum < "$KOBJ/.config")" "$before" "the shared tree's config is SLUB's still"
grep -qx 'CONFIG_SLUB=y' "$KOBJ/.config"
ok $? "and has CONFIG_SLUB=y"

done_testing
