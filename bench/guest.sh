#!/usr/bin/env bash
# Boot a kernel variant in a QEMU guest and run one job in it.
#
# The QEMU command line is built in one place (qemu_command) and can be
# printed instead of run (--dry-run). Run with no arguments for usage.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

KOUT=${KOUT:-$BUILD_DIR/kernels}
ROOTFS=${ROOTFS:-$BUILD_DIR/rootfs/rootfs.ext4}
ACCEL=${ACCEL:-auto}
QEMU=${QEMU:-qemu-system-x86_64}
# Seconds a KVM boot gets to print the kernel banner before we call KVM broken.
KVM_PROBE_SECONDS=${KVM_PROBE_SECONDS:-6}

# Exit codes of `run`, beyond lib.sh's 0/1/2.
EX_TIMEOUT=3
EX_PANIC=5
EX_NOSTATUS=6
EX_QEMU=7

usage() {
	cat <<EOF
usage: $PROG COMMAND [ARGS]

  run KERNEL JOB RUNDIR [--dry-run] [--with FILE]...
                    boot KERNEL, run the job file JOB, leave everything in
                    RUNDIR (which must not exist, or be empty); each --with
                    FILE is copied into the guest's share (/mnt/job).
                    KERNEL may be an arm, K@ARM: variant K with the job
                    keys bench/arms gives ARM (RUNDIR/job.conf has them)
  shell KERNEL [--dry-run] [key=value...]
                    boot KERNEL to a root shell on this terminal
  check-job JOB [KERNEL]
                    validate a job file without booting anything; with
                    KERNEL, also as that kernel (or arm) would run it
  accel KERNEL      print the accelerator auto-detection picks for KERNEL

Exit status of run (and result.json's "result"): 0 ok, 1 the job failed
(agent-error), 2 bad input, $EX_TIMEOUT timeout, $EX_PANIC kernel panic (panic),
$EX_NOSTATUS the guest stopped without a status (no-status), $EX_QEMU QEMU failed
to start, exited with an error or was killed (qemu-error).
Environment: ACCEL=auto|kvm|tcg, ROOTFS, KOUT, V=1, LOG_KERNEL (the kernel's
name in log lines), LOG_TAG (more words for the progress lines).
EOF
}

# ---------------------------------------------------------------------------
# Job files: "key = value" lines. Their keys, types and checks, the arms and
# the JSON files written here are bench/jobs.py's (JOB_KEYS).
JOBS=(/usr/bin/python3 "$SUITE_ROOT/bench/jobs.py")

# job_values KERNEL JOB: set JOB_VARIANT, JOB_ARM, JOB_MEMORY(_BYTES),
# JOB_CPUS, JOB_TIMEOUT, JOB_DISK_BYTES, JOB_CMDLINE and JOB_NEEDS from job file JOB as
# KERNEL (K or K@ARM) runs it; refused with the file's lines named (exit 2).
job_values() {
	local values
	values=$("${JOBS[@]}" job-values "$1" "$2") || exit "$EX_USAGE"
	eval "$values"
}

# ---------------------------------------------------------------------------
# Kernels, image, accelerator

# check_needs KERNEL KDIR: refuse (exit 2) a kernel whose config lacks an
# option of the job's needs (JOB_NEEDS), naming it and what asked for it.
check_needs() {
	local opt
	for opt in $JOB_NEEDS; do
		grep -qE "^$opt=[ym]$" "$2/config" 2> /dev/null && continue
		usage_error "kernel '$1' has no $opt (its config: $2/config), which this job needs" \
			"(needs = $JOB_NEEDS${JOB_ARM:+, with arm $JOB_ARM})"
	done
}

kernel_dir() {
	local dir=$KOUT/$1
	if [ ! -f "$dir/bzImage" ]; then
		if "$SUITE_ROOT/bench/kernel.sh" list 2> /dev/null | awk '{ print $1 }' | grep -qxF "$1"; then
			die "kernel '$1' is not built; build it with: make kernel K=$1"
		fi
		"$SUITE_ROOT/bench/kernel.sh" path "$1" > /dev/null || exit $?
		die "kernel '$1' not found"
	fi
	echo "$dir"
}

need_rootfs() {
	[ -f "$ROOTFS" ] || die "guest image '$ROOTFS' not found; build it with: make rootfs"
}

kvm_usable_device() {
	[ -r /dev/kvm ] && [ -w /dev/kvm ]
}

# Does KVM boot this kernel? A nested hypervisor may offer /dev/kvm and still
# hang right after "Decompressing Linux...", so boot it and look for the
# kernel's banner on the console. The answer is cached per kernel and host.
kvm_works() {
	local bz=$1 key cache dir pid i ok=1
	kvm_usable_device || return 1
	key=$(sha256_of_string "$(sha256sum < "$bz")$(uname -r)$("$QEMU" --version | sed -n '1,1p')")
	cache=$BUILD_DIR/accel/$key
	if [ -f "$cache" ]; then
		[ "$(cat "$cache")" = kvm ]
		return
	fi
	dir=$(mktemp -d)
	"$QEMU" -accel kvm -cpu host -m 256M -display none -monitor none -no-reboot \
		-nic none -serial "file:$dir/console" -kernel "$bz" \
		-append "console=ttyS0 panic=-1 root=/dev/null" > /dev/null 2>&1 &
	pid=$!
	for ((i = 0; i < KVM_PROBE_SECONDS * 10; i++)); do
		if grep -q "Linux version" "$dir/console" 2> /dev/null; then
			ok=0
			break
		fi
		kill -0 "$pid" 2> /dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2> /dev/null || true
	wait "$pid" 2> /dev/null || true
	rm -rf "$dir"
	mkdir -p "$BUILD_DIR/accel"
	if [ "$ok" = 0 ]; then echo kvm; else echo tcg; fi > "$cache"
	return "$ok"
}

# The accelerator to use for kernel image $1.
pick_accel() {
	case "$ACCEL" in
	kvm)
		kvm_usable_device || die "ACCEL=kvm, but /dev/kvm is not usable"
		echo kvm
		;;
	tcg) echo tcg ;;
	auto)
		# QEMU dying in the probe is an answer, not an error to show.
		if kvm_works "$1" 2> /dev/null; then echo kvm; else echo tcg; fi
		;;
	*) usage_error "ACCEL must be auto, kvm or tcg, not '$ACCEL'" ;;
	esac
}

