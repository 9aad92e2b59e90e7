#!/usr/bin/env bash
# The other fixes of the merge the reclaim series came in, checked in the
# guest on the suite's kernels: each check boots KERNEL once, runs in the
# guest, and leaves its raw output; analysis/seeds.py gives the verdicts.
# Every check is meant to fail on a kernel with its fix reverted (the
# revert variants of patches/variants). Run with no arguments for usage.
#
# Checks:
#   kmalloc  the suite's KUnit module kmalloc_check (workloads/kunit),
#            built with each kernel: natural alignment of power-of-two
#            kmalloc() sizes, and large kmalloc() in SUnreclaim; plus, with
#            no module, the align of each SLUB kmalloc cache in sysfs.
#   nomemcg  booted with cgroup_disable=memory: buffered writes to a file
#            on ext4 (the root) and on XFS (a loop device, where the
#            kernel has XFS), then sync; the kernel must not oops (upstream
#            08d1d0e6d0a0).
#   ocfs2    an O_DIRECT write past the end of a small file on ocfs2
#            (local mode, 1M clusters, a loop device): the rest of its
#            file-system block must read back as zeros (upstream
#            7a243c82ea52).
#   prototypes  not booted: a W=1 build of mm/sparse.o on the host must not
#            warn about a missing prototype (upstream 758b8db4a56a).
#   sync     a smoke check: sync and syncfs in loops while files are
#            rewritten, on ext4 and XFS; the kernel must not oops (upstream
#            8e00c4e9dd85, a race this cannot be counted on to hit).
#   z3fold   zswap on z3fold with a small pool, under a verified memory
#            workload that swaps and unmaps all along, so that pages are
#            freed while z3fold reclaims them; the kernel must not oops nor
#            the data change (upstream 5b6807de1144, a race this cannot be
#            counted on to hit; Z3FOLD_SECONDS, default 120, says how long).
#   initfree booted with init_on_free=1 (K@pagepoison: page_poison=1 as
#            well): a memory workload with its data verified, then every
#            page freed; the kernel must not oops nor find a poisoned page
#            written (upstream 234fdce892f9, which x86 cannot show).
# bench/regress lists which kernel each check runs on and the verdict
# expected there (`regress`).
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

KERNEL_SH=$SUITE_ROOT/bench/kernel.sh
RESULTS=${RESULTS:-$SUITE_ROOT/results}
CHECKS=(kmalloc nomemcg ocfs2 prototypes sync initfree z3fold)
# How long the z3fold check's stress runs in the guest, in seconds.
Z3FOLD_SECONDS=${Z3FOLD_SECONDS:-120}
MATRIX=$SUITE_ROOT/bench/regress

usage() {
	cat <<EOF2
usage: $PROG COMMAND [ARGS]

  run RUN_ID KERNEL... [--check NAME]
                 run each check (default: all; one: --check) in a guest per
                 kernel into $RESULTS/RUN_ID/seeds/CHECK/KERNEL; a job
                 with a verdict (even a hang) is kept: remove its
                 directory to run it again
  regress RUN_ID [--check NAME]...
                 run the checks on the kernels bench/regress names for them
                 (the fixed kernel and the revert that must fail), then the
                 table with the verdict expected on each
  kernels [--check NAME]...
                 the kernels bench/regress boots (the checks named, or all)
  table RUN_DIR [--expect FILE]
                 the verdicts of a run; with --expect (bench/regress), whether
                 each is the one expected

Checks: ${CHECKS[*]}. A kernel may be an arm: K@slubdebug boots with SLUB
debugging (red zones, poisoning) on every cache, K@pagepoison with
page_poison=1. With BENCH_HOSTS=FILE (make regress HOSTS=FILE), the guest
jobs run on the hosts of FILE, every kernel of a check on one host
(docs/hosts.md).
EOF2
}

