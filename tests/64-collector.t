#!/usr/bin/env bash
# The collector (bench-collect) against fixture trees that imitate cgroupfs
# and /proc: the CSV format, malformed and missing files, a cgroup that
# vanishes mid-run, step labels, SIGTERM, and bad arguments. Never reads the
# host's own /sys/fs/cgroup.
set -u
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/lib/tap.sh"

make -s -C "$SUITE_ROOT" build/bin/bench-collect > /dev/null || { echo "Bail out! build failed"; exit 1; }
COLLECT=$SUITE_ROOT/build/bin/bench-collect
FIX=$SUITE_ROOT/tests/fixtures/collector
VG=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=all)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -a "$FIX" "$tmp/fix"
ROOTS=(--cgroup-root "$tmp/fix/cgroupfs" --proc-root "$tmp/fix/proc")

# rows FILE CGROUP SOURCE KEY: the values of matching rows, one per line.
rows() {
	awk -F, -v c="$2" -v s="$3" -v k="$4" '$3 == c && $4 == s && $5 == k { print $6 }' "$1"
}

"${VG[@]}" "$COLLECT" "${ROOTS[@]}" --count 3 --interval 0.1 --out "$tmp/a.csv" \
	workload.slice system.slice gone.slice 2> "$tmp/a.err"
ok $? "three samples of three cgroups, under valgrind" || diag_tail "$(cat "$tmp/a.err")"
is "$(sed -n 1p "$tmp/a.csv" | cut -d' ' -f1-3)" "# bench-collect schema=1" "the first line names the tool and the schema"
is "$(sed -n 2p "$tmp/a.csv")" "time_s,step,cgroup,source,key,value" "the second line is the header"
bad=$(awk -F, 'NR > 2 && NF != 6' "$tmp/a.csv" | wc -l)
is "$bad" 0 "every row has six fields"
is "$(cut -d, -f1 "$tmp/a.csv" | sed 1,2d | sort -u | wc -l)" 3 "three distinct sample times"
want=$(awk '$1 == "pgscan" { print $2 }' "$FIX/cgroupfs/workload.slice/memory.stat")
is "$(rows "$tmp/a.csv" workload.slice memory.stat pgscan | sort -u)" "$want" "memory.stat pgscan is recorded as the kernel printed it"
is "$(rows "$tmp/a.csv" workload.slice memory.stat pgscan | wc -l)" 3 "once per sample"
n_stat=$(grep -c . "$FIX/cgroupfs/workload.slice/memory.stat")
is "$(rows "$tmp/a.csv" workload.slice memory.stat anon | wc -l)" 3 "anon too"
is "$(awk -F, '$3 == "workload.slice" && $4 == "memory.stat"' "$tmp/a.csv" | wc -l)" $((n_stat * 3)) \
	"all $n_stat memory.stat fields, each sample"
for src in memory.events memory.events.local; do
	is "$(rows "$tmp/a.csv" workload.slice "$src" oom_kill | wc -l)" 3 "$src oom_kill is recorded"
done
for src in memory.current memory.low memory.min memory.swap.current memory.peak; do
	is "$(rows "$tmp/a.csv" workload.slice "$src" value | sed -n 1p)" "$(cat "$FIX/cgroupfs/workload.slice/$src")" \
		"$src is recorded as one value"
done
is "$(rows "$tmp/a.csv" workload.slice memory.max value | sed -n 1p)" max "an unset limit is recorded as max"
is "$(rows "$tmp/a.csv" workload.slice memory.pressure some_total | wc -l)" 3 "memory.pressure some_total is recorded"
is "$(rows "$tmp/a.csv" - vmstat pgscan_kswapd | wc -l)" 3 "/proc/vmstat pgscan_kswapd is recorded"
is "$(rows "$tmp/a.csv" - vmstat allocstall_movable | wc -l)" 3 "/proc/vmstat allocstall_movable is recorded"
is "$(rows "$tmp/a.csv" - pressure.memory full_total | wc -l)" 3 "/proc/pressure/memory full_total is recorded"

# The damaged cgroup: malformed lines, a missing file, a word for a number.
is "$(rows "$tmp/a.csv" system.slice _status memory.stat | sort -u)" "malformed:2" "two malformed memory.stat lines are reported"
is "$(rows "$tmp/a.csv" system.slice memory.stat anon | wc -l)" 3 "and the good lines are still recorded"
is "$(rows "$tmp/a.csv" system.slice _status memory.swap.current | sort -u)" missing "a missing file is reported as missing"
is "$(rows "$tmp/a.csv" system.slice _status memory.low | sort -u)" "malformed:1" "a word where a number belongs is reported"
is "$(rows "$tmp/a.csv" gone.slice _status memory.current | sort -u)" missing "a cgroup that does not exist is reported"
is "$(rows "$tmp/a.csv" gone.slice _status memory.stat | wc -l)" 3 "in every sample"
like "$(cat "$tmp/a.err")" "3 samples, [0-9.]+ ms CPU per sample" "the cost per sample is reported on exit"

