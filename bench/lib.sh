# Shell helpers shared by the suite's scripts. Source it; do not run it.
# shellcheck shell=bash
# Variables here are for the scripts that source this file.
# shellcheck disable=SC2034

# The repository root, wherever the caller was started from.
SUITE_ROOT=${SUITE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
# Everything built or unpacked lives under here; git ignores it.
BUILD_DIR=${BUILD_DIR:-$SUITE_ROOT/build}

PROG=${PROG:-$(basename "$0")}

# Exit codes, as in kselftest: 0 ok, 1 failure, 2 usage, 4 skipped.
EX_FAIL=1
EX_USAGE=2
EX_SKIP=4

die() {
	echo "$PROG: $*" >&2
	exit "$EX_FAIL"
}

usage_error() {
	echo "$PROG: $*" >&2
	exit "$EX_USAGE"
}

log() {
	echo "$PROG: $*" >&2
}

# Verbose mode (V=1) echoes external commands before running them.
run() {
	if [ "${V:-0}" = 1 ]; then
		echo "+ $*" >&2
	fi
	"$@"
}

sha256_of_files() {
	cat "$@" | sha256sum | cut -d' ' -f1
}

sha256_of_string() {
	printf '%s' "$1" | sha256sum | cut -d' ' -f1
}

# Quote a string as a JSON string literal. Control characters other than tab
# and newline (terminal escapes in console logs, carriage returns) are dropped.
json_str() {
	local s
	s=$(printf '%s' "$1" | tr -d '\000-\010\013-\037')
	s=${s//\\/\\\\}
	s=${s//\"/\\\"}
	s=${s//$'\t'/\\t}
	s=${s//$'\n'/\\n}
	printf '"%s"' "$s"
}

# Write stdin to FILE atomically: readers see the old file or the new one.
write_atomic() {
	local file=$1
	cat > "$file.tmp.$$" && mv -f "$file.tmp.$$" "$file"
}