# The guest side of the kmalloc check: a shell script the agent runs in its
# output directory. Leaves slab-align.tsv (cache, object size, align, from
# sysfs), insmod.status and kernel.log (the kernel log after a marker
# written just before the module was loaded: its KTAP and anything the
# kernel said meanwhile).
guest_kmalloc() {
	cat <<'EOF2'
#!/bin/sh
set -u
printf 'cache\tobject_size\talign\n' > slab-align.tsv.tmp
for d in /sys/kernel/slab/kmalloc-* /sys/kernel/slab/dma-kmalloc-*; do
	[ -r "$d/align" ] || continue
	printf '%s\t%s\t%s\n' "${d##*/}" "$(cat "$d/object_size")" "$(cat "$d/align")"
done >> slab-align.tsv.tmp
mv slab-align.tsv.tmp slab-align.tsv
marker="seeds: kmalloc_check $$ $(date +%s%N)"
echo "$marker" > /dev/kmsg
insmod /mnt/job/kmalloc_check.ko
echo $? > insmod.status
dmesg --notime | awk -v m="$marker" 'found { print } index($0, m) { found = 1 }' > kernel.log.tmp
mv kernel.log.tmp kernel.log
rmmod kmalloc_check
exit 0
EOF2
}

# Files the kmalloc check ships to the guest, from kernel directory $1.
files_kmalloc() {
	[ -f "$1/kmalloc_check.ko" ] ||
		die "$1 has no kmalloc_check.ko: the check needs a kernel the suite builds (not a prebuilt one), built since the module exists (bench/kernel.sh build)"
	echo "$1/kmalloc_check.ko"
}

# Job file lines the kmalloc check adds to the common ones.
conf_kmalloc() {
	echo "timeout = 300"
}

# The guest side of the nomemcg check. The kernel runs with the memory
# controller disabled; on a kernel without 08d1d0e6d0a0 the first page
# dirtied oopses (often during boot, before this runs). Leaves steps (one
# line per file system: name, pass or skip, what was done or why not) or
# skip (why the whole check could not run).
guest_nomemcg() {
	cat <<'EOF2'
#!/bin/sh
set -u
if grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
	echo "the memory controller is on: the kernel was not booted with cgroup_disable=memory" > skip
	exit 0
fi
: > steps
write() {
	dd if=/dev/urandom of="$2/nomemcg.data" bs=1M count=64 status=none &&
		sync && echo "$1 pass 64M written through the page cache and synced" >> steps ||
		echo "$1 fail the write or the sync returned an error" >> steps
}
write ext4 /var/tmp
if ! grep -qw xfs /proc/filesystems; then
	echo "xfs skip the kernel has no XFS (CONFIG_XFS_FS)" >> steps
elif ! command -v mkfs.xfs > /dev/null; then
	echo "xfs skip mkfs.xfs is not in the image (xfsprogs)" >> steps
else
	truncate -s 300M /var/tmp/xfs.img
	dev=$(losetup -f --show /var/tmp/xfs.img)
	mkdir -p /mnt/xfs
	if mkfs.xfs -q "$dev" && mount "$dev" /mnt/xfs; then
		write xfs /mnt/xfs
		umount /mnt/xfs
	else
		echo "xfs fail mkfs.xfs or mount failed" >> steps
	fi
	losetup -d "$dev"
fi
exit 0
EOF2
}

files_nomemcg() {
	:
}

conf_nomemcg() {
	echo "cmdline = cgroup_disable=memory"
	# A kernel that oopses with interrupts off hangs: do not wait long.
	echo "timeout = 150"
}

