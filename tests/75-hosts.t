#!/usr/bin/env bash
# A run spread over two "hosts" with GNU parallel: two sshd from Debian on
# 127.0.0.1 only, started and stopped here, with throw-away keys, each with
# its own remote directory; an unreachable host and one that does not
# qualify are named and left out. Both blocks (control and patched at two
# repeats of the quick low-reclaim) run, each whole on one host; the results
# have the same files as a local job's, meta.json names the host, the table
# and report come out, and running the same id again runs nothing. A seed
# check and the selftests (make regress, make peers) run over the same
# hosts. Then a host dies while its guest runs (its sshd, sessions and every process it
# started killed): the run finishes on the other host, nothing of the
# dead one is imported and nothing of it runs on.
# Nothing but 127.0.0.1 is ever contacted.
set -u
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/lib/tap.sh"

BENCH=$SUITE_ROOT/bench/bench.py
[ "$(id -u)" = 0 ] || skip_all "needs root (guests, and sshd)"
"$SUITE_ROOT/bench/deps.sh" hosts >&2 || { echo "not ok 1 - the hosts packages install"; exit 1; }
[ -x /usr/sbin/sshd ] || { echo "not ok 1 - Debian's openssh-server is installed"; exit 1; }

T=$(mktemp -d)
chmod 700 "$T"
stop_sshd() {
	local p
	for p in "$T"/sshd-*.pid; do
		[ -f "$p" ] && kill "$(cat "$p")" 2> /dev/null
	done
	rm -rf "$T"
}
trap stop_sshd EXIT

# free_port: a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
	/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
ssh-keygen -q -t ed25519 -N '' -C bench-test-host -f "$T/host_key" &&
	ssh-keygen -q -t ed25519 -N '' -C bench-test-client -f "$T/client_key" &&
	cp "$T/client_key.pub" "$T/authorized_keys"
ok $? "throw-away host and client keys"
mkdir -p /run/sshd
P1=$(free_port) P2=$(free_port) P3=$(free_port)
started=0
for i in 1 2; do
	port=P$i
	cat > "$T/sshd-$i.conf" <<EOF
ListenAddress 127.0.0.1
Port ${!port}
HostKey $T/host_key
AuthorizedKeysFile $T/authorized_keys
PidFile $T/sshd-$i.pid
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AcceptEnv BENCH_REMOTE_DIR
EOF
	/usr/sbin/sshd -f "$T/sshd-$i.conf" -E "$T/sshd-$i.log" && started=$((started + 1))
done
is "$started" 2 "two sshd listen on 127.0.0.1:$P1 and :$P2"

# login PORT REMOTE_DIR: a hosts-file line for root on this machine.
login() {
	echo "ssh -p $1 -i $T/client_key -o SetEnv=BENCH_REMOTE_DIR=$2 -o StrictHostKeyChecking=no" \
		"-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR root@127.0.0.1"
}
cat > "$T/hosts" <<EOF
# Two "hosts", each an sshd of this machine with its own directory.
$(login "$P1" "$T/h1")
$(login "$P2" "$T/h2")
# Nothing listens here.
$(login "$P3" "$T/h3")
# Its directory cannot be made.
$(login "$P1" /proc/no-such-dir)
EOF
n=0
for _ in 1 2 3 4 5 6 7 8 9 10; do
	n=0
	for p in "$P1" "$P2"; do
		ssh -p "$p" -i "$T/client_key" -o BatchMode=yes -o StrictHostKeyChecking=no \
			-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR root@127.0.0.1 true && n=$((n + 1))
	done
	[ "$n" = 2 ] && break
	sleep 0.5
done
if ! is "$n" 2 "both answer ssh with the throw-away key"; then
	diag_tail "$(cat "$T"/sshd-*.log)"
fi

export RESULTS=$T/results
"$SUITE_ROOT/bench/kernel.sh" build control patched >&2 && "$SUITE_ROOT/rootfs/build.sh" > /dev/null
ok $? "kernels and image are built"

RUN=(run hosts --profile quick --kernels "control patched" --scenarios low-reclaim --repeat 2 --hosts "$T/hosts")
out=$("$BENCH" "${RUN[@]}" 2> "$T/err")
if ! ok $? "the run over two hosts finished"; then
	diag_tail "$(cat "$T/err")"
fi
err=$(cat "$T/err")
like "$err" "host root@127.0.0.1:$P3 \(.*hosts:5\) left out: unreachable: ssh exited 255" \
	"the unreachable host is named and left out"
like "$err" "host root@127.0.0.1:$P1#7 \(.*hosts:7\) left out: cannot make its directory /proc/no-such-dir" \
	"the host that does not qualify is named, with why"
