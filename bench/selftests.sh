#!/usr/bin/env bash
# The kernel's own memory-cgroup selftests (test_memcontrol) as an
# independent check of the suite's kernels: built from each variant's tree,
# run in the guest under systemd's cgroup2 mount (which has
# memory_recursiveprot) and then remounted without it (as upstream intends),
# REPEAT times each, TAP kept per kernel, mount and repeat. Run with no
# arguments for usage.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

KERNEL_SH=$SUITE_ROOT/bench/kernel.sh
RESULTS=${RESULTS:-$SUITE_ROOT/results}
OUT=${SELFTESTS_OUT:-$BUILD_DIR/selftests}
PATCHES=$SUITE_ROOT/patches/selftests
SELFTESTS=tools/testing/selftests
# The selftest's own Makefile builds with these, and so must we: with -O2,
# gcc drops alloc_anon()'s stores to memory it then frees, and nothing is
# ever charged.
CFLAGS=(-Wall -pthread)
# How many times test_memcontrol runs under each mount (about 15 s a time).
REPEAT=3

usage() {
	cat <<EOF2
usage: $PROG COMMAND [ARGS]

  build VARIANT...           build test_memcontrol from each variant's tree
                             (plus patches/selftests) into $OUT/VARIANT
  run RUN_ID KERNEL... [--repeat N]
                             run it in a guest per kernel, N times under
                             each mount (default $REPEAT), into
                             $RESULTS/RUN_ID/peers/selftests/KERNEL
  table RUN_DIR              the pass/fail/skip table of a run

A kernel may be an arm: K@mglru runs the tests with MGLRU on, K@zswap with
zswap on (swap writes end at once; docs/results/2026-12-03-selftests.md says
why test_memcg_swap_max needs it). With BENCH_HOSTS=FILE (make peers
HOSTS=FILE), the guest jobs run on the hosts of FILE, a kernel a block
(docs/hosts.md).
EOF2
}