# A cgroup that vanishes mid-run, steps, and SIGTERM.
echo "warmup" > "$tmp/step"
"$COLLECT" "${ROOTS[@]}" --interval 0.1 --step-file "$tmp/step" --out "$tmp/b.csv" -q \
	workload.slice system.slice &
pid=$!
sleep 0.55
echo "low=800M step 2" > "$tmp/step.new" && mv "$tmp/step.new" "$tmp/step"
sleep 0.3
rm -rf "$tmp/fix/cgroupfs/system.slice"
sleep 0.55
kill -TERM "$pid"
wait "$pid"
is "$?" 0 "SIGTERM ends the collector cleanly"
is "$(tail -c 1 "$tmp/b.csv" | od -An -c | tr -d ' ')" '\n' "the file ends with a whole row"
is "$(awk -F, 'NR > 2 && NF != 6' "$tmp/b.csv" | wc -l)" 0 "every row has six fields"
steps=$(awk -F, 'NR > 2 { print $2 }' "$tmp/b.csv" | uniq | tr '\n' ' ')
is "$steps" "warmup low=800M_step_2 " "rows carry the step label, made CSV-safe"
gone=$(awk -F, '$3 == "system.slice" && $4 == "_status" && $5 == "memory.current" { print $1 }' "$tmp/b.csv" | wc -l)
[ "$gone" -ge 2 ]
ok $? "after system.slice vanished, every sample says it is missing ($gone samples)"
last_ws=$(awk -F, '$3 == "workload.slice" && $4 == "memory.current" { t = $1 } END { print t }' "$tmp/b.csv")
last_gone=$(awk -F, '$3 == "system.slice" && $4 == "_status" { t = $1 } END { print t }' "$tmp/b.csv")
is "$last_ws" "$last_gone" "and the other cgroup is still sampled to the end"

# A workload's --stats file, sampled as source "app"; one that is not there
# (the workload has not started, or is gone) is recorded as missing.
printf 'pages_touched 100\nmajflt 3\nnot a counter line\n' > "$tmp/ws.stats"
"${VG[@]}" "$COLLECT" "${ROOTS[@]}" --count 2 --interval 0.05 --out "$tmp/app.csv" \
	--app "workload=$tmp/ws.stats" --app "peer=$tmp/none.stats" workload.slice 2> "$tmp/app.err"
ok $? "a run with two --app files, under valgrind" || diag_tail "$(cat "$tmp/app.err")"
is "$(rows "$tmp/app.csv" workload app pages_touched | tr '\n' ' ')" "100 100 " "the app's counters are rows of source app, in every sample"
is "$(rows "$tmp/app.csv" workload app majflt | sed -n 1p)" 3 "every counter of it"
is "$(rows "$tmp/app.csv" workload _status app | sed -n 1p)" "malformed:1" "a line that is not a counter is counted as malformed"
is "$(rows "$tmp/app.csv" peer _status app | sed -n 1p)" missing "a stats file that does not exist is missing"
refused "an --app without a name is refused" "$COLLECT" --app "=x" x.slice
like "$REFUSED_OUT" "--app: '=x' is not NAME=FILE" "and says so"
refused "an --app name with a comma is refused" "$COLLECT" --app "a,b=x" x.slice

# Bad arguments.
refused "no cgroup is a usage error" "$COLLECT" "${ROOTS[@]}"
like "$REFUSED_OUT" "name at least one cgroup" "and says so"
refused "a bad interval is a usage error" "$COLLECT" --interval soon x.slice
like "$REFUSED_OUT" "--interval: 'soon' is not a number of seconds" "and says so"
refused "a zero count is a usage error" "$COLLECT" --count 0 x.slice
refused "a cgroup name with a comma is refused" "$COLLECT" "a,b.slice"
refused "a cgroup name with .. is refused" "$COLLECT" ../etc
out=$("$COLLECT" --out /nonexistent/x.csv x.slice 2>&1)
is "$?" 1 "an output file that cannot be created fails"
like "$out" "cannot create '/nonexistent/x.csv': No such file or directory" "naming the file and the reason"

done_testing