like "$err" "host root@127.0.0.1:$P1#2: sent suite, image, kernel control, kernel patched" \
	"the suite, image and kernels go to a host that lacks them"
like "$err" "round 1: 4 of 4 jobs in 2 blocks on 2 host\(s\), 2 guest\(s\) at a time" \
	"two blocks, two hosts"
R=$RESULTS/hosts
is "$(jq -r '[.jobs[] | .status] | join(" ")' "$R/manifest.json" 2> /dev/null)" "ok ok ok ok" \
	"the manifest has the four jobs ok"
# host SCENARIO KERNEL REPEAT: where a job ran, from its meta.json.
host() {
	jq -r .dispatch.host "$R/low-reclaim/$2/r$3/meta.json" 2> /dev/null
}
for r in 1 2; do
	h=$(host low-reclaim control "$r")
	like "$h" "^root@127.0.0.1:($P1#2|$P2)$" "r$r: meta.json names the host ($h)"
	is "$(host low-reclaim patched "$r")" "$h" "r$r: both kernels of the block ran on the same host"
done
isnt_same=$( [ "$(host low-reclaim control 1)" != "$(host low-reclaim control 2)" ] && echo yes)
is "$isnt_same" yes "the two blocks went to the two hosts"
is "$(jq -r .dispatch.hostname "$R/low-reclaim/patched/r1/meta.json" 2> /dev/null)" "$(uname -n)" \
	"meta.json says which machine that host is"
is "$(jq -r .accelerator "$R/low-reclaim/patched/r1/meta.json" 2> /dev/null)" \
	"$(jq -r .accelerator "$R/low-reclaim/control/r1/meta.json" 2> /dev/null)" "and the accelerator it used"
like "$out" "^\| memory.low \|" "the per-step table is printed"
is "$(printf '%s\n' "$out" | grep -c ': a try on ')" 0 "no try failed"
[ -s "$R/report.md" ] && [ -s "$R/report.html" ]
ok $? "the report is written"
like "$(cat "$R/report.md" 2> /dev/null)" "ran on 2 host\(s\).*Every block ran whole on one host" \
	"and says where the jobs ran"
like "$(cat "$R/report.md" 2> /dev/null)" "### Paired by host" "and compares the kernels paired by host"
is "$(find "$R/.dispatch/rejected" -mindepth 1 2> /dev/null | wc -l)" 0 "nothing came back incomplete"

# The same files as a local job's.
RESULTS=$T/local "$BENCH" one local control low-reclaim 1 --profile quick 2> "$T/err-local" > /dev/null
ok $? "the same job, run here"
files() {
	(cd "$1" && find . -type f | LC_ALL=C sort)
}
local_files=$(files "$T/local/local/low-reclaim/control/r1")
is "$(files "$R/low-reclaim/control/r1")" "$local_files" "a dispatched job holds the files a local one does"

out=$("$BENCH" "${RUN[@]}" 2>&1)
ok $? "running the same id again succeeds"
like "$out" "4 of 4 jobs ok" "with every job kept"
unlike_boot=$(printf '%s\n' "$out" | grep -c 'guest.sh:')
is "$unlike_boot" 0 "and nothing boots again"

# make regress and make peers over the same two hosts (HOSTS= sets
# BENCH_HOSTS): prepared guest jobs, one block per check (both kernels of
# ocfs2 on one host) and per kernel for the selftests (they spread).
{ login "$P1" "$T/h1"; login "$P2" "$T/h2"; } > "$T/hosts-good"
BENCH_HOSTS=$T/hosts-good "$SUITE_ROOT/bench/seeds.sh" run sq control patched --check ocfs2 \
	> "$T/seeds" 2> "$T/err-seeds"
if ! ok $? "the ocfs2 seed check over two hosts: seeds.sh exits 0"; then
	diag_tail "$(cat "$T/err-seeds")"
fi
is "$(grep -c '^  \(control\|patched\)  *pass$' "$T/seeds")" 2 "both kernels pass in its table"
S=$RESULTS/sq/seeds/ocfs2
seed_host=$(jq -r .dispatch.host "$S/control/meta.json" 2> /dev/null)
like "$seed_host" "^root@127\.0\.0\.1:($P1|$P2)$" "meta.json names the host"
is "$(jq -r .dispatch.host "$S/patched/meta.json" 2> /dev/null)" "$seed_host" \
	"both kernels of the check ran on that host"
