# Minimal TAP producer for the suite's shell tests. Source it.
# shellcheck shell=bash

TAP_N=0
TAP_FAILED=0

# shellcheck disable=SC2034
SUITE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# Each check returns 0 when it passed and 1 when it failed, so a test can
# add diagnostics with "check ... || diag ...".
pass() {
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N - $*"
}

fail() {
	TAP_N=$((TAP_N + 1))
	TAP_FAILED=$((TAP_FAILED + 1))
	echo "not ok $TAP_N - $*"
	return 1
}

# ok STATUS DESCRIPTION: passes when STATUS is 0.
ok() {
	local status=$1
	shift
	if [ "$status" -eq 0 ]; then pass "$@"; else fail "$@"; fi
}

# is GOT WANT DESCRIPTION
is() {
	if [ "$1" = "$2" ]; then
		pass "$3"
	else
		fail "$3"
		diag "got:  '$1'"
		diag "want: '$2'"
		return 1
	fi
}

# like TEXT PATTERN DESCRIPTION: passes when grep -E finds PATTERN in TEXT.
like() {
	if printf '%s\n' "$1" | grep -qE -- "$2"; then
		pass "$3"
	else
		fail "$3"
		diag "no match for /$2/ in:"
		printf '%s\n' "$1" | sed 's/^/#   /' | head -n 20 >&2
		return 1
	fi
}

# runs DESCRIPTION COMMAND [ARG...]: passes when COMMAND exits 0. When it
# does not, the command's own last lines (stdout and stderr, TAP_TAIL of
# them, default 20) are shown, so the cause is seen and not only what
# later checks trip over.
runs() {
	local desc=$1 out status
	shift
	out=$("$@" 2>&1)
	status=$?
	ok "$status" "$desc" && return 0
	diag "exit status $status of: $*"
	diag_tail "$out"
	return 1
}

# refused DESCRIPTION COMMAND [ARG...]: passes when COMMAND refuses its
# input, exiting 2 (the suite's status for bad input). Its output (stdout
# and stderr) is left in REFUSED_OUT for like checks of what it said; on
# any other status its last lines are shown.
refused() {
	local desc=$1 status
	shift
	REFUSED_OUT=$("$@" 2>&1)
	status=$?
	[ "$status" = 2 ] && { pass "$desc"; return 0; }
	fail "$desc"
	diag "exit status $status (want 2) of: $*"
	diag_tail "$REFUSED_OUT"
	return 1
}

# diag_tail TEXT: the last lines of TEXT (a failed command's output) as
# diagnostics, TAP_TAIL of them (default 20).
diag_tail() {
	printf '%s\n' "$1" | tail -n "${TAP_TAIL:-20}" | sed 's/^/#   /' >&2
}

# diag MESSAGE: why a check failed. On stderr, as Test::More does, so that
# prove shows it without -v (and CI's log has it).
diag() {
	echo "# $*" >&2
}

# note MESSAGE: what a passing run may tell, on stdout (shown by prove -v).
note() {
	echo "# $*"
}

skip_all() {
	echo "1..0 # SKIP $*"
	exit 0
}

done_testing() {
	echo "1..$TAP_N"
	[ "$TAP_FAILED" -eq 0 ]
}
