#!/usr/bin/env bash
# Job files and the QEMU command line, checked on the host without booting:
# bad input is refused with file, line and reason; missing kernels and images
# name the make target that builds them; --dry-run prints the command.
set -u
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/lib/tap.sh"

GUEST=$SUITE_ROOT/bench/guest.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export KOUT=$tmp/kernels ROOTFS=$tmp/rootfs.ext4 BUILD_DIR=$tmp/build ACCEL=tcg
export VARIANTS_LOCAL=$tmp/variants.local

job() {
	printf '%s\n' "$@" > "$tmp/job.conf"
}

job "# a comment" "" "memory = 1G" "cpus=2" "swap = 512M" "timeout = 60" \
	"lru_gen = off" "command = uname -r > uname.txt"
runs "a good job file is accepted" "$GUEST" check-job "$tmp/job.conf"

job "memory = 1G" "colour = blue"
refused "an unknown key is refused" "$GUEST" check-job "$tmp/job.conf"
like "$REFUSED_OUT" "job.conf:2: unknown key 'colour' \(known: memory cpus" "with file, line and the known keys"

job "cpus = 1" "" "memory=12Q"
refused "memory=12Q is refused" "$GUEST" check-job "$tmp/job.conf"
like "$REFUSED_OUT" "job.conf:3: memory: '12Q' is not a size" "with file, line and reason"

job "lru_gen = maybe" "cpus = 0" "timeout = soon" "swap = -1G"
refused "bad values are refused" "$GUEST" check-job "$tmp/job.conf"
like "$REFUSED_OUT" "job.conf:1: lru_gen: 'maybe' is not on or off" "lru_gen must be on or off"
like "$REFUSED_OUT" "job.conf:2: cpus: '0' is not a positive whole number" "cpus must be positive"
like "$REFUSED_OUT" "job.conf:3: timeout: 'soon' is not a whole number of seconds" "timeout must be seconds"
like "$REFUSED_OUT" "job.conf:4: swap: '-1G' is not a size" "swap must be a size"

job "memory = 1G" "memory = 2G"
refused "a key given twice is refused" "$GUEST" check-job "$tmp/job.conf"
like "$REFUSED_OUT" "job.conf:2: 'memory' is given twice" "the second place is named"

job "memory = 100T"
refused "a guest larger than this machine is refused" "$GUEST" check-job "$tmp/job.conf"
like "$REFUSED_OUT" "job.conf:1: memory: 100T leaves this machine less than 1G" "the reason says so, with file and line"

job "disk = 4G"
refused "a disk smaller than the image is refused" "$GUEST" check-job "$tmp/job.conf"
like "$REFUSED_OUT" "job.conf:1: disk: 4G is smaller than the image" "the reason says so, with file and line"

job "swap = 7G"
refused "swap that does not fit on the disk is refused" "$GUEST" check-job "$tmp/job.conf"
like "$REFUSED_OUT" "job.conf:1: swap: 7G does not fit on the guest's disk \(8G" "the reason names the disk size, with file and line"
job "swap = 7G" "disk = 10G"
"$GUEST" check-job "$tmp/job.conf" 2> /dev/null
ok $? "with a larger disk it fits"

job "just words"
refused "a line that is not key = value is refused" "$GUEST" check-job "$tmp/job.conf"

refused "a missing job file is refused" "$GUEST" check-job "$tmp/missing.conf"

# Missing kernel, missing image: say which make target builds them.
job "memory = 1G"
out=$("$GUEST" run control "$tmp/job.conf" "$tmp/run" 2>&1)
is "$?" 1 "a kernel that is not built is refused"
like "$out" "make kernel K=control" "naming the make target"
refused "an unknown kernel is a usage error" "$GUEST" run no-such-kernel "$tmp/job.conf" "$tmp/run"
like "$REFUSED_OUT" "known variants: control" "listing the known ones"
mkdir -p "$KOUT/control"
: > "$KOUT/control/bzImage"
out=$("$GUEST" run control "$tmp/job.conf" "$tmp/run" 2>&1)
is "$?" 1 "a missing image is refused"
like "$out" "make rootfs" "naming the make target"
[ ! -e "$tmp/run" ]
ok $? "nothing was created before the refusal"

