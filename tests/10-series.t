#!/usr/bin/env bash
# The patch series against the stock linux-source tree: every prefix applies,
# each variant carries its formula, the whole series gives back stock 6.1, and
# a patch that does not apply leaves the tree alone. Needs no kernel build.
set -u
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/lib/tap.sh"

KERNEL=$SUITE_ROOT/bench/kernel.sh
TARBALL=${TARBALL:-/usr/src/linux-source-6.1.tar.xz}
[ -f "$TARBALL" ] || skip_all "$TARBALL missing (make deps installs it)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export VARIANTS_LOCAL=$tmp/variants.local

# The files the series touches and the header it must leave alone.
files="mm/vmscan.c include/linux/memcontrol.h mm/slab_common.c mm/sparse.c fs/ocfs2/aops.c fs/fs-writeback.c mm/page_alloc.c mm/z3fold.c include/trace/events/vmscan.h Makefile"
members=""
for f in $files; do members="$members linux-source-6.1/$f"; done
# shellcheck disable=SC2086
tar -xJf "$TARBALL" -C "$tmp" $members
ok $? "stock files extracted from $(basename "$TARBALL")"
tree=$tmp/linux-source-6.1
cp -a "$tree" "$tmp/stock"

# The code of get_scan_count() in the tree's mm/vmscan.c, comments removed.
scan_count_body() {
	awk '/^static void get_scan_count\(/ { p = 1 } p { print } p && /^}/ { exit }' \
		"$tree/mm/vmscan.c" | perl -0pe 's{/\*.*?\*/}{}gs'
}

# Only mm/vmscan.c may differ from stock, or switching variants would rebuild
# much more than one object.
only_vmscan_differs() {
	local d
	d=$(diff -rq -x .suite "$tmp/stock" "$tree" | sed "s|$tmp/||g")
	[ -z "$d" ] || [ "$d" = "Files stock/mm/vmscan.c and linux-source-6.1/mm/vmscan.c differ" ]
}

mapfile -t series < <(grep -v '^#' "$SUITE_ROOT/patches/series" | grep -v '^$')
is "${#series[@]}" 5 "patches/series lists five patches"
for p in "${series[@]}"; do
	[ -f "$SUITE_ROOT/patches/$p" ]
	ok $? "patch $p exists"
	grep -q '^Subject: \[PATCH [0-9]*/[0-9]*\] mm: vmscan: ' "$SUITE_ROOT/patches/$p"
	ok $? "patch $p is a format-patch file with a subsystem prefix"
done

# Every series variant patches/variants names applies; the known ones have
# their formula checked.
mapfile -t variants < <(awk '!/^#/ && $2 ~ /^series=/ { print $1 }' "$SUITE_ROOT/patches/variants")
for v in "${variants[@]}"; do
	out=$("$KERNEL" apply "$v" "$tree" 2>&1)
	ok $? "variant $v applies cleanly${out:+: $out}"
	only_vmscan_differs
	ok $? "variant $v changes mm/vmscan.c and nothing else"
	cp "$tree/mm/vmscan.c" "$tmp/vmscan.$v.c"
	body=$(scan_count_body)
	case "$v" in
	control)
		if printf '%s\n' "$body" | grep -qE 'mem_cgroup_protection|mem_cgroup_size|protection|cgroup_size'; then
			fail "control: get_scan_count() has no proportional scaling left"
		else
			pass "control: get_scan_count() has no proportional scaling left"
		fi
		like "$body" $'^\t\tscan = lruvec_size;$' "control: every visited cgroup gets the full lruvec size"
		;;
	v1-9783aa)
		like "$body" 'scan = lruvec_size \* cgroup_size / protection - baseline;' \
			"v1: scan = L * usage / P - baseline"
		like "$body" 'protection = max\(min, low\);' "v1: P = max(emin, elow)"
		like "$body" 'scan = min\(max\(scan, SWAP_CLUSTER_MAX\), lruvec_size\);' \
			"v1: 5.4 clamp() semantics"
		;;
	v2-9de7ca)
		like "$body" 'scan = lruvec_size \* \(cgroup_size - min\) /' \
			"v2: low-reclaim pass scales between emin and elow"
		like "$body" 'sc->memcg_low_reclaim && low > min' "v2: only in the low-reclaim pass"
		like "$body" 'scan = min\(max\(scan, SWAP_CLUSTER_MAX\), lruvec_size\);' \
			"v2: 5.4 clamp() semantics"
		;;
	v3-1bc63f)
		like "$body" 'scan = lruvec_size - lruvec_size \* protection /' \
			"v3: scan = L - L * P / usage"
		like "$body" $'^\t\t\t\tcgroup_size;$' "v3: divisor is usage, not usage + 1"
		like "$body" $'protection = min;' "v3: low-reclaim pass uses emin alone"
		if printf '%s\n' "$body" | grep -q 'memcg_low_skipped'; then
			fail "v3: does not set memcg_low_skipped (that is f56ce412a59d)"
		else
			pass "v3: does not set memcg_low_skipped (that is f56ce412a59d)"
		fi
		;;
	patched)
		cmp -s "$tmp/stock/mm/vmscan.c" "$tree/mm/vmscan.c"
		ok $? "patched: mm/vmscan.c is byte-identical to stock 6.1"
		cmp -s "$tmp/stock/include/linux/memcontrol.h" "$tree/include/linux/memcontrol.h"
		ok $? "patched: include/linux/memcontrol.h is byte-identical to stock 6.1"
		;;
	esac
