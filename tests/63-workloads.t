#!/usr/bin/env bash
# The workloads (bench-load): argument checking, short real runs of each
# (under valgrind), clean stops on SIGTERM, rate limiting, and no temporary
# files left behind.
set -u
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/lib/tap.sh"

make -s -C "$SUITE_ROOT" build/bin/bench-load > /dev/null || { echo "Bail out! build failed"; exit 1; }
LOAD=$SUITE_ROOT/build/bin/bench-load
VG=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=all)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/dir"

# load_fails CODE PATTERN ARGS...: bench-load exits with CODE (2: bad
# input, 1: a failure while running) and says PATTERN.
load_fails() {
	local code=$1 pattern=$2 out
	shift 2
	out=$("$LOAD" "$@" 2>&1)
	is "$?" "$code" "bench-load $* exits $code"
	like "$out" "$pattern" "bench-load $*: says '$pattern'"
}

load_fails 2 "usage: bench-load WORKLOAD"
load_fails 2 "unknown workload 'dance'" dance
load_fails 2 "ws: --size: '12Q' is not a size" ws --size 12Q
load_fails 2 "ws: --size is required" ws
load_fails 2 "ws: --pattern: 'zigzag' is not seq, random or hotcold" ws --size 1M --pattern zigzag
load_fails 2 "ws: --backing: 'disk' is not anon, file or mix" ws --size 1M --backing disk
load_fails 2 "ws: --file needs --backing file or mix" ws --size 1M --file /tmp/x
load_fails 2 "ws: --hot: '2' is not a fraction" ws --size 1M --pattern hotcold --hot 2
load_fails 2 "ws: unexpected argument 'extra'" ws --size 1M extra
load_fails 2 "pressure: say --stream SIZE, --anon SIZE, or both" pressure
load_fails 2 "pressure: --stream: '1Q' is not a size" pressure --stream 1Q
load_fails 2 "pressure: --rate: 'fast' is not a number" pressure --anon 1M --rate fast
load_fails 2 "ramp: --step SIZE is required" ramp
load_fails 2 "ramp: --max is smaller than --start" ramp --step 1M --start 4M --max 2M
load_fails 2 "ramp: --every must be more than 0" ramp --step 1M --every 0
load_fails 1 "ws: cannot create a file in '/nonexistent'" ws --size 1M --backing file --dir /nonexistent -t 0.1
load_fails 2 "reclaim: --cgroup PATH is required" reclaim --amount 4M
load_fails 2 "reclaim: --amount SIZE is required and must not be 0" reclaim --cgroup x.slice --amount 0
load_fails 2 "reclaim: --every must be more than 0" reclaim --cgroup x.slice --amount 4M --every 0
load_fails 1 "reclaim: cannot write '/nonexistent/x.slice/memory.reclaim': No such file" \
	reclaim --cgroup x.slice --amount 4M --cgroup-root /nonexistent
head -c 4096 /dev/zero > "$tmp/small"
load_fails 1 "holds 4096 bytes, fewer than the" ws --size 1M --backing file --file "$tmp/small" -t 0.1