# The command line, printed.
: > "$ROOTFS"
job "memory = 1536M" "cpus = 2" "cmdline = loglevel=4"
out=$("$GUEST" run control "$tmp/job.conf" "$tmp/run" --dry-run 2>&1)
ok $? "--dry-run prints the QEMU command"
like "$out" "^qemu-system-x86_64 " "it starts with QEMU"
like "$out" "-accel tcg,thread=multi" "ACCEL=tcg gives multi-threaded TCG"
like "$out" "-m 1536M -smp 2" "memory and CPUs come from the job"
like "$out" "-kernel $KOUT/control/bzImage" "the kernel is the variant's bzImage"
like "$out" "root=/dev/vda rw console=ttyS0 panic=-1 psi=1 systemd.unit=bench.target loglevel=4" \
	"the kernel command line boots to the agent, panics do not reboot, extra words appended"
like "$out" "-no-reboot" "QEMU exits instead of rebooting"
like "$out" "-virtfs local,path=$tmp/run/guest,mount_tag=job" "the run directory's guest/ is the only share"
[ ! -e "$tmp/run" ]
ok $? "--dry-run creates nothing"

# A job's needs: a kernel whose config lacks one is refused before booting.
printf 'CONFIG_MEMCG=y\nCONFIG_SLUB_DEBUG=y\n# CONFIG_MEMCG_KMEM is not set\n' > "$KOUT/control/config"
job "memory = 1G" "needs = CONFIG_MEMCG CONFIG_MEMCG_KMEM"
refused "a kernel without an option the job needs is refused" "$GUEST" run control "$tmp/job.conf" "$tmp/run"
like "$REFUSED_OUT" "kernel 'control' has no CONFIG_MEMCG_KMEM \(its config: $KOUT/control/config\), which this job needs" \
	"naming the option and the config"
[ ! -e "$tmp/run" ]
ok $? "nothing was created before the refusal"
job "memory = 1G" "needs = CONFIG_MEMCG"
"$GUEST" run control "$tmp/job.conf" "$tmp/run" --dry-run > /dev/null 2>&1
ok $? "with every option it needs, the job goes on"
job "memory = 1G"
mkdir -p "$tmp/nodebug/control" && : > "$tmp/nodebug/control/bzImage"
echo CONFIG_MEMCG=y > "$tmp/nodebug/control/config"
refused "an arm's needs add to the job's: K@slubdebug needs CONFIG_SLUB_DEBUG" \
	env KOUT="$tmp/nodebug" "$GUEST" run control@slubdebug "$tmp/job.conf" "$tmp/run"
like "$REFUSED_OUT" "has no CONFIG_SLUB_DEBUG .*with arm slubdebug" "naming the arm"
# check-job JOB KERNEL: the same, without booting (what a job queued for
# other hosts gets here first).
refused "check-job with a kernel: the arm's needs checked too" \
	env KOUT="$tmp/nodebug" "$GUEST" check-job "$tmp/job.conf" control@slubdebug
like "$REFUSED_OUT" "has no CONFIG_SLUB_DEBUG .*with arm slubdebug" "naming the arm"
runs "check-job with a kernel that has what the job needs" "$GUEST" check-job "$tmp/job.conf" control@slubdebug
refused "check-job with a kernel that does not exist" "$GUEST" check-job "$tmp/job.conf" no-such-kernel
job "needs = SLUB"
refused "a need that is not an option is refused" "$GUEST" check-job "$tmp/job.conf"
like "$REFUSED_OUT" "job.conf:1: needs: 'SLUB' is not a kernel option \(CONFIG_X\)" "with file, line and reason"