# ---------------------------------------------------------------------------
# The QEMU command line, in one place. Prints one argument per line.
#   qemu_command MODE BZIMAGE ACCEL MEMORY CPUS DISK SHARE CONSOLE EXTRA
# MODE is job (console to CONSOLE, boot to bench.target) or shell (console on
# this terminal). SHARE may be empty (no 9p share).
qemu_command() {
	local mode=$1 bz=$2 accel=$3 mem=$4 cpus=$5 disk=$6 share=$7 console=$8 extra=$9
	local append="root=/dev/vda rw console=ttyS0 panic=-1 psi=1"
	[ "$mode" = job ] && append="$append systemd.unit=bench.target"
	[ -n "$extra" ] && append="$append $extra"
	printf '%s\n' "$QEMU" -nodefaults -no-user-config -no-reboot
	case "$accel" in
	kvm) printf '%s\n' -accel kvm -cpu host ;;
	tcg) printf '%s\n' -accel tcg,thread=multi -cpu max ;;
	esac
	printf '%s\n' -m "$((mem / 1024 / 1024))M" -smp "$cpus" \
		-kernel "$bz" -append "$append" \
		-drive "file=$disk,format=qcow2,if=virtio,cache=unsafe" \
		-nic none -display none
	if [ -n "$share" ]; then
		printf '%s\n' -virtfs "local,path=$share,mount_tag=job,security_model=none,id=job"
	fi
	if [ "$mode" = job ]; then
		printf '%s\n' -monitor none -serial "file:$console"
	else
		printf '%s\n' -serial mon:stdio
	fi
}

print_command() {
	local arg first=1
	while IFS= read -r arg; do
		[ "$first" = 1 ] || printf ' '
		first=0
		if [[ "$arg" =~ ^[A-Za-z0-9_./:=,+-]+$ ]]; then
			printf '%s' "$arg"
		else
			shell_quote "$arg"
		fi
	done
	printf '\n'
}

# A throw-away copy-on-write overlay of the image, $2 bytes large.
make_overlay() {
	run qemu-img create -q -f qcow2 -F raw -b "$(readlink -f "$ROOTFS")" "$1" "$2" > /dev/null ||
		die "cannot create the overlay '$1'"
}

# ---------------------------------------------------------------------------
# Commands

now_ms() {
	date +%s%3N
}

# How QEMU ended, from the exit status wait gave: "QEMU exited with
# status 1", "QEMU was killed by signal 9 (KILL)".
qemu_exit_text() {
	local rc=$1
	if [ "$rc" -gt 128 ] && [ "$rc" -lt 160 ]; then
		echo "QEMU was killed by signal $((rc - 128)) ($(kill -l "$((rc - 128))" 2> /dev/null || echo '?'))"
	elif [ "$rc" = 127 ]; then
		echo "QEMU could not be started (status 127)"
	else
		echo "QEMU exited with status $rc"
	fi
}