# The guest side of the ocfs2 check (upstream 7a243c82ea52). An ocfs2 file
# system in local mode (no cluster stack) with 1M clusters, on a loop
# device over an image whose every byte is 0xa5, so that data the file
# system never wrote is not zero. An 8K file written with O_DIRECT, then
# 1K at 14K with O_DIRECT: both land in the file's first cluster, which
# the first write made "written", so only the fix marks the block past
# the old end of file new and has 12K-14K and 15K-16K zeroed. Read back
# after a remount, from the disk, not the page cache: 15K-16K lies past
# the end of the file, so it is read from the device at the block filefrag
# names, after the file system is unmounted. Leaves regions (one
# line per range: name, bytes, bytes not zero, and whether the fix says
# it must be zero), size (the file's size) or skip (why not run).
guest_ocfs2() {
	cat <<'EOF2'
#!/bin/sh
set -u
if ! grep -qw ocfs2 /proc/filesystems; then
	echo "the kernel has no ocfs2 (CONFIG_OCFS2_FS)" > skip
	exit 0
fi
if ! command -v mkfs.ocfs2 > /dev/null; then
	echo "mkfs.ocfs2 is not in the image (ocfs2-tools)" > skip
	exit 0
fi
img=/var/tmp/ocfs2.img
head -c 256M /dev/zero | tr '\000' '\245' > "$img"
dev=$(losetup -f --show "$img")
mkdir -p /mnt/ocfs2
if ! mkfs.ocfs2 -q -F -M local -b 4K -C 1M -N 1 --nodiscard \
		--fs-features=append-dio,noinline-data "$dev" > mkfs.log 2>&1; then
	echo "mkfs.ocfs2 failed: $(tail -1 mkfs.log)" > error
	exit 0
fi
if ! mount -t ocfs2 "$dev" /mnt/ocfs2 2> mount.log; then
	echo "mount failed: $(tail -1 mount.log)" > error
	exit 0
fi
f=/mnt/ocfs2/dio
dd if=/dev/urandom of="$f" bs=8K count=1 oflag=direct status=none &&
	dd if=/dev/urandom of="$f" bs=1K count=1 seek=14 oflag=direct conv=notrunc status=none ||
	echo "an O_DIRECT write failed" > error
umount /mnt/ocfs2 && mount -t ocfs2 "$dev" /mnt/ocfs2 || echo "the remount failed" >> error
stat -c %s "$f" > size
# The file's first block on the device (4K blocks), for what lies past
# its end: a read through the file stops at 15K.
filefrag -v "$f" > filefrag.log 2>&1
block=$(awk '$1 == "0:" { sub(/\.\./, "", $4); print $4; exit }' filefrag.log)
nonzero() {
	dd if="$f" bs=1K skip="$1" count="$2" status=none | tr -d '\000' | wc -c
}
{
	printf '0K-8K 8192 %s written\n' "$(nonzero 0 8)"
	printf '8K-12K 4096 %s unwritten\n' "$(nonzero 8 4)"
	printf '12K-14K 2048 %s zero\n' "$(nonzero 12 2)"
	printf '14K-15K 1024 %s written\n' "$(nonzero 14 1)"
} > regions.tmp
umount /mnt/ocfs2
case $block in
'' | *[!0-9]*)
	echo "filefrag found no extent: $(tail -1 filefrag.log)" > error ;;
*)
	tail=$(dd if="$dev" bs=1K skip=$((block * 4 + 15)) count=1 \
		iflag=direct status=none | tr -d '\000' | wc -c)
	printf '15K-16K 1024 %s zero\n' "$tail" >> regions.tmp ;;
esac
mv regions.tmp regions
losetup -d "$dev"
rm -f "$img"
exit 0
EOF2
}

files_ocfs2() {
	:
}

conf_ocfs2() {
	echo "timeout = 300"
}

