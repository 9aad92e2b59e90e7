#!/usr/bin/env bash
# A fresh machine: the host-side checks (make check: lint, series, variants,
# job files, the C unit tests, analysis), the mm/vmscan.o compile of one
# variant and the selftest build, run in a minimal Debian 12 root holding
# only what bench/deps.sh installs (tests/lib/fresh-root.sh). A command the
# suite calls that deps.sh does not name fails here, by name, on any machine,
# however much the machine running the tests has installed by hand. Booting
# is not covered: that needs the guest image and QEMU's accelerator, and
# stays with 50-boot.t and 70-bench.t.
set -u
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/lib/tap.sh"

FRESH=$SUITE_ROOT/tests/lib/fresh-root.sh
[ "$(id -u)" = 0 ] || skip_all "the fresh root needs root (mmdebstrap, chroot)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

runs "a minimal Debian 12 root with only deps.sh's packages is there" "$FRESH" build

# Each stage's output, then a line with its exit status.
stages=("make check" "bench/kernel.sh compile patched mm/vmscan.o"
	"bench/selftests.sh build patched")
start=$(date +%s)
# shellcheck disable=SC2016
"$FRESH" run bash -c 'for s in "$@"; do
	echo "=== stage: $s"
	$s 2>&1
	echo "=== exit $?: $s"
done' stages "${stages[@]}" > "$tmp/log" 2>&1
ok $? "the fresh root ran ($(($(date +%s) - start))s)" || diag_tail "$(cat "$tmp/log")"

for s in "${stages[@]}"; do
	status=$(awk -v s="$s" '$0 ~ /^=== exit [0-9]+: / {
		line = $0; sub(/^=== exit [0-9]+: /, "", line)
		if (line == s) { sub(/:$/, "", $3); print $3 } }' "$tmp/log")
	is "$status" 0 "in the fresh root: $s" ||
		diag_tail "$(awk -v s="$s" '$0 == "=== stage: " s { p = 1 } p { print }
			p && /^=== exit / { exit }' "$tmp/log")"
done
missing=$("$FRESH" missing "$tmp/log" | paste -s -d' ' -)
is "$missing" "" "no command the suite calls is missing from deps.sh's packages"

done_testing