cmd_run() {
	local kernel=$1 jobfile=$2 rundir=$3 dry="" kdir accel mem cpus timeout
	local start pid agent=null elapsed verdict detail status rc qemu_rc f progress="" p
	local -a with=()
	shift 3
	while [ $# -gt 0 ]; do
		case "$1" in
		--dry-run) dry=$1 ;;
		--with)
			if [ $# -lt 2 ] || [ ! -f "$2" ]; then
				usage_error "--with needs an existing file"
			fi
			with+=("$2")
			shift
			;;
		*) usage_error "unknown option '$1'" ;;
		esac
		shift
	done
	# K@ARM: variant K, with the job keys bench/arms gives ARM.
	job_values "$kernel" "$jobfile"
	local full=$kernel
	kernel=$JOB_VARIANT
	kdir=$(kernel_dir "$kernel")
	check_needs "$full" "$kdir"
	need_rootfs
	mem=$JOB_MEMORY_BYTES
	cpus=$JOB_CPUS
	timeout=$JOB_TIMEOUT
	if [ "$dry" = --dry-run ]; then
		qemu_command job "$kdir/bzImage" "$(pick_accel "$kdir/bzImage")" "$mem" "$cpus" \
			"$rundir/disk.qcow2" "$rundir/guest" "$rundir/console.log" "$JOB_CMDLINE" | print_command
		return 0
	fi
	if [ -e "$rundir" ] && [ -n "$(ls -A "$rundir")" ]; then
		usage_error "run directory '$rundir' is not empty; give a new one"
	fi
	mkdir -p "$rundir/guest"
	rundir=$(cd "$rundir" && pwd)
	# job.conf as run (the arm applied), and the agent's guest/job.env.
	"${JOBS[@]}" job-write "$full" "$jobfile" "$rundir" || die "cannot write the job into '$rundir'"
	for f in "${with[@]}"; do
		cp "$f" "$rundir/guest/"
	done
	# How the log names the kernel: the caller may say more than the
	# variant (an arm such as patched@mglru).
	local name=${LOG_KERNEL:-$full}
	accel=$(pick_accel "$kdir/bzImage")
	make_overlay "$rundir/disk.qcow2" "$JOB_DISK_BYTES"
	qemu_command job "$kdir/bzImage" "$accel" "$mem" "$cpus" "$rundir/disk.qcow2" \
		"$rundir/guest" "$rundir/console.log" "$JOB_CMDLINE" > "$rundir/qemu.cmd"
	log "[$name] booting ($accel, $JOB_MEMORY, $cpus CPUs, deadline ${timeout}s): $rundir"

	local -a argv
	mapfile -t argv < "$rundir/qemu.cmd"
	start=$(now_ms)
	"${argv[@]}" > "$rundir/qemu.log" 2>&1 &
	pid=$!
	# Stopped from outside (make bench interrupted): QEMU goes too, and so
	# does the overlay, whatever ends this script.
	# shellcheck disable=SC2064
	trap "rm -f $(shell_quote "$rundir/disk.qcow2")" EXIT
	# shellcheck disable=SC2064
	trap "kill -KILL $pid 2> /dev/null; exit 143" TERM
	# shellcheck disable=SC2064
	trap "kill -KILL $pid 2> /dev/null; exit 130" INT
	verdict=""
	while kill -0 "$pid" 2> /dev/null; do
		# The job may report its progress in out/progress; show each change.
		p=$(cat "$rundir/guest/out/progress" 2> /dev/null || true)
		if [ -n "$p" ] && [ "$p" != "$progress" ]; then
			progress=$p
			log "[$name${LOG_TAG:+ $LOG_TAG}] $p ($(awk -v s="$start" -v n="$(now_ms)" 'BEGIN { printf "%d", (n - s) / 1000 }')s)"
		fi
		if [ "$agent" = null ] && [ -f "$rundir/guest/agent-started" ]; then
			agent=$(awk -v s="$start" -v n="$(now_ms)" 'BEGIN { printf "%.2f", (n - s) / 1000 }')
			log "[$name] agent started ${agent}s after QEMU"
		fi
		if [ $(($(now_ms) - start)) -ge $((timeout * 1000)) ]; then
			verdict=timeout
			kill -TERM "$pid" 2> /dev/null || true
			sleep 1
			kill -KILL "$pid" 2> /dev/null || true
			break
		fi
		sleep 0.2
	done
	# QEMU's own exit status; non-zero must not end this script (set -e).
	qemu_rc=0
	wait "$pid" 2> /dev/null || qemu_rc=$?
	trap - TERM INT
	elapsed=$(awk -v s="$start" -v n="$(now_ms)" 'BEGIN { printf "%.2f", (n - s) / 1000 }')
	rm -f "$rundir/disk.qcow2"

	status=$(cat "$rundir/guest/status" 2> /dev/null || true)
	if [ "$verdict" = timeout ]; then
		detail="killed after the ${timeout}s deadline"
		rc=$EX_TIMEOUT
	elif grep -q "Kernel panic" "$rundir/console.log" 2> /dev/null; then
		verdict=panic
		detail=$(grep -m 1 "Kernel panic" "$rundir/console.log" | tr -d '\r')
		rc=$EX_PANIC
	elif [ "$status" = ok ]; then
		verdict=ok
		detail="the job finished"
		rc=0
	elif [ -n "$status" ]; then
		verdict="agent-error"
		detail=$status
		rc=$EX_FAIL
	elif [ "$qemu_rc" != 0 ]; then
		verdict=qemu-error
		detail="$(qemu_exit_text "$qemu_rc") without a status from the agent"
		p=$(grep -v '^[[:space:]]*$' "$rundir/qemu.log" 2> /dev/null | tail -n 1 || true)
		[ -z "$p" ] || detail="$detail; its last words: $p"
		rc=$EX_QEMU
	else
		verdict=no-status
		detail="the guest powered off without a status from the agent"
		rc=$EX_NOSTATUS
	fi
	# The verdict and what ran it; a failure here is the suite's, not the job's.
	"${JOBS[@]}" result "$rundir" "$verdict" "$detail" "$elapsed" "$agent" ||
		die "cannot write $rundir/result.json"
	"${JOBS[@]}" meta "$rundir" "$full" "$kdir" "$accel" "$ROOTFS" \
		"$("$QEMU" --version 2> /dev/null | sed -n '1,1p')" || log "cannot write $rundir/meta.json"
	if [ "$rc" = 0 ]; then
		log "[$name] ok in ${elapsed}s"
	else
		log "[$name] $verdict: $detail (console: $rundir/console.log)"
		{ tail -n 5 "$rundir/console.log" 2> /dev/null || true; } | tr -d '\r' | sed 's/^/  | /' >&2
	fi
	return "$rc"
}

