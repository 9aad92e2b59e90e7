# Shell helpers shared by the suite's scripts. Source it; do not run it.
# shellcheck shell=bash
# Variables here are for the scripts that source this file.
# shellcheck disable=SC2034

# The repository root, wherever the caller was started from.
SUITE_ROOT=${SUITE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
# Everything built or unpacked lives under here; git ignores it.
BUILD_DIR=${BUILD_DIR:-$SUITE_ROOT/build}

PROG=${PROG:-$(basename "$0")}

# Exit codes, as in kselftest: 0 ok, 1 failure, 2 usage, 4 skipped.
EX_FAIL=1
EX_USAGE=2
EX_SKIP=4

die() {
	echo "$PROG: $*" >&2
	exit "$EX_FAIL"
}

usage_error() {
	echo "$PROG: $*" >&2
	exit "$EX_USAGE"
}

log() {
	echo "$PROG: $*" >&2
}

# Verbose mode (V=1) echoes external commands before running them.
run() {
	if [ "${V:-0}" = 1 ]; then
		echo "+ $*" >&2
	fi
	"$@"
}

sha256_of_files() {
	cat "$@" | sha256sum | cut -d' ' -f1
}

sha256_of_string() {
	printf '%s' "$1" | sha256sum | cut -d' ' -f1
}

# Quote a string as a JSON string literal. Control characters other than tab
# and newline (terminal escapes in console logs, carriage returns) are dropped.
json_str() {
	local s
	s=$(printf '%s' "$1" | tr -d '\000-\010\013-\037')
	s=${s//\\/\\\\}
	s=${s//\"/\\\"}
	s=${s//$'\t'/\\t}
	s=${s//$'\n'/\\n}
	printf '"%s"' "$s"
}

# debian_root SUITE PACKAGES OUT LOG: a minimal Debian root (mmdebstrap's
# minbase: the essential set and apt) plus PACKAGES (comma-separated), as
# OUT (a directory, or a .tar), without manual pages, docs or locales, from
# this machine's apt sources. On failure: the log's tail, OUT removed, 1.
debian_root() {
	local suite=$1 packages=$2 out=$3 logfile=$4
	if ! run mmdebstrap --variant=minbase --include="$packages" \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		"$suite" "$out" > "$logfile" 2>&1; then
		rm -rf "$out"
		tail -n 20 "$logfile" | sed 's/^/  /' >&2
		return 1
	fi
}

# Write stdin to FILE atomically: readers see the old file or the new one.
write_atomic() {
	local file=$1
	cat > "$file.tmp.$$" && mv -f "$file.tmp.$$" "$file"
}

shell_quote() {
	printf "'%s'" "${1//\'/\'\\\'\'}"
}

# ---------------------------------------------------------------------------
# The job contract (job and scenario files, arms, the JSON files) is
# bench/jobs.py's; these are its doors for the shell scripts.
JOBS_PY=${JOBS_PY:-$SUITE_ROOT/bench/jobs.py}

# job_ok RUNDIR: whether guest.sh's verdict in RUNDIR/result.json is ok.
# A missing or damaged file, or one of another schema, is not ok.
job_ok() {
	/usr/bin/python3 "$JOBS_PY" job-ok "$1" 2> /dev/null
}

# The variant behind kernel $1 (K or K@ARM); a usage error for an unknown
# arm, naming the arms of bench/arms.
arm_kernel() {
	/usr/bin/python3 "$JOBS_PY" variant "$1" || exit "$EX_USAGE"
}

# Fails with a usage error unless $1 is a variant name or K@ARM.
arm_check() {
	arm_kernel "$1" > /dev/null
}

# ---------------------------------------------------------------------------
# Guest jobs here or on other hosts (make peers and make regress with
# HOSTS=FILE, which sets BENCH_HOSTS): a script prepares each job,
# guest_job runs it or queues it, guest_queue_run runs the queue on the
# hosts with bench/hosts.py.

# guest_queue_start DIR: with BENCH_HOSTS set, queue the guest jobs that
# follow in DIR instead of running them here. DIR is emptied first (its
# joblog and what an earlier run set aside go too): a re-run queues only
# what its caller would run again.
guest_queue_start() {
	unset GUEST_QUEUE
	[ -n "${BENCH_HOSTS:-}" ] || return 0
	[ -f "$BENCH_HOSTS" ] || usage_error "hosts file '$BENCH_HOSTS' not found"
	rm -rf "$1"
	mkdir -p "$1/jobs" || die "cannot make the queue $1"
	: > "$1/jobs.tsv" || die "cannot make the queue $1"
	GUEST_QUEUE=$1
}

# guest_job KEY KERNEL JOB RUNDIR [--with FILE]...: guest.sh run, here; or,
# queued (guest_queue_start), the job file (checked as KERNEL runs it) and
# files kept for a host. Jobs of one KEY run on one host, one after the
# other.
guest_job() {
	local key=$1 k=$2 conf=$3 dir=$4 id jdir
	shift 4
	if [ -z "${GUEST_QUEUE:-}" ]; then
		"$SUITE_ROOT/bench/guest.sh" run "$k" "$conf" "$dir" "$@"
		return
	fi
	"$SUITE_ROOT/bench/guest.sh" check-job "$conf" "$k" > /dev/null || return "$EX_USAGE"
	id=j$(printf '%04d' $(($(wc -l < "$GUEST_QUEUE/jobs.tsv") + 1)))
	jdir=$GUEST_QUEUE/jobs/$id
	mkdir -p "$jdir" || die "cannot make $jdir"
	cp "$conf" "$jdir/job.conf" || die "cannot queue $conf in $jdir"
	while [ $# -gt 0 ]; do
		if [ "$1" != --with ] || [ $# -lt 2 ] || [ ! -f "$2" ]; then
			die "guest_job: only --with FILE (an existing file) may follow, not: $*"
		fi
		[ ! -e "$jdir/${2##*/}" ] || die "guest_job: two files named '${2##*/}' (or job.conf) for $id"
		cp "$2" "$jdir/" || die "cannot queue $2 in $jdir"
		shift 2
	done
	printf '%s\t%s\t%s\t%s\n' "$id" "$k" "$(realpath -m "$dir")" "$key" >> "$GUEST_QUEUE/jobs.tsv" ||
		die "cannot queue $id in $GUEST_QUEUE/jobs.tsv"
	log "[$k] $key: queued for the hosts of $BENCH_HOSTS ($id)"
}

# guest_queue_run: run what guest_job queued on the hosts of $BENCH_HOSTS; 0 if
# every job came back (its verdict is the caller's to judge).
guest_queue_run() {
	[ -n "${GUEST_QUEUE:-}" ] || return 0
	[ -s "$GUEST_QUEUE/jobs.tsv" ] || return 0
	/usr/bin/python3 "$SUITE_ROOT/bench/hosts.py" guest-jobs "$GUEST_QUEUE" "$BENCH_HOSTS"
}
