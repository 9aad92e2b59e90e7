# Minimal TAP producer for the suite's shell tests. Source it.
# shellcheck shell=bash

TAP_N=0
TAP_FAILED=0

# shellcheck disable=SC2034
SUITE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

pass() {
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N - $*"
}

fail() {
	TAP_N=$((TAP_N + 1))
	TAP_FAILED=$((TAP_FAILED + 1))
	echo "not ok $TAP_N - $*"
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
	fi
}

# like TEXT PATTERN DESCRIPTION: passes when grep -E finds PATTERN in TEXT.
like() {
	if printf '%s\n' "$1" | grep -qE -- "$2"; then
		pass "$3"
	else
		fail "$3"
		diag "no match for /$2/ in:"
		printf '%s\n' "$1" | sed 's/^/#   /' | head -n 20
	fi
}

diag() {
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