mkdir -p "$tmp/run" && : > "$tmp/run/something"
refused "a run directory that is not empty is refused" "$GUEST" run control "$tmp/job.conf" "$tmp/run"

refused "an unknown ACCEL is refused" env ACCEL=warp "$GUEST" accel control

out=$("$GUEST" shell control --dry-run memory=1G 2>&1)
like "$out" "-serial mon:stdio" "the interactive shell has the console on the terminal"

# QEMU that fails, is killed from outside, or never starts: guest.sh still
# gives its own verdict and exit status, keeps what it has, and removes the
# overlay. A stand-in QEMU (QEMU=) plays each part; nothing boots.
# shellcheck disable=SC2016 # the script is for the stand-in to expand
fake_qemu() {
	printf '#!/bin/sh\n[ "$1" = --version ] && { echo "QEMU emulator version 0.0"; exit 0; }\n%s\n' \
		"$2" > "$tmp/$1"
	chmod +x "$tmp/$1"
}
fake_qemu qemu-fails 'echo "qemu: could not load kernel: bad magic" >&2; exit 1'
fake_qemu qemu-sleeps "echo \$\$ > $tmp/qemu.pid; exec sleep 60"
fake_qemu qemu-quiet 'exit 0'
job "memory = 1G" "timeout = 30"

# verdict_is RUN STATUS WANT_STATUS VERDICT DETAIL_PATTERN WHAT
verdict_is() {
	local run=$1 status=$2 want=$3 verdict=$4 detail=$5 what=$6
	is "$status" "$want" "$what: guest.sh's own exit status ($want), not QEMU's"
	is "$(jq -r .result "$run/result.json" 2> /dev/null)" "$verdict" "$what: result.json says $verdict"
	like "$(jq -r .detail "$run/result.json" 2> /dev/null)" "$detail" "$what: saying how QEMU ended"
	[ "$(jq -r 'has("last_console_lines")' "$run/result.json" 2> /dev/null)" = true ]
	ok $? "$what: with the console's last lines"
	[ -f "$run/meta.json" ] && [ ! -e "$run/disk.qcow2" ]
	ok $? "$what: meta.json written, the overlay removed"
}

QEMU=$tmp/qemu-fails "$GUEST" run control "$tmp/job.conf" "$tmp/r-fails" > /dev/null 2>&1
verdict_is "$tmp/r-fails" $? 7 qemu-error "exited with status 1.*could not load kernel: bad magic" \
	"QEMU exiting with an error"

rm -f "$tmp/qemu.pid"
QEMU=$tmp/qemu-sleeps "$GUEST" run control "$tmp/job.conf" "$tmp/r-killed" > /dev/null 2>&1 &
gpid=$!
for _ in $(seq 100); do [ -s "$tmp/qemu.pid" ] && break; sleep 0.1; done
kill -KILL "$(cat "$tmp/qemu.pid")"
wait "$gpid"
verdict_is "$tmp/r-killed" $? 7 qemu-error "killed by signal 9 \(KILL\)" "QEMU killed with SIGKILL"

QEMU=$tmp/no-such-qemu "$GUEST" run control "$tmp/job.conf" "$tmp/r-missing" > /dev/null 2>&1
verdict_is "$tmp/r-missing" $? 7 qemu-error "could not be started" "QEMU that does not start"

QEMU=$tmp/qemu-quiet "$GUEST" run control "$tmp/job.conf" "$tmp/r-quiet" > /dev/null 2>&1
verdict_is "$tmp/r-quiet" $? 6 no-status "powered off without a status" "a guest that stops silently"

