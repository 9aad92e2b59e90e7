#!/usr/bin/env bash
# Unit tests of workloads/common.c (sizes, numbers, rate limiting), run
# under valgrind: a leak or a bad access fails the test.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/lib/tap.sh"
make -s -C "$SUITE_ROOT" build/bin/test_common > /dev/null || { echo "Bail out! build failed"; exit 1; }
exec valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=all \
	"$SUITE_ROOT/build/bin/test_common"