# field LINE KEY: the value of KEY=value in a summary line.
field() {
	printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

out=$("${VG[@]}" "$LOAD" ws --size 8M --duration 0.5 --interval 0.2 2> "$tmp/err")
ok $? "ws: an anonymous working set runs for 0.5 s under valgrind" || diag_tail "$(cat "$tmp/err")"
like "$out" "^ws: seconds=[0-9.]+ pages=2048 pages_touched=[0-9]+ pages_per_sec=[0-9]+ majflt=[0-9]+ minflt=[0-9]+$" \
	"ws: prints its summary: touch rate and faults"
like "$(cat "$tmp/err")" "ws: t=0\.[0-9]s [0-9]+ pages/s majflt" "ws: prints progress lines on stderr"

out=$("${VG[@]}" "$LOAD" ws --size 4M --backing file --dir "$tmp/dir" --pattern random -t 0.5 -i 0 2>&1)
ok $? "ws: a file-backed working set (sparse temporary file) runs" || diag_tail "$out"
is "$(ls -A "$tmp/dir")" "" "ws: its temporary file is gone"

out=$("${VG[@]}" "$LOAD" ws --size 4M --backing mix --file "$tmp/dir/named" --pattern hotcold -t 0.5 -i 0 2>&1)
ok $? "ws: a mixed working set with a named new file runs" || diag_tail "$out"
[ ! -e "$tmp/dir/named" ]
ok $? "ws: the file it created is removed at exit"

truncate -s 8M "$tmp/existing"
runs "ws: reads an existing file" \
	"$LOAD" ws --size 4M --backing file --file "$tmp/existing" -t 0.2 -i 0
[ -e "$tmp/existing" ]
ok $? "ws: and leaves it in place"

out=$("$LOAD" ws --size 16M --rate 20000 --duration 1 -i 0 2>&1)
touched=$(field "$out" pages_touched)
[ "${touched:-0}" -ge 15000 ] && [ "${touched:-0}" -le 25000 ]
ok $? "ws: --rate 20000 holds it to about 20000 page touches in 1 s ($touched)"

"$LOAD" ws --size 8M --backing file --dir "$tmp/dir" -i 0 > "$tmp/ws.out" 2>&1 &
pid=$!
sleep 0.5
kill -TERM "$pid"
wait "$pid"
is "$?" 0 "ws: SIGTERM stops it cleanly (exit 0)"
like "$(cat "$tmp/ws.out")" "^ws: seconds=" "ws: and it still prints its summary"
is "$(ls -A "$tmp/dir")" "" "ws: and leaves no file behind"

out=$("${VG[@]}" "$LOAD" pressure --stream 8M --anon 4M --dir "$tmp/dir" -t 0.5 -i 0 2>&1)
ok $? "pressure: re-reading a file and touching anonymous memory runs" || diag_tail "$out"
[ "$(field "$out" stream_passes)" -ge 1 ]
ok $? "pressure: it made at least one pass over the file"
is "$(ls -A "$tmp/dir")" "" "pressure: its temporary file is gone"
out=$("$LOAD" pressure --anon 8M --rate 16 -t 1 -i 0 2>&1)
bytes=$(field "$out" anon_bytes_touched)
[ "${bytes:-0}" -ge $((12 * 1024 * 1024)) ] && [ "${bytes:-0}" -le $((20 * 1024 * 1024)) ]
ok $? "pressure: --rate 16 holds it to about 16 MiB in 1 s ($bytes bytes)"

out=$("${VG[@]}" "$LOAD" ramp --start 1M --step 1M --every 0.1 --max 4M -t 1 \
	--report "$tmp/ramp.report" 2> "$tmp/ramp.err")
ok $? "ramp: grows to its maximum and stops at the deadline" || diag_tail "$(cat "$tmp/ramp.err")"
like "$out" "^ramp: seconds=[0-9.]+ held_bytes=4194304 steps=3 state=at-max$" "ramp: reports how far it got"
like "$(cat "$tmp/ramp.report")" "held_bytes=4194304 steps=3 state=at-max" "ramp: the report file says the same"
err=$("$LOAD" ramp --step 1M --every 0.05 --interval 0.2 -t 0.7 2>&1 > /dev/null)
like "$err" "^ramp: t=0\.[0-9]s held [0-9]+ MiB after [0-9]+ steps" "ramp: progress lines every --interval, apart from the steps"
is "$(printf '%s\n' "$err" | grep -c '^ramp: t=')" 3 "ramp: three progress lines in 0.7 s at 0.2 s"

# --stats: counters for the collector, rewritten atomically.
runs "ws --stats runs clean under valgrind" \
	"${VG[@]}" "$LOAD" ws --size 4M -t 0.8 -i 0 --stats "$tmp/ws.stats"
like "$(cat "$tmp/ws.stats")" "^pages_touched [1-9][0-9]*$" "ws: the stats file counts the pages touched"
like "$(cat "$tmp/ws.stats")" "^majflt [0-9]+$" "ws: and the major faults"
"$LOAD" pressure --stream 4M --dir "$tmp" -t 0.8 -i 0 --stats "$tmp/p.stats" > /dev/null 2>&1
like "$(cat "$tmp/p.stats")" "^bytes [1-9][0-9]*$" "pressure: the stats file counts the bytes"
"$LOAD" ramp --step 1M --every 0.1 -t 0.5 -i 0 --stats "$tmp/r.stats" > /dev/null 2>&1
like "$(cat "$tmp/r.stats")" "^held_bytes [1-9][0-9]*$" "ramp: the stats file says what it holds"
ls "$tmp"/*.tmp > /dev/null 2>&1
is "$?" 2 "no temporary stats files are left"
out=$("$LOAD" ws --size 4M -t 1 -i 0 --stats /nonexistent/ws.stats 2>&1)
is "$?" 1 "a stats file that cannot be written fails the workload"
like "$out" "cannot write the stats file '/nonexistent/ws.stats'" "naming it"
"$LOAD" ramp --step 1M --every 0.1 --report "$tmp/ramp2.report" > /dev/null 2>&1 &
pid=$!
sleep 0.55
kill -KILL "$pid"
wait "$pid" 2> /dev/null
like "$(cat "$tmp/ramp2.report")" "held_bytes=[1-9][0-9]* steps=[1-9][0-9]* state=running" \
	"ramp: after SIGKILL (as by the OOM killer) the report says how far it got"

# reclaim: one request every --every seconds to memory.reclaim (here a
# plain file standing in for the cgroup's), counted in --stats.
mkdir -p "$tmp/cg/exp.slice"
: > "$tmp/cg/exp.slice/memory.reclaim"
out=$("${VG[@]}" "$LOAD" reclaim --cgroup exp.slice --amount 4M --every 0.1 -t 0.55 -i 0 \
	--cgroup-root "$tmp/cg" --stats "$tmp/reclaim.stats" 2>&1)
ok $? "reclaim: runs for 0.55 s under valgrind" || diag_tail "$out"
is "$(cat "$tmp/cg/exp.slice/memory.reclaim")" 4194304 "reclaim: writes the amount in bytes"
like "$(cat "$tmp/reclaim.stats")" "^requests 6$" "reclaim: one request every 0.1 s, from the start (6 in 0.55 s)"
like "$(cat "$tmp/reclaim.stats")" "^failed 0$" "reclaim: none refused"
like "$out" "^reclaim: seconds=[0-9.]+ requests=6 failed=0 late=0 busy_us=[0-9]+ amount=4194304$" \
	"reclaim: prints its summary"

done_testing