done

# Each variant is a different kernel.
n=$(sha256sum "$tmp"/vmscan.*.c | cut -d' ' -f1 | sort -u | wc -l)
is "$n" 5 "the five variants have five different mm/vmscan.c"

# Switching back and forth gives the same files, and rewrites only what
# changes (make relies on the timestamps).
"$KERNEL" apply control "$tree" > /dev/null 2>&1
cmp -s "$tmp/vmscan.control.c" "$tree/mm/vmscan.c"
ok $? "patched -> control gives control's mm/vmscan.c again"
touch -d '2000-01-01' "$tree/mm/vmscan.c" "$tree/include/linux/memcontrol.h"
"$KERNEL" apply control "$tree" > /dev/null 2>&1
is "$(stat -c %Y "$tree/mm/vmscan.c")" "$(date -d 2000-01-01 +%s)" \
	"re-applying the same variant leaves mm/vmscan.c untouched"
"$KERNEL" apply v1-9783aa "$tree" > /dev/null 2>&1
is "$(stat -c %Y "$tree/include/linux/memcontrol.h")" "$(date -d 2000-01-01 +%s)" \
	"switching variant leaves files it does not change untouched"
[ "$(stat -c %Y "$tree/mm/vmscan.c")" != "$(date -d 2000-01-01 +%s)" ]
ok $? "switching variant rewrites mm/vmscan.c"

# The revert variants of the seed checks: each is patched plus one patch that
# changes mm/slab_common.c alone and takes out what its fix added.
slab_differs_only() {
	local d
	d=$(diff -rq -x .suite "$tmp/stock" "$tree" | sed "s|$tmp/||g")
	[ "$d" = "Files stock/mm/slab_common.c and linux-source-6.1/mm/slab_common.c differ" ]
}
count() { grep -c -- "$1" "$2"; }
out=$("$KERNEL" apply revert-59bb47 "$tree" 2>&1)
ok $? "variant revert-59bb47 applies cleanly${out:+: $out}"
slab_differs_only
ok $? "revert-59bb47 changes mm/slab_common.c and nothing else"
is "$(count 'align = max(align, size);' "$tmp/stock/mm/slab_common.c")/$(count 'align = max(align, size);' "$tree/mm/slab_common.c")" \
	1/0 "revert-59bb47: create_boot_cache() no longer aligns power-of-two caches to their size"
out=$("$KERNEL" apply revert-6a486c "$tree" 2>&1)
ok $? "variant revert-6a486c applies cleanly${out:+: $out}"
slab_differs_only
ok $? "revert-6a486c changes mm/slab_common.c and nothing else"
is "$(count NR_SLAB_UNRECLAIMABLE_B "$tmp/stock/mm/slab_common.c")/$(count NR_SLAB_UNRECLAIMABLE_B "$tree/mm/slab_common.c")" \
	2/0 "revert-6a486c: large kmalloc() and its kfree() no longer count in NR_SLAB_UNRECLAIMABLE_B"