cmd_shell() {
	local kernel=$1 dry="" kdir tmp accel
	shift
	if [ "${1:-}" = --dry-run ]; then dry=1; shift; fi
	tmp=$(mktemp -d)
	# shellcheck disable=SC2064
	trap "rm -rf '$tmp'" EXIT
	printf '%s\n' "$@" > "$tmp/job.conf"
	job_values "$kernel" "$tmp/job.conf"
	kernel=$JOB_VARIANT
	kdir=$(kernel_dir "$kernel")
	need_rootfs
	accel=$(pick_accel "$kdir/bzImage")
	qemu_command shell "$kdir/bzImage" "$accel" "$JOB_MEMORY_BYTES" \
		"$JOB_CPUS" "$tmp/disk.qcow2" "" "" "$JOB_CMDLINE" > "$tmp/qemu.cmd"
	if [ -n "$dry" ]; then
		print_command < "$tmp/qemu.cmd"
		return 0
	fi
	make_overlay "$tmp/disk.qcow2" "$JOB_DISK_BYTES"
	log "booting $kernel ($accel); root shell on this terminal; Ctrl-A x quits QEMU"
	local -a argv
	mapfile -t argv < "$tmp/qemu.cmd"
	"${argv[@]}"
}

main() {
	local cmd=${1:-}
	[ $# -gt 0 ] && shift
	case "$cmd" in
	run)
		[ $# -ge 3 ] || usage_error "usage: $PROG run KERNEL JOB RUNDIR [--dry-run] [--with FILE]..."
		cmd_run "$@"
		;;
	shell)
		[ $# -ge 1 ] || usage_error "usage: $PROG shell KERNEL [--dry-run] [key=value...]"
		cmd_shell "$@"
		;;
	check-job)
		[ $# -eq 1 ] || [ $# -eq 2 ] || usage_error "usage: $PROG check-job JOB [KERNEL]"
		"${JOBS[@]}" job-check "$1" || exit "$EX_USAGE"
		if [ $# -eq 2 ]; then
			# As KERNEL runs it: the arm's keys, and what the job needs of
			# the kernel's config.
			job_values "$2" "$1"
			kdir=$(kernel_dir "$JOB_VARIANT")
			check_needs "$2" "$kdir"
		fi
		;;
	accel)
		[ $# -eq 1 ] || usage_error "usage: $PROG accel KERNEL"
		pick_accel "$(kernel_dir "$1")/bzImage"
		;;
	"" | -h | --help | help) usage ;;
	*) usage >&2; exit "$EX_USAGE" ;;
	esac
}

main "$@"
