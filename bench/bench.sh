#!/usr/bin/env bash
# The A/B experiment: run scenarios on kernels, each (kernel, scenario,
# repeat) a self-contained job in a fresh boot, interleaved across kernels,
# resumable; then print the per-step table. Run with no arguments for usage.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

SCENARIO_DIR=${SCENARIO_DIR:-$SUITE_ROOT/bench/scenarios}
RESULTS=${RESULTS:-$SUITE_ROOT/results}
GUEST=$SUITE_ROOT/bench/guest.sh
# Seconds a job gets beyond its scenario's own time: boot, start, stop.
JOB_SLACK=180

usage() {
	cat <<EOF
usage: $PROG COMMAND [ARGS]

  run RUN_ID [options]       run the matrix into $RESULTS/RUN_ID (resumes:
                             finished jobs are kept, others run again)
      --kernels "A B"        kernels (default: control patched); an arm
                             K@mglru runs kernel K with MGLRU on in the
                             guest, K@zswap with zswap on
      --scenarios "S T"      scenarios (default: low-steps)
      --repeat N             repeats (default: the scenario's; quick: 1)
      --profile P            full (default) or quick
  one RUN_ID KERNEL SCENARIO REPEAT [--profile P]
                             run one job of the matrix
  check SCENARIO [--profile P]
                             validate a scenario without booting
  list                       the scenarios
  table RUN_DIR              print the per-step table of a run

Scenarios are bench/scenarios/NAME.conf.
EOF
}

# Every key a scenario may have: key, default, type (lib.sh's parse_kv).
# shellcheck disable=SC2034 # parse_kv reads it by name
SCENARIO_KEYS=(
	"description - string"
	"memory 2G size"
	"cpus 2 count"
	"swap 0 size"
	"lru_gen off onoff"
	"zswap off onoff"
	"knob low knob"
	"workload - string"
	"workload.low - size"
	"workload.min - size"
	"peer - string"
	"peer.low 0 size"
	"peer.min 0 size"
	"competitor - string"
	"reclaim - size"
	"reclaim.every - interval"
	"oom_ok off onoff"
	"warmup 30 seconds"
	"steps - steps"
	"settle 10 seconds"
	"window 30 seconds"
	"repeats 3 count"
	"quick.steps - steps"
	"quick.warmup - seconds"
	"quick.settle - seconds"
	"quick.window - seconds"
	"quick.repeats - count"
)

scenario_names() {
	local f
	for f in "$SCENARIO_DIR"/*.conf; do
		[ -f "$f" ] && basename "$f" .conf
	done
}

scenario_file() {
	local f=$SCENARIO_DIR/$1.conf
	if [ ! -f "$f" ]; then
		echo "$PROG: unknown scenario '$1'; known scenarios:" \
			"$(scenario_names | tr '\n' ' ')" >&2
		exit "$EX_USAGE"
	fi
	echo "$f"
}

# The size of a bench-load command line's --size, in bytes, or nothing.
workload_size() {
	local -a words
	read -ra words <<< "$1"
	for ((i = 0; i < ${#words[@]}; i++)); do
		case "${words[$i]}" in
		--size | -s | --stream | --anon | --max) size_bytes "${words[$((i + 1))]:-x}" 2> /dev/null || true ;;
		esac
	done
}

# Parse scenario $1 for profile $2, apply the profile, check what needs
# several values. Prints key<TAB>value lines; fails naming file, line (when
# the key is in the file) and key.
load_scenario() {
	local name=$1 profile=$2 file sc key q errors=0 mem prev="" word v kind prev_kind="" steps_key=steps
	file=$(scenario_file "$name")
	refuse() {
		kv_refuse "$file" "$@"
		errors=$((errors + 1))
	}
	sc=$(parse_kv "$file" SCENARIO_KEYS) || exit "$EX_USAGE"
	case "$profile" in
	full) ;;
	quick)
		for key in steps warmup settle window repeats; do
			q=$(kv_get "$sc" "quick.$key")
			[ -n "$q" ] && sc=$(printf '%s\n' "$sc" | awk -F'\t' -v k="$key" -v v="$q" \
				'BEGIN { OFS = "\t" } $1 == k { $2 = v } { print }')
		done
		[ -n "$(key_line "$file" quick.steps)" ] && steps_key=quick.steps
		;;
	*) usage_error "profile must be full or quick, not '$profile'" ;;
	esac
	mem=$(size_bytes "$(kv_get "$sc" memory)")
	for key in workload steps; do
		[ -n "$(kv_get "$sc" "$key")" ] || refuse "$key" "missing (it has no default)"
	done
	# The stepped knob cannot also be fixed.
	key=workload.$(kv_get "$sc" knob)
	[ -z "$(kv_get "$sc" "$key")" ] ||
		refuse "$key" "memory.$(kv_get "$sc" knob) is the knob this scenario steps"
	for key in workload.low workload.min peer.low peer.min; do
		v=$(kv_get "$sc" "$key")
		if [ -n "$v" ] && [ "$(size_bytes "$v")" -gt "$mem" ]; then
			refuse "$key" "$v exceeds the guest's memory ($(kv_get "$sc" memory))"
		fi
	done
	if [ -z "$(kv_get "$sc" peer)" ]; then
		for key in peer.low peer.min; do
			[ "$(kv_get "$sc" "$key")" = 0 ] || refuse "$key" "set, but there is no peer workload"
		done
	fi
	for key in workload peer competitor; do
		for v in $(workload_size "$(kv_get "$sc" "$key")"); do
			if [ "$v" -ge "$mem" ]; then
				refuse "$key" "$(kv_get "$sc" "$key") asks for more than the guest's $(kv_get "$sc" memory)"
			fi
		done
	done
	# Targeted reclaim: the amount and the cadence together, a competitor
	# to compare with, none of the global-pressure scenarios' own keys.
	if [ -n "$(kv_get "$sc" reclaim)" ] || [ -n "$(kv_get "$sc" reclaim.every)" ]; then
		v=$(kv_get "$sc" reclaim)
		if [ -z "$v" ]; then
			refuse reclaim "missing (reclaim.every is given: how much per request?)"
		elif [ "$(size_bytes "$v")" = 0 ]; then
			refuse reclaim "must be more than 0"
		elif [ "$(size_bytes "$v")" -ge "$mem" ]; then
			refuse reclaim "$v per request is not less than the guest's memory ($(kv_get "$sc" memory))"
		fi
		[ -n "$(kv_get "$sc" reclaim.every)" ] ||
			refuse reclaim.every "missing (reclaim is given: how often?)"
		[ -n "$(kv_get "$sc" competitor)" ] ||
			refuse competitor "missing (a targeted-reclaim scenario compares the workload with it)"
		for key in peer peer.low peer.min oom_ok; do
			[ -z "$(key_line "$file" "$key")" ] ||
				refuse "$key" "only for global-pressure scenarios, not with reclaim"
		done
	fi
	# Steps: all percentages or all sizes, going down, within the guest.
	for word in $(kv_get "$sc" steps); do
		if [[ "$word" == *% ]]; then
			kind=pct
			v=${word%\%}
			if awk -v v="$v" 'BEGIN { exit !(v > 200) }'; then
				refuse "$steps_key" "$word is more than 200% of the workload's usage"
			fi
		else
			kind=size
			v=$(size_bytes "$word")
			if [ "$v" -gt "$mem" ]; then
				refuse "$steps_key" "$word exceeds the guest's memory ($(kv_get "$sc" memory))"
			fi
		fi
		if [ -n "$prev_kind" ] && [ "$kind" != "$prev_kind" ]; then
			refuse "$steps_key" "mixes percentages and sizes"
		elif [ -n "$prev" ] && awk -v a="$prev" -v b="$v" 'BEGIN { exit !(b > a) }'; then
			refuse "$steps_key" "not going down ($word after a smaller step)"
		fi
		prev=$v
		prev_kind=$kind
	done
	[ "$errors" = 0 ] || exit "$EX_USAGE"
	printf '%s\n' "$sc"
}

scenario_seconds() {
	local sc=$1 n
	n=$(wc -w <<< "$(kv_get "$sc" steps)")
	echo $(($(kv_get "$sc" warmup) + n * ($(kv_get "$sc" settle) + $(kv_get "$sc" window))))
}

# Write the job file and the guest's scenario.env for scenario text $1 into
# $2. An arm's job keys are guest.sh's to apply (bench/arms).
write_job() {
	local sc=$1 dir=$2 key v
	{
		echo "# Made by bench.sh from scenario '$(kv_get "$sc" description)'"
		echo "memory = $(kv_get "$sc" memory)"
		echo "cpus = $(kv_get "$sc" cpus)"
		echo "swap = $(kv_get "$sc" swap)"
		echo "lru_gen = $(kv_get "$sc" lru_gen)"
		echo "zswap = $(kv_get "$sc" zswap)"
		echo "recursiveprot = on"
		echo "timeout = $(($(scenario_seconds "$sc") + JOB_SLACK))"
		echo "command = bench-scenario"
	} > "$dir/job.conf"
	{
		echo "SC_KNOB=$(shell_quote "$(kv_get "$sc" knob)")"
		echo "SC_MEMORY_BYTES=$(size_bytes "$(kv_get "$sc" memory)")"
		echo "SC_WORKLOAD=$(shell_quote "$(kv_get "$sc" workload)")"
		echo "SC_COMPETITOR=$(shell_quote "$(kv_get "$sc" competitor)")"
		echo "SC_PEER=$(shell_quote "$(kv_get "$sc" peer)")"
		# Fixed protection, in bytes; empty: not set.
		for key in workload.low workload.min peer.low peer.min; do
			v=$(kv_get "$sc" "$key")
			[ -n "$v" ] && v=$(size_bytes "$v")
			echo "SC_FIXED_${key//./_}=$v" | tr '[:lower:]' '[:upper:]'
		done
		echo "SC_OOM_OK=$(kv_get "$sc" oom_ok)"
		# Targeted reclaim: bytes per memory.reclaim request (empty: global
		# pressure), seconds between requests.
		v=$(kv_get "$sc" reclaim)
		[ -n "$v" ] && v=$(size_bytes "$v")
		echo "SC_RECLAIM_BYTES=$v"
		echo "SC_RECLAIM_EVERY=$(kv_get "$sc" reclaim.every)"
		echo "SC_WARMUP=$(kv_get "$sc" warmup)"
		echo "SC_STEPS=$(shell_quote "$(kv_get "$sc" steps)")"
		echo "SC_SETTLE=$(kv_get "$sc" settle)"
		echo "SC_WINDOW=$(kv_get "$sc" window)"
	} > "$dir/scenario.env"
}

job_dir() {
	echo "$1/$3/$2/r$4"
}

job_done() {
	job_ok "$1"
}

# Record a job's outcome in the run's manifest (one line per job, latest wins).
record() {
	local run=$1 scenario=$2 kernel=$3 repeat=$4 status=$5
	touch "$run/manifest.tsv"
	{
		grep -v -P "^\Q$scenario\E\t\Q$kernel\E\t$repeat\t" "$run/manifest.tsv" || true
		printf '%s\t%s\t%s\t%s\t%s\n' "$scenario" "$kernel" "$repeat" "$status" \
			"$(job_dir . "$kernel" "$scenario" "$repeat" | sed 's|^\./||')"
	} | sort | write_atomic "$run/manifest.tsv"
}

# run_one RUN_DIR KERNEL SCENARIO REPEAT PROFILE [TAG]: 0 ok, else the job failed.
run_one() {
	local run=$1 kernel=$2 scenario=$3 repeat=$4 profile=$5 tag=${6:-} sc dir tmp rc=0 attempt
	sc=$(load_scenario "$scenario" "$profile")
	dir=$(job_dir "$run" "$kernel" "$scenario" "$repeat")
	if job_done "$dir"; then
		log "[$kernel $scenario r$repeat] done already, kept: $dir"
		record "$run" "$scenario" "$kernel" "$repeat" ok
		return 0
	fi
	rm -rf "$dir"
	mkdir -p "$(dirname "$dir")"
	tmp=$(mktemp -d "$run/.job.XXXXXX")
	write_job "$sc" "$tmp"
	cp "$SCENARIO_DIR/$scenario.conf" "$tmp/scenario.conf"
	# A guest that never reached the agent failed to boot: nothing was
	# measured. Keep that attempt aside (the analysis ignores it) and boot
	# once more.
	for attempt in "" " (2nd boot)"; do
		rc=0
		LOG_KERNEL="$kernel" LOG_TAG="$scenario r$repeat${tag:+ $tag}$attempt" \
			"$GUEST" run "$kernel" "$tmp/job.conf" "$dir" \
			--with "$tmp/scenario.env" --with "$tmp/scenario.conf" || rc=$?
		if [ "$rc" = 0 ] || [ -f "$dir/guest/agent-started" ] || [ -n "$attempt" ]; then
			break
		fi
		log "[$kernel $scenario r$repeat] the guest never started the agent; kept as $dir.boot-failure, booting again"
		rm -rf "$dir.boot-failure"
		mv "$dir" "$dir.boot-failure"
	done
	rm -rf "$tmp"
	if [ "$rc" = 0 ]; then
		record "$run" "$scenario" "$kernel" "$repeat" ok
	else
		record "$run" "$scenario" "$kernel" "$repeat" "failed:$(sed -n 's/^ *"result": "\(.*\)",$/\1/p' "$dir/result.json" 2> /dev/null || echo "exit $rc")"
	fi
	return "$rc"
}

write_run_meta() {
	local run=$1 profile=$2 kernels=$3 scenarios=$4 repeat=$5
	{
		echo "{"
		echo "  \"schema\": 1,"
		echo "  \"suite_version\": $(json_str "$(git -C "$SUITE_ROOT" describe --always --dirty 2> /dev/null || echo unknown)"),"
		echo "  \"profile\": $(json_str "$profile"),"
		echo "  \"kernels\": $(json_str "$kernels"),"
		echo "  \"scenarios\": $(json_str "$scenarios"),"
		echo "  \"repeats\": $(json_str "$repeat"),"
		echo "  \"started\": $(json_str "$(date -u +%Y-%m-%dT%H:%M:%SZ)"),"
		echo "  \"host\": $(json_str "$(uname -n) $(uname -r), $(nproc) CPUs")"
		echo "}"
	} | write_atomic "$run/run.json"
}

cmd_run() {
	local id=$1 kernels="control patched" scenarios="low-steps" repeat="" profile=full
	local run k s r n=0 total=0 failed=0 start sc reps max_rep=0 secs=0 done_est=0 job_est eta
	shift
	while [ $# -gt 0 ]; do
		case "$1" in
		--kernels) kernels=$2; shift ;;
		--scenarios) scenarios=$2; shift ;;
		--repeat) repeat=$2; shift ;;
		--profile) profile=$2; shift ;;
		*) usage_error "unknown option '$1'" ;;
		esac
		shift
	done
	[[ "$id" =~ ^[A-Za-z0-9._-]+$ ]] || usage_error "run id '$id' may only hold letters, digits, '.', '_', '-'"
	[ -z "$repeat" ] || [[ "$repeat" =~ ^[1-9][0-9]*$ ]] || usage_error "--repeat must be a positive number"
	# Everything is checked before anything boots.
	for s in $scenarios; do
		sc=$(load_scenario "$s" "$profile")
		reps=${repeat:-$(kv_get "$sc" repeats)}
		[ "$reps" -gt "$max_rep" ] && max_rep=$reps
		for k in $kernels; do
			arm_check "$k"
			"$SUITE_ROOT/bench/kernel.sh" path "$(arm_kernel "$k")" > /dev/null || exit $?
			total=$((total + reps))
			secs=$((secs + reps * ($(scenario_seconds "$sc") + 40)))
		done
	done
	[ -f "${ROOTFS:-$BUILD_DIR/rootfs/rootfs.ext4}" ] || die "guest image not found; build it with: make rootfs"
	run=$RESULTS/$id
	mkdir -p "$run"
	[ -f "$run/run.json" ] || write_run_meta "$run" "$profile" "$kernels" "$scenarios" "${repeat:-per scenario}"
	log "run $id: $total jobs (${kernels// /, } x ${scenarios// /, }), about $((secs / 60)) min; results in $run"
	start=$(date +%s)
	# Interleaved: repeat r of every scenario on every kernel, then r+1.
	for ((r = 1; r <= max_rep; r++)); do
		for s in $scenarios; do
			sc=$(load_scenario "$s" "$profile")
			[ "$r" -le "${repeat:-$(kv_get "$sc" repeats)}" ] || continue
			job_est=$(($(scenario_seconds "$sc") + 40))
			for k in $kernels; do
				n=$((n + 1))
				# ETA: the estimate of what is left, scaled by how the
				# estimate has held so far.
				eta=$(((secs - done_est) / 60))
				[ "$done_est" -gt 0 ] && eta=$(((secs - done_est) * ($(date +%s) - start) / done_est / 60))
				log "job $n/$total: $k $s r$r (elapsed $(( ($(date +%s) - start) / 60 )) min, ETA $eta min)"
				run_one "$run" "$k" "$s" "$r" "$profile" "job $n/$total" || failed=$((failed + 1))
				done_est=$((done_est + job_est))
			done
		done
	done
	log "run $id finished: $((total - failed)) of $total jobs ok, in $(( ($(date +%s) - start) / 60 )) min"
	cmd_table "$run" || true
	if [ -x "$PYTHON" ] && "$PYTHON" -c 'import matplotlib' 2> /dev/null; then
		"$PYTHON" "$SUITE_ROOT/analysis/report.py" "$run" || true
	else
		log "no report: Debian's python3-matplotlib is missing (make deps)"
	fi
	[ "$failed" = 0 ]
}

PYTHON=/usr/bin/python3

cmd_table() {
	[ -x "$PYTHON" ] || die "$PYTHON not found; run: make deps"
	"$PYTHON" "$SUITE_ROOT/analysis/table.py" "$@"
}

main() {
	local cmd=${1:-}
	[ $# -gt 0 ] && shift
	case "$cmd" in
	run)
		[ $# -ge 1 ] || usage_error "usage: $PROG run RUN_ID [options]"
		cmd_run "$@"
		;;
	one)
		[ $# -eq 4 ] || [ $# -eq 6 ] || usage_error "usage: $PROG one RUN_ID KERNEL SCENARIO REPEAT [--profile P]"
		arm_check "$2"
		"$SUITE_ROOT/bench/kernel.sh" path "$(arm_kernel "$2")" > /dev/null || exit $?
		mkdir -p "$RESULTS/$1"
		run_one "$RESULTS/$1" "$2" "$3" "$4" "${6:-full}"
		;;
	check)
		[ $# -eq 1 ] || [ $# -eq 3 ] || usage_error "usage: $PROG check SCENARIO [--profile P]"
		load_scenario "$1" "${3:-full}" > /dev/null
		;;
	list)
		for s in $(scenario_names); do
			printf '%-14s %s\n' "$s" "$(kv_get "$(parse_kv "$SCENARIO_DIR/$s.conf" SCENARIO_KEYS)" description)"
		done
		;;
	table)
		[ $# -ge 1 ] || usage_error "usage: $PROG table RUN_DIR"
		cmd_table "$@"
		;;
	"" | -h | --help | help) usage ;;
	*) usage >&2; exit "$EX_USAGE" ;;
	esac
}

main "$@"