grep -q 'align = max(align, size);' "$tree/mm/slab_common.c"
ok $? "revert-6a486c keeps the alignment fix"

# applies_alone V FILE: variant V applies to the tree and changes FILE alone.
applies_alone() {
	local out d
	out=$("$KERNEL" apply "$1" "$tree" 2>&1)
	ok $? "variant $1 applies cleanly${out:+: $out}"
	d=$(diff -rq -x .suite "$tmp/stock" "$tree" | sed "s|$tmp/||g")
	is "$d" "Files stock/$2 and linux-source-6.1/$2 differ" "$1 changes $2 and nothing else"
}

# The nomemcg check's revert: patched plus one patch to include/linux/memcontrol.h.
applies_alone revert-08d1d0 include/linux/memcontrol.h
foreign() { sed -n '/^static inline void mem_cgroup_track_foreign_dirty(/,/^}/p' "$1/include/linux/memcontrol.h"; }
is "$(foreign "$tmp/stock" | grep -c 'mem_cgroup_disabled()\|memcg && ')/$(foreign "$tree" | grep -c 'mem_cgroup_disabled()\|memcg && ')" \
	2/0 "revert-08d1d0: mem_cgroup_track_foreign_dirty() no longer returns early without memcg, nor tests the memcg for NULL"

# The ocfs2 check's revert: patched plus one patch to fs/ocfs2/aops.c.
applies_alone revert-7a243c fs/ocfs2/aops.c
dio_get_block() { sed -n '/^static int ocfs2_dio_wr_get_block(/,/^}/p' "$1/fs/ocfs2/aops.c"; }
is "$(dio_get_block "$tmp/stock" | grep -c endblk)/$(dio_get_block "$tree" | grep -c endblk)" \
	6/0 "revert-7a243c: ocfs2_dio_wr_get_block() no longer splits the mapping at i_size nor marks blocks past it new"

# The prototypes check's revert: patched plus one patch to mm/sparse.c.
applies_alone revert-758b8d mm/sparse.c
is "$(grep -c '^static void subsection_mask_set(' "$tmp/stock/mm/sparse.c")/$(grep -c '^void subsection_mask_set(' "$tree/mm/sparse.c")" \
	1/1 "revert-758b8d: subsection_mask_set() is no longer static"

# The sync check's revert: patched plus one patch to fs/fs-writeback.c.
applies_alone revert-8e00c4 fs/fs-writeback.c
finish() { sed -n '/^static void finish_writeback_work(/,/^}/p' "$1/fs/fs-writeback.c"; }
is "$(finish "$tmp/stock" | grep -c 'wake_up_all(done->waitq)')/$(finish "$tree" | grep -c 'wake_up_all(done->waitq)')" \
	0/1 "revert-8e00c4: finish_writeback_work() reads done->waitq after the decrement again"

# The initfree check's revert: patched plus one patch to mm/page_alloc.c.
applies_alone revert-234fdc mm/page_alloc.c
order() { sed -n '/^static __always_inline bool free_pages_prepare(/,/^}/p' "$1/mm/page_alloc.c" |
	grep -o 'arch_free_page(page, order)\|kernel_poison_pages(page\|kernel_init_pages(page' | tr '\n' ' '; }
is "$(order "$tree")" "arch_free_page(page, order) kernel_poison_pages(page kernel_init_pages(page " \
	"revert-234fdc: free_pages_prepare() calls arch_free_page() before poisoning and zeroing"
is "$(order "$tmp/stock")" "kernel_poison_pages(page kernel_init_pages(page arch_free_page(page, order) " \
	"stock 6.1 calls it after them"

