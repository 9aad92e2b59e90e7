#!/usr/bin/env bash
# Real boots: two kernel variants in QEMU, each running a trivial job through
# the agent; then a job that hangs, one that panics the guest and one that
# fails, each reported as such. Builds the kernels and the image if needed
# (about 15 minutes the first time on a 2-core machine; seconds after that).
set -u
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/lib/tap.sh"

GUEST=$SUITE_ROOT/bench/guest.sh
KERNELS=(control patched)
KOUT=${KOUT:-${BUILD_DIR:-$SUITE_ROOT/build}/kernels}

[ "$(id -u)" = 0 ] || skip_all "building the guest image needs root"
command -v qemu-system-x86_64 > /dev/null || skip_all "QEMU missing (make deps installs it)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$SUITE_ROOT/bench/kernel.sh" build "${KERNELS[@]}" >&2
ok $? "kernels ${KERNELS[*]} are built"
"$SUITE_ROOT/rootfs/build.sh" > /dev/null
ok $? "the guest image is built"

json_field() {
	jq -r ".$2" "$1" 2> /dev/null
}

# A path on the host that a guest must not be able to reach.
escape=/tmp/bench-escape-$$-$RANDOM
rm -f "$escape"
cat > "$tmp/smoke.conf" <<JOB
# Trivial job: the agent records the guest's facts; the command adds files,
# and tries to write to the host through a symlink in the share.
memory = 1G
cpus = 2
swap = 256M
disk = 10G
timeout = 180
command = uname -r > uname.txt && cat /proc/swaps > swaps.txt && ln -s $escape escape && echo escaped > escape
JOB

for k in "${KERNELS[@]}"; do
	run=$tmp/run-$k
	"$GUEST" run "$k" "$tmp/smoke.conf" "$run" 2> "$tmp/$k.err"
	status=$?
	ok "$status" "$k: the smoke job ran"
	[ "$status" = 0 ] || sed 's/^/# /' "$tmp/$k.err"
	meta=$run/guest/out/guest-meta.json
	is "$(json_field "$run/result.json" result)" ok "$k: result.json says ok"
	want=$(json_field "$KOUT/$k/manifest.json" kernel_release)
	is "$(json_field "$meta" kernel_release)" "$want" "$k: the guest ran kernel $want"
	is "$(cat "$run/guest/out/uname.txt" 2> /dev/null)" "$want" "$k: the job's own output came back"
	like "$(json_field "$meta" cgroup2_mount_options)" "nsdelegate" "$k: cgroup2 is mounted (by systemd)"
	like "$(json_field "$meta" cgroup_controllers)" "(^| )memory( |$)" "$k: the memory controller is enabled"
	is "$(json_field "$meta" lru_gen_enabled)" "0x0000" "$k: MGLRU is off"
	like "$(cat "$run/guest/out/swaps.txt" 2> /dev/null)" "^/swapfile[[:space:]]+file[[:space:]]+262140" "$k: 256M of swap is on"
	like "$(json_field "$run/meta.json" accelerator)" "^(kvm|tcg)$" "$k: meta.json records the accelerator"
	like "$(json_field "$run/meta.json" qemu_command)" "^qemu-system-x86_64 " "$k: meta.json records the QEMU command"
	root_fs=$(json_field "$meta" root_fs_bytes)
	[ "${root_fs:-0}" -gt $((9 * 1024 * 1024 * 1024)) ]
	ok $? "$k: the root file system grew to the job's 10G disk ($root_fs bytes)"
	[ ! -e "$escape" ]
	ok $? "$k: the guest could not write outside its run directory"
	[ -s "$run/console.log" ]
	ok $? "$k: the serial console log is kept"
	[ ! -e "$run/disk.qcow2" ]
	ok $? "$k: the throw-away overlay is gone"
	note "$k: agent started $(json_field "$run/result.json" agent_start_seconds)s after QEMU," \
		"whole boot $(json_field "$run/result.json" boot_seconds)s ($(json_field "$run/meta.json" accelerator))"
done

# A job that hangs is killed at its deadline.
printf '%s\n' "memory = 1G" "swap = 0" "timeout = 60" "command = sleep 1000" > "$tmp/hang.conf"
start=$(date +%s)
"$GUEST" run control "$tmp/hang.conf" "$tmp/run-hang" 2> /dev/null
is "$?" 3 "a hanging job ends with the timeout status"
elapsed=$(($(date +%s) - start))
[ "$elapsed" -lt 75 ]
ok $? "it was killed at its deadline (${elapsed}s for a 60s deadline)"
is "$(json_field "$tmp/run-hang/result.json" result)" timeout "result.json says timeout"
grep -q "running: sleep 1000" "$tmp/run-hang/console.log"
ok $? "the console log of the killed guest is kept"

# A guest that panics.
printf '%s\n' "memory = 1G" "swap = 0" "timeout = 120" "command = echo c > /proc/sysrq-trigger" > "$tmp/panic.conf"
"$GUEST" run patched "$tmp/panic.conf" "$tmp/run-panic" 2> /dev/null
is "$?" 5 "a panicking guest ends with the panic status"
is "$(json_field "$tmp/run-panic/result.json" result)" panic "result.json says panic"
like "$(cat "$tmp/run-panic/result.json")" "Kernel panic" "and quotes the panic line"

# A job whose command fails.
printf '%s\n' "memory = 1G" "swap = 0" "timeout = 120" "command = exit 7" > "$tmp/fail.conf"
"$GUEST" run control "$tmp/fail.conf" "$tmp/run-fail" 2> /dev/null
is "$?" 1 "a failing job ends with the failure status"
like "$(json_field "$tmp/run-fail/result.json" detail)" "exited with status 7" "result.json says how it failed"

done_testing