# The guest side of the sync check (upstream 8e00c4e9dd85: the flusher
# read a waiter's wb_completion after the waiter could have returned). For
# 20 s, two writers rewrite 32M files with buffered writes while
# sync(2) and syncfs(2) (sync -f) run in loops, each waiting on flusher
# work; on ext4 (the root) and, where the kernel has it, XFS on a loop
# device. A smoke check: the race needs a reused stack slot in a window of
# a few instructions. Leaves counts (one line per file system: name,
# syncs, syncfs calls, MB written) or skip.
guest_sync() {
	cat <<'EOF2'
#!/bin/sh
set -u
SECONDS_RUN=20
storm() {
	fs=$1 dir=$2 end=$(($(date +%s) + SECONDS_RUN))
	mkdir -p "$dir/storm"
	for w in 1 2; do
		(n=0; while [ "$(date +%s)" -lt "$end" ]; do
			dd if=/dev/zero of="$dir/storm/w$w" bs=1M count=32 status=none && n=$((n + 32))
		done; echo "$n" > "w$w.$fs") &
	done
	for k in 1 2; do
		(n=0; while [ "$(date +%s)" -lt "$end" ]; do sync && n=$((n + 1)); done; echo "$n" > "s$k.$fs") &
		(n=0; while [ "$(date +%s)" -lt "$end" ]; do sync -f "$dir/storm" && n=$((n + 1)); done
			echo "$n" > "f$k.$fs") &
	done
	wait
	rm -rf "$dir/storm"
	echo "$fs $(($(cat "s1.$fs") + $(cat "s2.$fs"))) $(($(cat "f1.$fs") + $(cat "f2.$fs")))" \
		"$(($(cat "w1.$fs") + $(cat "w2.$fs")))" >> counts.tmp
}
: > counts.tmp
storm ext4 /var/tmp
if grep -qw xfs /proc/filesystems && command -v mkfs.xfs > /dev/null; then
	truncate -s 300M /var/tmp/xfs.img
	dev=$(losetup -f --show /var/tmp/xfs.img)
	mkdir -p /mnt/xfs
	if mkfs.xfs -q "$dev" && mount "$dev" /mnt/xfs; then
		storm xfs /mnt/xfs
		umount /mnt/xfs
	fi
	losetup -d "$dev"
	rm -f /var/tmp/xfs.img
fi
mv counts.tmp counts
exit 0
EOF2
}

files_sync() {
	:
}

conf_sync() {
	echo "timeout = 240"
}

# The guest side of the initfree check (upstream 234fdce892f9: the page
# allocator handed a page to arch_free_page() before zeroing or poisoning
# it, which crashed s390, where arch_free_page() takes the page away). The
# kernel runs with init_on_free=1 (K@pagepoison adds page_poison=1, which
# then takes precedence: freed pages are filled with a pattern, checked
# when they are allocated again). stress-ng's vm stressor (two workers,
# 600M each, its data verified) runs, then 256M of page cache is written,
# removed and dropped: every page is freed through free_pages_prepare().
# Leaves mode (which of the two wrote freed pages), work (what ran and how
# it ended, pgfree over it) and pagealloc.log (the allocator's complaints
# about poisoned pages written after free), or skip.
guest_initfree() {
	cat <<'EOF2'
#!/bin/sh
set -u
dmesg --notime > boot.log
if grep -q '^Unknown kernel command line parameters.*page_poison' boot.log; then
	echo "the kernel has no page poisoning (CONFIG_PAGE_POISONING)" > skip
	exit 0
fi
if grep -q 'CONFIG_PAGE_POISONING is on, will take precedence' boot.log; then
	echo "page_poison" > mode
elif grep -q 'heap free:on' boot.log; then
	echo "init_on_free" > mode
else
	echo "neither init_on_free nor page_poison is on: $(grep 'mem auto-init' boot.log | head -1)" > skip
	exit 0
fi
before=$(awk '$1 == "pgfree" { print $2 }' /proc/vmstat)
stress-ng --vm 2 --vm-bytes 600M --vm-method all --verify --timeout 20s > stress.log 2>&1
echo "stress-ng-vm $?" > work.tmp
dd if=/dev/urandom of=/var/tmp/initfree.data bs=1M count=256 status=none && sync &&
	rm /var/tmp/initfree.data && echo 3 > /proc/sys/vm/drop_caches
echo "pagecache $?" >> work.tmp
echo "pgfree $(($(awk '$1 == "pgfree" { print $2 }' /proc/vmstat) - before))" >> work.tmp
dmesg --notime | grep -E '^pagealloc: (memory corruption|single bit error)' > pagealloc.log
mv work.tmp work
exit 0
EOF2
}

files_initfree() {
	:
}

conf_initfree() {
	echo "cmdline = init_on_free=1"
	echo "timeout = 240"
}

