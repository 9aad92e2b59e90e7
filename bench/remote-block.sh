#!/usr/bin/env bash
# Run one block of a dispatched run on this host (bench/hosts.py sends it,
# GNU parallel runs it): every job of BLOCK_DIR/jobs.tsv, one after the
# other, with bench.py one, exactly as a local run does, against the suite,
# image and kernels shipped into this host's directory by hash. With
# KIND=guest in block.env, the jobs are prepared guest jobs (make peers,
# make regress), each run with guest.sh into out/ATTEMPT/guest/ID.
#
#   remote-block.sh BLOCK_DIR
#
# Results go to BLOCK_DIR/out/ATTEMPT/RUN/SCENARIO/KERNEL/rN, each job
# directory with a SHA256SUMS of its files (written last: a job without one
# did not finish), and BLOCK_DIR/out/ATTEMPT/attempt.json says which host
# ran it. Exit status: 0 if every job is ok (KIND=guest: every job has a
# verdict its host did not cause), 1 if one failed, 2 if the block cannot
# run here at all.
set -euo pipefail

if [ $# -ne 1 ] || [ ! -f "$1/block.env" ]; then
	echo "usage: remote-block.sh BLOCK_DIR (with block.env and jobs.tsv)" >&2
	exit 2
fi
block=$(cd "$1" && pwd)
# RUN PROFILE BLOCK SUITE_HASH SUITE_VERSION IMAGE_HASH ACCEL KERNELS
# shellcheck source=/dev/null
. "$block/block.env"
BLOCK=${BLOCK:?block.env says no BLOCK}
R=$(cd "${BENCH_REMOTE_DIR:-$HOME/.cache/cgroup-bench}" && pwd)
suite=$R/suite/$SUITE_HASH
image=$R/images/$IMAGE_HASH/rootfs.ext4
say() {
	echo "remote-block.sh: [$(uname -n) $BLOCK] $*" >&2
}
[ -f "$suite/.complete" ] || { say "no suite $SUITE_HASH in $R"; exit 2; }
[ -f "$image" ] || { say "no image $IMAGE_HASH in $R"; exit 2; }

attempt=$(date -u +%Y%m%dT%H%M%SZ)-$(uname -n)-$$
# The dispatcher reads this line (GNU parallel passes on every try's
# output): it names the host of a try that then fails or is cut off.
say "try $attempt starts (sshlogin ${PARALLEL_SSHLOGIN:-})"
out=$block/out/$attempt
mkdir -p "$out" "$block/kernels"
for kv in $KERNELS; do
	v=${kv%%=*} h=${kv#*=}
	[ -f "$R/kernels/$h/.complete" ] || { say "no kernel $v ($h) in $R"; exit 2; }
	ln -sfn "$R/kernels/$h" "$block/kernels/$v"
done
json() {
	/usr/bin/python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$1"
}
cat > "$out/attempt.json" <<EOF
{"sshlogin": $(json "${PARALLEL_SSHLOGIN:-}"), "hostname": $(json "$(uname -n)"),
 "seq": $(json "${PARALLEL_SEQ:-}"), "started": $(json "$(date -u +%Y-%m-%dT%H:%M:%SZ)"),
 "cpus": $(json "$(getconf _NPROCESSORS_ONLN)"), "kernel": $(json "$(uname -r)")}
EOF

# sums DIR: SHA256SUMS of DIR's files, written last.
sums() {
	[ -d "$1" ] || return 0
	(cd "$1" && find . -type f ! -name SHA256SUMS -print0 | LC_ALL=C sort -z |
		xargs -0 -r sha256sum > "$out/.sums" && mv "$out/.sums" SHA256SUMS)
}

failed=0
if [ "${KIND:-bench}" = guest ]; then
	# Prepared guest jobs (make peers, make regress): jobs.tsv says ID and
	# kernel, jobs/ID holds the job file and the files for the guest's
	# share. A job's verdict (a revert that panics, say) is its result,
	# not a failure of the block: only one that left no result.json, was
	# refused or whose QEMU failed is tried again elsewhere.
	while IFS=$'\t' read -r id kernel; do
		[ -n "$id" ] || continue
		with=()
		for f in "$block/jobs/$id"/*; do
			[ "${f##*/}" = job.conf ] || with+=(--with "$f")
		done
		rc=0
		KOUT=$block/kernels ROOTFS=$image BUILD_DIR=$R/build ACCEL=$ACCEL \
			BENCH_SUITE_VERSION=$SUITE_VERSION \
			bash "$suite/bench/guest.sh" run "$kernel" "$block/jobs/$id/job.conf" \
			"$out/guest/$id" "${with[@]}" < /dev/null || rc=$?
		case $rc in 2 | 7) failed=1 ;; esac
		[ -f "$out/guest/$id/result.json" ] || failed=1
		sums "$out/guest/$id"
	done < "$block/jobs.tsv"
	exit "$failed"
fi
while IFS=$'\t' read -r kernel scenario repeat; do
	[ -n "$kernel" ] || continue
	if ! KOUT=$block/kernels ROOTFS=$image BUILD_DIR=$R/build RESULTS=$out \
		BENCH_SUITE_VERSION=$SUITE_VERSION ACCEL=$ACCEL \
		/usr/bin/python3 "$suite/bench/bench.py" one "$RUN" "$kernel" "$scenario" "$repeat" \
		--profile "$PROFILE" < /dev/null; then
		failed=1
	fi
	sums "$out/$RUN/$scenario/$kernel/r$repeat"
done < "$block/jobs.tsv"
exit "$failed"