RESULTS=$T/local "$SUITE_ROOT/bench/seeds.sh" run sl patched --check ocfs2 > /dev/null 2>&1
is "$(files "$S/patched")" "$(files "$T/local/sl/seeds/ocfs2/patched")" \
	"a dispatched seed job holds the files a local one does"
"$SUITE_ROOT/bench/selftests.sh" build control patched >&2
BENCH_HOSTS=$T/hosts-good "$SUITE_ROOT/bench/selftests.sh" run pq control patched --repeat 1 \
	> "$T/peers" 2> "$T/err-peers"
if ! ok $? "the selftests over two hosts: selftests.sh exits 0"; then
	diag_tail "$(cat "$T/err-peers")"
fi
Q=$RESULTS/pq/peers/selftests
is "$(jq -r .result "$Q/control/result.json" 2> /dev/null) $(jq -r .result "$Q/patched/result.json" 2> /dev/null)" \
	"ok ok" "both kernels' jobs came back ok"
like "$(cat "$T/peers")" "\| test_memcg_min  *\| pass " "and the pass/fail table comes out"
[ "$(jq -r .dispatch.host "$Q/control/meta.json" 2> /dev/null)" != \
	"$(jq -r .dispatch.host "$Q/patched/meta.json" 2> /dev/null)" ]
ok $? "the two kernels ran on the two hosts at once"

# A host that disappears mid-run: as soon as a guest runs on the second
# host, that "machine" dies: its sshd and every session are killed, and
# every process it started (found by the BENCH_REMOTE_DIR its sessions
# carry), QEMU included. The block runs again on the other host.
# procs_of DIR: the pids whose environment has BENCH_REMOTE_DIR=DIR.
procs_of() {
	local e
	for e in /proc/[0-9]*/environ; do
		tr '\0' '\n' 2> /dev/null < "$e" | grep -qx "BENCH_REMOTE_DIR=$1" &&
			{ e=${e#/proc/}; echo "${e%/environ}"; }
	done
}
{ login "$P1" "$T/h1"; login "$P2" "$T/h2"; } > "$T/hosts2"
(
	for _ in $(seq 600); do
		for pid in $(procs_of "$T/h2"); do
			if grep -q qemu-system "/proc/$pid/comm" 2> /dev/null; then
				pkill -9 -P "$(cat "$T/sshd-2.pid")"
				kill -9 "$(cat "$T/sshd-2.pid")"
				# shellcheck disable=SC2046
				kill -9 $(procs_of "$T/h2") 2> /dev/null
				echo killed > "$T/h2-killed"
				exit 0
			fi
		done
		sleep 0.5
	done
) &
killer=$!
LOST=(run lost --profile quick --kernels control --scenarios low-reclaim --repeat 2 --hosts "$T/hosts2")
"$BENCH" "${LOST[@]}" > /dev/null 2> "$T/err-lost"
rc=$?
kill "$killer" 2> /dev/null
wait "$killer" 2> /dev/null
is "$(cat "$T/h2-killed" 2> /dev/null)" killed "the second host died while its guest ran"
if ! is "$rc" 0 "the run still finished"; then
	diag_tail "$(cat "$T/err-lost")"
fi
R=$RESULTS/lost
is "$(jq -r '[.jobs[] | .status] | join(" ")' "$R/manifest.json" 2> /dev/null)" "ok ok" \
	"with both jobs ok"
is "$(host low-reclaim control 1) $(host low-reclaim control 2)" \
	"root@127.0.0.1:$P1 root@127.0.0.1:$P1" "both ran, in the end, on the host that stayed"
# A block's tries, each named by remote-block.sh's first line: the log
# and meta.json say where one failed.
like "$(cat "$T/err-lost")" \
	"block b000[12] \(low-reclaim r[12]\): a try on root@127\.0\.0\.1:$P2 failed \(tried on root@127\.0\.0\.1:$P2, root@127\.0\.0\.1:$P1" \
	"the log names the host whose try failed, and where the block ran after"
is "$(cat "$R"/low-reclaim/control/r*/meta.json 2> /dev/null | jq -r '.dispatch.failed_tries_on[]')" \
	"root@127.0.0.1:$P2" "and the retried job's meta.json keeps it"
# What the dead host left can come back only here, where the two hosts
# share one file system (the retry runs in the same remote directory): it
# must be set aside, never imported.
is "$(grep -c "from root@127.0.0.1:$P2: ok" "$T/err-lost")" 0 "nothing of the dead host was imported"
is "$(grep "came back incomplete" "$T/err-lost" | grep -vc "from root@127.0.0.1:$P2 ")" 0 \
	"and only what it left was set aside"
is "$(procs_of "$T/h2" | wc -l)" 0 "nothing of the dead host runs on"
done_testing
