#!/usr/bin/env bash
# The kernel's memcg selftests build from the variants' trees (the guest run
# is make peers; it takes too long for make test): test_memcontrol builds
# for control and patched with patches/selftests applied, and a prebuilt or
# unknown variant is handled.
set -u
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/lib/tap.sh"

ST=$SUITE_ROOT/bench/selftests.sh
export SELFTESTS_OUT
SELFTESTS_OUT=$(mktemp -d)
trap 'rm -rf "$SELFTESTS_OUT"' EXIT

for v in control patched; do
	runs "test_memcontrol builds from $v's tree" "$ST" build "$v"
	[ -x "$SELFTESTS_OUT/$v/test_memcontrol" ]
	ok $? "$v: the binary is there"
	grep -q "memory.current C=%ld D=%ld" "$SELFTESTS_OUT/$v/test_memcontrol"
	ok $? "$v: with the patch that prints the children's usage"
	like "$(cat "$SELFTESTS_OUT/$v/manifest.json")" "\"variant\": \"$v\"" "$v: its manifest names the variant"
	[ -f "$SELFTESTS_OUT/$v/usr/include/linux/types.h" ]
	ok $? "$v: built against the tree's own UAPI headers"
done
a=$(jq -r .sources_sha256 "$SELFTESTS_OUT/control/manifest.json")
b=$(jq -r .sources_sha256 "$SELFTESTS_OUT/patched/manifest.json")
is "$a" "$b" "the selftests' sources are the same in both trees (the series touches mm/vmscan.c only)"
refused "an unknown variant is refused" "$ST" build no-such-variant
like "$REFUSED_OUT" "no-such-variant" "naming it"
"$ST" run x no-such-kernel > /dev/null 2>&1
is "$?" 2 "running on an unknown kernel is refused before anything boots"
refused "an unknown arm is refused" "$ST" run x control@lru
like "$REFUSED_OUT" "an arm is one of: K@mglru K@zswap K@norecursive" "naming the known ones"
refused "the @norecursive arm is refused: the selftests run under both mounts" "$ST" run x control@norecursive
like "$REFUSED_OUT" "under both mounts already" "saying why"
refused "a repeat count of 0 is refused" "$ST" run x control --repeat 0
like "$REFUSED_OUT" "--repeat must be a number from 1 to 99" "saying what it takes"

done_testing
