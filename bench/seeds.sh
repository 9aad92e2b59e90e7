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
# bench/regress lists which kernel each check runs on and the verdict
# expected there (`regress`).
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

KERNEL_SH=$SUITE_ROOT/bench/kernel.sh
GUEST=$SUITE_ROOT/bench/guest.sh
RESULTS=${RESULTS:-$SUITE_ROOT/results}
CHECKS=(kmalloc nomemcg)
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
                 the kernels bench/regress runs (the checks named, or all)
  table RUN_DIR [--expect FILE]
                 the verdicts of a run; with --expect (bench/regress), whether
                 each is the one expected

Checks: ${CHECKS[*]}. A kernel may be an arm: K@slubdebug boots with SLUB
debugging (red zones, poisoning) on every cache.
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
		kdir=$("$KERNEL_SH" path "$(arm_kernel "$k")") || exit $?
		"files_$check" "$kdir" > /dev/null
	done
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
		tmp=$(mktemp -d)
		"guest_$check" > "$tmp/$check.sh"
		with=(--with "$tmp/$check.sh")
		kdir=$("$KERNEL_SH" path "$v")
		while read -r f; do with+=(--with "$f"); done < <("files_$check" "$kdir")
		{
			echo "# seed check $check"
			echo "memory = 2G"
			echo "cpus = 2"
			echo "swap = 0"
			echo "command = sh /mnt/job/$check.sh"
			"conf_$check"
		} > "$tmp/job.conf"
		rc=0
		LOG_TAG="seeds $check" "$GUEST" run "$k" "$tmp/job.conf" "$dir" "${with[@]}" || rc=$?
		rm -rf "$tmp"
		[ "$rc" = "$EX_USAGE" ] && die "[$k] $check: the job was refused (above)"
	done
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
		# best listed last).
		awk '!seen[$2]++ { print $2 }' <<< "$out"
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
