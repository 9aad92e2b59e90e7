#!/usr/bin/env bash
# Unit tests of workloads/cgutil.c (the one module that reads cgroupfs and
# /proc), run under valgrind on files the test writes itself.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/lib/tap.sh"
make -s -C "$SUITE_ROOT" build/bin/test_cgutil > /dev/null || { echo "Bail out! build failed"; exit 1; }
exec valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=all \
	"$SUITE_ROOT/build/bin/test_cgutil"