is "$(jq -r .schema "$tmp/r-quiet/result.json" 2> /dev/null)" 1 "result.json has its schema"
# What bench.sh and selftests.sh take for a finished job: result.json read
# as JSON, schema 1 (or none: older runs), verdict ok.
mkdir -p "$tmp/ok" "$tmp/old" "$tmp/cut" "$tmp/other" "$tmp/bad"
printf '{\n  "schema": 1,\n  "result": "ok"\n}\n' > "$tmp/ok/result.json"
printf '{\n  "result": "ok"\n}\n' > "$tmp/old/result.json"
printf '{\n  "schema": 1,\n  "result": "ok"' > "$tmp/cut/result.json"
printf '{"schema": 2, "result": "ok"}\n' > "$tmp/other/result.json"
printf '{"schema": 1, "result": "timeout", "detail": "\\"result\\": \\"ok\\""}\n' > "$tmp/bad/result.json"
is "$(for d in ok old cut other bad nothing; do
	(. "$SUITE_ROOT/bench/lib.sh" && job_ok "$tmp/$d") && printf '%s ' "$d"
done)" "ok old " "job_ok: an ok verdict of schema 1 or none; not a cut file, another schema, another verdict, no file"

# An arm: K@ARM runs variant K with bench/arms' job keys for ARM, and
# meta.json records the variant and the arm apart.
job "memory = 1G" "timeout = 30" "lru_gen = off"
QEMU=$tmp/qemu-quiet "$GUEST" run control@mglru "$tmp/job.conf" "$tmp/r-arm" > /dev/null 2>&1
like "$(cat "$tmp/r-arm/job.conf" 2> /dev/null)" "^lru_gen = on$" "the arm's job key replaces the job's own"
like "$(cat "$tmp/r-arm/guest/job.env" 2> /dev/null)" "^JOB_LRU_GEN=y$" "and reaches the guest"
is "$(jq -r '[.kernel, .variant, .arm] | join(" ")' "$tmp/r-arm/meta.json" 2> /dev/null)" \
	"control@mglru control mglru" "meta.json: the kernel, its variant and its arm"
QEMU=$tmp/qemu-quiet "$GUEST" run control@norecursive "$tmp/job.conf" "$tmp/r-arm2" > /dev/null 2>&1
like "$(cat "$tmp/r-arm2/job.conf" 2> /dev/null)" "^recursiveprot = off$" "a key the job lacks is added"
is "$(jq -r '[.kernel, .variant, .arm] | join(" ")' "$tmp/r-quiet/meta.json" 2> /dev/null)" \
	"control control " "a plain variant has no arm"
refused "an unknown arm is refused" "$GUEST" run control@warp "$tmp/job.conf" "$tmp/r-arm3"
like "$REFUSED_OUT" "an arm is one of: K@mglru K@zswap K@norecursive" "listing the arms"
[ ! -e "$tmp/r-arm3" ]
ok $? "before anything is created"
printf 'odd   lru_gen=maybe   model=cliff   a broken arm\n' > "$tmp/arms"
out=$(ARMS_FILE=$tmp/arms QEMU=$tmp/qemu-quiet "$GUEST" run control@odd "$tmp/job.conf" "$tmp/r-arm4" 2>&1)
[ "$?" = 2 ]
ok $? "an arm that sets a bad job key is refused"
like "$out" "lru_gen: 'maybe' is not on or off" "naming the key"
like "$out" "arm 'odd' \(bench/arms\) sets a job key this job cannot take" "and the arm"

rm -f "$tmp/qemu.pid"
QEMU=$tmp/qemu-sleeps "$GUEST" run control "$tmp/job.conf" "$tmp/r-term" > /dev/null 2>&1 &
gpid=$!
for _ in $(seq 100); do [ -s "$tmp/qemu.pid" ] && break; sleep 0.1; done
kill -TERM "$gpid"
wait "$gpid"
is "$?" 143 "guest.sh stopped with SIGTERM exits 143"
sleep 0.2
! kill -0 "$(cat "$tmp/qemu.pid")" 2> /dev/null
ok $? "and takes QEMU with it"
[ ! -e "$tmp/r-term/disk.qcow2" ]
ok $? "and removes the overlay"

done_testing