# The z3fold check's revert: patched plus one patch to mm/z3fold.c.
applies_alone revert-5b6807 mm/z3fold.c
zfree() { sed -n '/^static void z3fold_free(/,/^}/p' "$1/mm/z3fold.c"; }
is "$(zfree "$tmp/stock" | grep -c 'clear_bit(PAGE_CLAIMED')/$(zfree "$tree" | grep -c 'clear_bit(PAGE_CLAIMED')" \
	3/0 "revert-5b6807: z3fold_free() no longer holds the claim it would have to clear"
is "$(zfree "$tmp/stock" | grep -c '= test_and_set_bit(PAGE_CLAIMED')/$(zfree "$tree" | grep -c '= test_and_set_bit(PAGE_CLAIMED')" \
	1/0 "revert-5b6807: nor takes it at its start"

# The trace arms: the variant plus the tracepoint (include/trace/events/
# vmscan.h) and a call at its scaling. The call only adds lines: what the
# kernel computes is the variant's own.
for v in control v1-9783aa v2-9de7ca v3-1bc63f patched; do
	out=$("$KERNEL" apply "$v+trace" "$tree" 2>&1)
	ok $? "variant $v+trace applies cleanly${out:+: $out}"
	d=$(diff -rq -x .suite "$tmp/stock" "$tree" | sed "s|$tmp/||g" | sort | tr '\n' ' ')
	want="Files stock/include/trace/events/vmscan.h and linux-source-6.1/include/trace/events/vmscan.h differ Files stock/mm/vmscan.c and linux-source-6.1/mm/vmscan.c differ "
	is "$d" "$want" "$v+trace changes the trace header and mm/vmscan.c only"
	is "$(diff "$tmp/vmscan.$v.c" "$tree/mm/vmscan.c" | grep -c '^<')" 0 \
		"$v+trace only adds lines to $v's mm/vmscan.c"
	is "$(scan_count_body | grep -c 'trace_mm_vmscan_memcg_protection(')" 1 \
		"$v+trace: get_scan_count() emits the event once per list"
done
grep -q '^TRACE_EVENT(mm_vmscan_memcg_protection,' "$tree/include/trace/events/vmscan.h"
ok $? "the trace header defines mm_vmscan_memcg_protection"
out=$("$KERNEL" apply mglru-prop+trace "$tree" 2>&1)
ok $? "variant mglru-prop+trace applies cleanly${out:+: $out}"
helper=$(sed -n '/^static unsigned long apply_proportional_protection(/,/^}/p' "$tree/mm/vmscan.c")
like "$helper" 'trace_mm_vmscan_memcg_protection\(' \
	"mglru-prop+trace: the event is emitted in the helper both LRUs call"
is "$(grep -c 'apply_proportional_protection(lruvec, ' "$tree/mm/vmscan.c")" 2 \
	"mglru-prop+trace: get_scan_count() and get_nr_to_scan() both call it"

# A patch that does not apply: named with its hunk, tree left as it was.
mkdir -p "$tmp/bad"
sed 's/^ \t\tscan >>= sc->priority;$/ \t\tscan >>= sc->priority + 1;/' \
	"$SUITE_ROOT/patches/${series[1]}" > "$tmp/bad/0001-broken-context.patch"
printf 'broken\tbase=control patches=%s\ta patch whose context is wrong\n' \
	"$tmp/bad" > "$VARIANTS_LOCAL"
cp "$tree/mm/vmscan.c" "$tmp/before.c"
out=$("$KERNEL" apply broken "$tree" 2>&1)
is "$?" 1 "a patch that does not apply fails the apply"
like "$out" "0001-broken-context.patch" "the failure names the patch"
like "$out" "Hunk #[0-9]+ FAILED" "the failure names the hunk"
cmp -s "$tmp/before.c" "$tree/mm/vmscan.c"
ok $? "the tree is left as it was"
[ -z "$(find "$tree" -name '*.rej' -o -name '*.orig' -o -name '*.suite-tmp')" ]
ok $? "no reject or temporary files are left behind"

# An unknown variant lists the known ones.
refused "an unknown variant is a usage error" "$KERNEL" apply no-such-kernel "$tree"
like "$REFUSED_OUT" "unknown kernel variant 'no-such-kernel'.*control.*patched" \
	"the error lists the known variants"

done_testing