build_one() {
	local v=$1 dir=$OUT/$1 p src
	mkdir -p "$dir"
	"$KERNEL_SH" export-selftests "$v" "$dir"
	src=$dir/src
	for p in "$PATCHES"/*.patch; do
		[ -f "$p" ] || continue
		patch -s -p1 -d "$src" < "$p" || die "$(basename "$p") does not apply to $v's selftests"
	done
	gcc "${CFLAGS[@]}" -isystem "$dir/usr/include" -o "$dir/test_memcontrol.tmp" \
		"$src/$SELFTESTS/cgroup/test_memcontrol.c" "$src/$SELFTESTS/cgroup/cgroup_util.c" ||
		die "test_memcontrol does not build for $v"
	mv "$dir/test_memcontrol.tmp" "$dir/test_memcontrol"
	{
		echo "{"
		echo "  \"variant\": $(json_str "$v"),"
		echo "  \"sources_sha256\": $(json_str "$(cd "$src" && find . -type f | sort | xargs sha256sum | sha256sum | cut -d' ' -f1)"),"
		echo "  \"patches\": $(json_str "$(for p in "$PATCHES"/*.patch; do [ -f "$p" ] && basename "$p"; done | paste -s -d' ' -)"),"
		echo "  \"compiler\": $(json_str "$(gcc --version | sed -n 1p)"),"
		echo "  \"built_at\": $(json_str "$(date -u +%Y-%m-%dT%H:%M:%SZ)")"
		echo "}"
	} | write_atomic "$dir/manifest.json"
	log "[$v] $dir/test_memcontrol"
}

cmd_build() {
	local v
	[ $# -gt 0 ] || usage_error "usage: $PROG build VARIANT..."
	for v in "$@"; do
		arm_check "$v"
		build_one "$(arm_kernel "$v")"
	done
}

# The guest side: a shell script the agent runs in its output directory.
guest_script() {
	cat <<'EOF2'
#!/bin/sh
# Run test_memcontrol from ext4 (it makes page cache there), $1 times under
# the cgroup2 mount as systemd made it and as often without
# memory_recursiveprot. Leaves MOUNT.mount and MOUNT-rN.{tap,status}.
set -u
repeat=$1
out=$PWD
work=/var/tmp/selftests
mkdir -p "$work" && cp /mnt/job/test_memcontrol "$work/" && chmod +x "$work/test_memcontrol" || exit 1
cd "$work" || exit 1
run() {
	grep ' cgroup2 ' /proc/mounts > "$out/$1.mount"
	i=1
	while [ "$i" -le "$repeat" ]; do
		echo "selftests: test_memcontrol, $1 mount, $i of $repeat" > /dev/console
		timeout 300 stdbuf -oL ./test_memcontrol > "$out/$1-r$i.tap.tmp" 2>&1
		echo $? > "$out/$1-r$i.status"
		mv "$out/$1-r$i.tap.tmp" "$out/$1-r$i.tap"
		i=$((i + 1))
	done
}
run recursiveprot
opts=$(awk '$3 == "cgroup2" { print $4 }' /proc/mounts | tr ',' '\n' |
	grep -E '^(nsdelegate|memory_localevents)$' | paste -s -d, -)
# Only these options: mount(8) would otherwise merge in the current ones.
mount --options-source=disable -o "remount${opts:+,$opts}" /sys/fs/cgroup || exit 1
if grep -q ' cgroup2 .*memory_recursiveprot' /proc/mounts; then
	echo "memory_recursiveprot could not be dropped" >&2
	exit 1
fi
run plain
exit 0
EOF2
}

cmd_run() {
	local id=$1 k v dir tmp n failed=0 repeat=$REPEAT kernels=()
	shift
	while [ $# -gt 0 ]; do
		case "$1" in
		--repeat)
			[ $# -ge 2 ] || usage_error "--repeat needs a number"
			repeat=$2
			shift 2
			;;
		-*) usage_error "unknown option '$1'" ;;
		*)
			kernels+=("$1")
			shift
			;;
		esac
	done
	[ ${#kernels[@]} -gt 0 ] || usage_error "usage: $PROG run RUN_ID KERNEL... [--repeat N]"
	[[ "$id" =~ ^[A-Za-z0-9._-]+$ ]] || usage_error "run id '$id' may only hold letters, digits, '.', '_', '-'"
	[[ "$repeat" =~ ^[1-9][0-9]?$ ]] || usage_error "--repeat must be a number from 1 to 99"
	for k in "${kernels[@]}"; do
		arm_check "$k"
		[[ "$k" != *@norecursive ]] ||
			usage_error "kernel '$k': the selftests run under both mounts already; drop @norecursive"
		v=$(arm_kernel "$k")
		"$KERNEL_SH" path "$v" > /dev/null || exit $?
		[ -x "$OUT/$v/test_memcontrol" ] || die "no selftests built for $v; run: $PROG build $v"
	done
	# With HOSTS, the guest jobs are queued and run on those hosts after
	# this loop; each kernel's job (its repeats run in one guest) is a
	# block of its own, so the kernels spread over the hosts.
	guest_queue_start "$RESULTS/$id/.hosts/peers"
	n=0
	for k in "${kernels[@]}"; do
		n=$((n + 1))
		v=$(arm_kernel "$k")
		dir=$RESULTS/$id/peers/selftests/$k
		if job_ok "$dir"; then
			log "[$k] done already, kept: $dir"
			continue
		fi
		# About 13 s a test_memcontrol run and 15 s for boot and shutdown
		# (measured: 71-96 s a kernel with 3 runs under each mount).
		log "[$k] kernel $n of ${#kernels[@]}: $repeat runs under each mount, about $((15 + 26 * repeat))s"
		rm -rf "$dir"
		mkdir -p "$(dirname "$dir")"
		tmp=$(mktemp -d)
		guest_script > "$tmp/selftests.sh"
		cp "$OUT/$v/test_memcontrol" "$OUT/$v/manifest.json" "$tmp/"
		{
			echo "# test_memcontrol from $v's tree"
			echo "memory = 2G"
			echo "cpus = 2"
			echo "swap = 1G"
			echo "timeout = $((60 + 2 * repeat * 300))"
			echo "lru_gen = off"
			echo "zswap = off"
			# test_memcg_kmem: slab memory charged to cgroups.
			echo "needs = CONFIG_MEMCG_KMEM"
			echo "command = sh /mnt/job/selftests.sh $repeat"
		} > "$tmp/job.conf"
		LOG_TAG="selftests" guest_job "$k" "$k" "$tmp/job.conf" "$dir" --with "$tmp/selftests.sh" \
			--with "$tmp/test_memcontrol" --with "$tmp/manifest.json" || failed=$((failed + 1))
		rm -rf "$tmp"
	done
	if [ -n "${GUEST_QUEUE:-}" ]; then
		# Queued, a job counts here once it is back: as a local run does,
		# count each kernel whose job is not ok.
		guest_queue_run || true
		for k in "${kernels[@]}"; do
			job_ok "$RESULTS/$id/peers/selftests/$k" || failed=$((failed + 1))
		done
	fi
	cmd_table "$RESULTS/$id" || true
	[ "$failed" = 0 ]
}

cmd_table() {
	[ -x /usr/bin/python3 ] || die "/usr/bin/python3 not found; run: make deps"
	/usr/bin/python3 "$SUITE_ROOT/analysis/peers.py" "$1"
}

main() {
	local cmd=${1:-}
	[ $# -gt 0 ] && shift
	case "$cmd" in
	build) cmd_build "$@" ;;
	run)
		[ $# -ge 1 ] || usage_error "usage: $PROG run RUN_ID KERNEL... [--repeat N]"
		cmd_run "$@"
		;;
	table)
		[ $# -eq 1 ] || usage_error "usage: $PROG table RUN_DIR"
		cmd_table "$1"
		;;
	"" | -h | --help | help) usage ;;
	*) usage >&2; exit "$EX_USAGE" ;;
	esac
}

main "$@"