# The guest side of the z3fold check (upstream 5b6807de1144:
# z3fold_free() tested the page's claim before z3fold_reclaim_page() could
# take it, then queued the reclaimed page for compaction). zswap runs on
# z3fold (zswap.zpool=z3fold on the command line) with its pool capped at
# 2% of memory (40M), so that a full pool writes pages back to swap through
# z3fold_reclaim_page(), while stress-ng's vm stressor (two workers, 400M
# between them, data verified, each unmapping and mapping its memory again:
# every unmap frees z3fold objects) runs for Z3FOLD_SECONDS in a cgroup of
# 192M, swapping through zswap all along. Leaves work (what ran, how it
# ended, how long, stress-ng's bogo ops: passes over its memory),
# zswap.before and zswap.after (zswap's debugfs counters) and vmstat.before
# and vmstat (pswpin, pswpout, zswpin, zswpout), or skip.
guest_z3fold() {
	[[ "$Z3FOLD_SECONDS" =~ ^[1-9][0-9]*$ ]] ||
		usage_error "Z3FOLD_SECONDS must be a whole number of seconds above 0, not '$Z3FOLD_SECONDS'"
	cat <<EOF2
#!/bin/sh
set -u
Z3FOLD_SECONDS=$Z3FOLD_SECONDS
EOF2
	cat <<'EOF2'
P=/sys/module/zswap/parameters
if [ ! -d "$P" ]; then
	echo "the kernel has no zswap" > skip
	exit 0
fi
if [ "$(cat "$P/zpool")" != z3fold ] || [ "$(cat "$P/enabled")" != Y ]; then
	echo "zswap is not on z3fold (zpool $(cat "$P/zpool"), enabled $(cat "$P/enabled"))" > skip
	exit 0
fi
if ! swapon --show=NAME --noheadings | grep -q .; then
	echo "no swap: zswap stores nothing" > skip
	exit 0
fi
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
counters() {
	for f in /sys/kernel/debug/zswap/*; do echo "$(basename "$f") $(cat "$f")"; done
}
swaps() { awk '$1 ~ /^(pswpin|pswpout|zswpin|zswpout)$/ { print $1, $2 }' /proc/vmstat; }
counters > zswap.before
swaps > vmstat.before
cg=/sys/fs/cgroup/z3fold-check
mkdir -p "$cg"
if ! echo 192M > "$cg/memory.max"; then
	echo "cannot limit a cgroup's memory (no memory controller for $cg)" > skip
	exit 0
fi
start=$(date +%s)
sh -c "echo \$\$ > $cg/cgroup.procs && exec stress-ng --vm 2 --vm-bytes 320M --vm-method all \
	--verify --metrics-brief --timeout ${Z3FOLD_SECONDS}s" > stress.log 2>&1
echo "stress-ng-vm $?" > work.tmp
echo "bogo-ops $(awk '$4 == "vm" && $5 ~ /^[0-9]+$/ { print $5 }' stress.log | sed -n 1p)" >> work.tmp
echo "seconds $(($(date +%s) - start))" >> work.tmp
counters > zswap.after
swaps > vmstat
rmdir "$cg" 2> /dev/null
mv work.tmp work
exit 0
EOF2
}

files_z3fold() {
	:
}

conf_z3fold() {
	echo "swap = 1G"
	echo "zswap = on"
	echo "cmdline = zswap.zpool=z3fold zswap.max_pool_percent=1"
	echo "timeout = $((Z3FOLD_SECONDS + 180))"
}

# The prototypes check (upstream 758b8db4a56a) is built, not booted: W=1
# builds of the objects it made warning-free, on the host, in the suite's
# kernel tree. Leaves warnings.log (what the compiler said) and status
# (make's exit status). mm/shuffle.o, the fix's other half, is not built:
# the suite's config has no CONFIG_SHUFFLE_PAGE_ALLOCATOR, and in 6.1 the
# function the fix made static there no longer exists.
host_prototypes() {
	local v=$1 dir=$2 rc=0
	mkdir -p "$dir"
	"$KERNEL_SH" warnings "$v" mm/sparse.o > "$dir/warnings.log.tmp" 2>&1 || rc=$?
	mv "$dir/warnings.log.tmp" "$dir/warnings.log"
	echo "$rc" > "$dir/status"
}

# check_arg NAME: NAME if it is a check, else a usage error listing them.
check_arg() {
	[[ " ${CHECKS[*]} " == *" $1 "* ]] || usage_error "no check '$1'; the checks: ${CHECKS[*]}"
}

# parse_checks ARG...: each --check NAME into CHECKS_GIVEN (refused unless
# NAME is a check), every other word into WORDS; an unknown option is a
# usage error.
parse_checks() {
	CHECKS_GIVEN=()
	WORDS=()
	while [ $# -gt 0 ]; do
		case "$1" in
		--check)
			[ $# -ge 2 ] || usage_error "--check needs a name (${CHECKS[*]})"
			check_arg "$2"
			CHECKS_GIVEN+=("$2")
			shift 2
			;;
		-*) usage_error "unknown option '$1'" ;;
		*)
			WORDS+=("$1")
			shift
			;;
		esac
	done
}

# job_judged DIR: whether the job in DIR has a verdict from the guest or
# about it (result.json: ok, agent-error, timeout, panic, no-status): an
# oops, a hang or a panic is what some checks look for. A job QEMU could
# not run (qemu-error), or with no result.json, is run again; so is any
# job whose directory you remove.
job_judged() {
	[ -f "$1/status" ] ||
		/usr/bin/python3 "$JOBS_PY" job-ok "$1" ok agent-error timeout panic no-status 2> /dev/null
}

# run_jobs RUN_ID "CHECK KERNEL"...: one guest job per pair, into
# $RESULTS/RUN_ID/seeds/CHECK/KERNEL; a job that finished ok is kept. A job
# that oopsed, hung or panicked has done its part (the verdict is the
# analysis'): only bad input stops the run.
run_jobs() {
	local id=$1 pair check k v kdir dir tmp f n=0 rc with
	shift
	[[ "$id" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || usage_error "run id '$id' must start with a letter or digit and hold only letters, digits, '.', '_', '-'"
	for pair in "$@"; do
		read -r check k <<< "$pair"
		arm_check "$k"
		if declare -F "host_$check" > /dev/null; then
			[ "$(arm_kernel "$k")" = "$k" ] ||
				usage_error "$check is built on the host, not booted: give it a kernel, not an arm ($k)"
			continue
		fi
		kdir=$("$KERNEL_SH" path "$(arm_kernel "$k")") || exit $?
		"files_$check" "$kdir" > /dev/null
	done
	# With HOSTS, the guest jobs are queued and run on those hosts after
	# this loop, every kernel of a check on one host.
	guest_queue_start "$RESULTS/$id/.hosts/seeds"
	for pair in "$@"; do
		read -r check k <<< "$pair"
		n=$((n + 1))
		v=$(arm_kernel "$k")
		dir=$RESULTS/$id/seeds/$check/$k
		if job_judged "$dir"; then
			log "[$k] $check: done already, kept: $dir"
			continue
		fi
		log "[$k] $check: job $n of $#"
		rm -rf "$dir"
		mkdir -p "$(dirname "$dir")"
		if declare -F "host_$check" > /dev/null; then
			"host_$check" "$v" "$dir"
			continue
		fi
		tmp=$(mktemp -d)
		"guest_$check" > "$tmp/$check.sh"
		with=(--with "$tmp/$check.sh")
		kdir=$("$KERNEL_SH" path "$v")
		while read -r f; do with+=(--with "$f"); done < <("files_$check" "$kdir")
		{
			echo "# seed check $check"
			echo "memory = 2G"
			echo "cpus = 2"
			conf=$("conf_$check")
			# A check's own swap size replaces the default of none.
			grep -q '^swap = ' <<< "$conf" || echo "swap = 0"
			echo "command = sh /mnt/job/$check.sh"
			printf '%s\n' "$conf"
		} > "$tmp/job.conf"
		rc=0
		LOG_TAG="seeds $check" guest_job "$check" "$k" "$tmp/job.conf" "$dir" "${with[@]}" || rc=$?
		rm -rf "$tmp"
		[ "$rc" = "$EX_USAGE" ] && die "[$k] $check: the job was refused (above)"
	done
	rc=0
	guest_queue_run || rc=$?
	[ "$rc" = "$EX_USAGE" ] && die "bench/hosts.py refused the queue or the hosts (above)"
	[ "$rc" = 0 ] || log "not every queued job came back from the hosts (above)"
	return 0
}

cmd_run() {
	local id=$1 k check checks pairs=() table=()
	shift
	parse_checks "$@"
	[ ${#WORDS[@]} -gt 0 ] || usage_error "usage: $PROG run RUN_ID KERNEL... [--check NAME]"
	checks=("${CHECKS_GIVEN[@]}")
	[ ${#checks[@]} -gt 0 ] || checks=("${CHECKS[@]}")
	for check in "${checks[@]}"; do
		for k in "${WORDS[@]}"; do pairs+=("$check $k"); done
		table+=(--check "$check")
	done
	run_jobs "$id" "${pairs[@]}"
	cmd_table "$RESULTS/$id" "${table[@]}"
}

# The (check, kernel) pairs of bench/regress, of the checks named (all if
# none), as "CHECK KERNEL" lines; a bad line is refused with file and line.
matrix_pairs() {
	local args=(--pairs "$MATRIX") c
	for c in "$@"; do args+=(--check "$c"); done
	/usr/bin/python3 "$SUITE_ROOT/analysis/seeds.py" "${args[@]}"
}

cmd_regress() {
	local id=$1 checks pairs=()
	shift
	parse_checks "$@"
	[ ${#WORDS[@]} -eq 0 ] || usage_error "unknown argument '${WORDS[0]}' (regress RUN_ID [--check NAME]...)"
	checks=("${CHECKS_GIVEN[@]}")
	local out c table=()
	out=$(matrix_pairs "${checks[@]}") || exit "$EX_USAGE"
	[ -n "$out" ] || die "$MATRIX names no kernel for ${checks[*]:-any check}"
	mapfile -t pairs <<< "$out"
	run_jobs "$id" "${pairs[@]}"
	for c in "${checks[@]}"; do table+=(--check "$c"); done
	cmd_table "$RESULTS/$id" --expect "$MATRIX" "${table[@]}"
}

cmd_table() {
	[ -x /usr/bin/python3 ] || die "/usr/bin/python3 not found; run: make deps"
	/usr/bin/python3 "$SUITE_ROOT/analysis/seeds.py" "$@"
}

main() {
	local cmd=${1:-}
	[ $# -gt 0 ] && shift
	case "$cmd" in
	run)
		[ $# -ge 1 ] || usage_error "usage: $PROG run RUN_ID KERNEL... [--check NAME]"
		cmd_run "$@"
		;;
	kernels)
		local out
		parse_checks "$@"
		[ ${#WORDS[@]} -eq 0 ] || usage_error "usage: $PROG kernels [--check NAME]..."
		local checks=("${CHECKS_GIVEN[@]}")
		out=$(matrix_pairs "${checks[@]}") || exit "$EX_USAGE"
		# In the order given, each once (a revert that rebuilds much is
		# best listed last). A check built on the host needs the tree,
		# not a bzImage: its kernels are left out.
		local check k
		while read -r check k; do
			declare -F "host_$check" > /dev/null || echo "$k"
		done <<< "$out" | awk '!seen[$0]++'
		;;
	regress)
		[ $# -ge 1 ] || usage_error "usage: $PROG regress RUN_ID [--check NAME]..."
		cmd_regress "$@"
		;;
	table)
		[ $# -ge 1 ] || usage_error "usage: $PROG table RUN_DIR [--expect FILE]"
		cmd_table "$@"
		;;
	"" | -h | --help | help) usage ;;
	*) usage >&2; exit "$EX_USAGE" ;;
	esac
}

main "$@"
