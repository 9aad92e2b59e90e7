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

# debian_root SUITE PACKAGES OUT LOG: a minimal Debian root (mmdebstrap's
# minbase: the essential set and apt) plus PACKAGES (comma-separated), as
# OUT (a directory, or a .tar), without manual pages, docs or locales, from
# this machine's apt sources. On failure: the log's tail, OUT removed, 1.
debian_root() {
	local suite=$1 packages=$2 out=$3 logfile=$4
	if ! run mmdebstrap --variant=minbase --include="$packages" \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		"$suite" "$out" > "$logfile" 2>&1; then
		rm -rf "$out"
		tail -n 20 "$logfile" | sed 's/^/  /' >&2
		return 1
	fi
}

# Write stdin to FILE atomically: readers see the old file or the new one.
write_atomic() {
	local file=$1
	cat > "$file.tmp.$$" && mv -f "$file.tmp.$$" "$file"
}

shell_quote() {
	printf "'%s'" "${1//\'/\'\\\'\'}"
}

# ---------------------------------------------------------------------------
# key = value files (jobs, scenarios): '#' comments, one "key = value" a line.
# A table names every key with its default ("-" for empty) and type:
#   "memory 2G size"   size, count, seconds, interval, onoff, string, knob, steps

# Bytes in SIZE ("512M", "2G", "1.5G", "4096"), or fail.
size_bytes() {
	local s=$1 num unit mult
	[[ "$s" =~ ^([0-9]+(\.[0-9]+)?)([KMGT]?)$ ]] || return 1
	num=${BASH_REMATCH[1]}
	unit=${BASH_REMATCH[3]}
	case "$unit" in
	"") mult=1 ;;
	K) mult=1024 ;;
	M) mult=$((1024 * 1024)) ;;
	G) mult=$((1024 * 1024 * 1024)) ;;
	T) mult=$((1024 * 1024 * 1024 * 1024)) ;;
	esac
	awk -v n="$num" -v m="$mult" 'BEGIN { printf "%.0f\n", n * m }'
}

# Check VALUE against TYPE; print the reason and fail if it does not fit.
check_value() {
	local type=$1 value=$2 word
	case "$type" in
	size)
		size_bytes "$value" > /dev/null ||
			{ echo "'$value' is not a size (e.g. 512M, 2G, 1.5G)"; return 1; }
		;;
	count)
		[[ "$value" =~ ^[1-9][0-9]*$ ]] ||
			{ echo "'$value' is not a positive whole number"; return 1; }
		;;
	seconds)
		[[ "$value" =~ ^[0-9]+$ ]] ||
			{ echo "'$value' is not a whole number of seconds"; return 1; }
		;;
	interval)
		if ! [[ "$value" =~ ^[0-9]+(\.[0-9]+)?$ ]] || awk -v v="$value" 'BEGIN { exit v > 0 }'; then
			echo "'$value' is not a number of seconds above 0 (e.g. 0.25)"
			return 1
		fi
		;;
	onoff)
		case "$value" in on | off) ;; *) echo "'$value' is not on or off"; return 1 ;; esac
		;;
	knob)
		case "$value" in low | min) ;; *) echo "'$value' is not low or min"; return 1 ;; esac
		;;
	steps)
		[ -n "$value" ] || { echo "no steps given"; return 1; }
		for word in $value; do
			[[ "$word" =~ ^[0-9]+(\.[0-9]+)?%$ ]] || size_bytes "$word" > /dev/null ||
				{ echo "step '$word' is neither a size (800M) nor a percentage (90%)"; return 1; }
		done
		;;
	string) ;;
	esac
}

# Parse key = value file $1 against the table named $2. Prints
# "key<TAB>value" for every key of the table (defaults filled in); on any
# error prints FILE:LINE: reason for each and fails with status 2.
parse_kv() {
	local file=$1 n=0 line key value row reason errors=0 seen=" " k names=""
	local -n table=$2
	declare -A val type
	[ -f "$file" ] || { echo "$PROG: '$file' not found" >&2; return 2; }
	for row in "${table[@]}"; do
		read -r k value reason <<< "$row"
		type[$k]=$reason
		names="$names$k "
	done
	while IFS= read -r line || [ -n "$line" ]; do
		n=$((n + 1))
		[[ "$line" =~ ^[[:space:]]*(#.*)?$ ]] && continue
		if ! [[ "$line" =~ ^[[:space:]]*([a-z_.]+)[[:space:]]*=[[:space:]]*(.*[^[:space:]])?[[:space:]]*$ ]]; then
			echo "$file:$n: not a 'key = value' line: $line" >&2
			errors=$((errors + 1))
			continue
		fi
		key=${BASH_REMATCH[1]}
		value=${BASH_REMATCH[2]}
		if [ -z "${type[$key]+x}" ]; then
			echo "$file:$n: unknown key '$key' (known: $names)" >&2
			errors=$((errors + 1))
		elif [[ "$seen" == *" $key "* ]]; then
			echo "$file:$n: '$key' is given twice" >&2
			errors=$((errors + 1))
		elif ! reason=$(check_value "${type[$key]}" "$value"); then
			echo "$file:$n: $key: $reason" >&2
			errors=$((errors + 1))
		else
			seen="$seen$key "
			val[$key]=$value
		fi
	done < "$file"
	[ "$errors" = 0 ] || return 2
	for row in "${table[@]}"; do
		read -r k value _ <<< "$row"
		[ "$value" = - ] && value=""
		printf '%s\t%s\n' "$k" "${val[$k]-$value}"
	done
}

# job_ok RUNDIR: whether guest.sh's verdict in RUNDIR/result.json is ok,
# read as JSON of a schema this suite writes (1; a file from before the
# field counts as 1). A missing or damaged file is not ok.
job_ok() {
	/usr/bin/python3 - "$1/result.json" <<'PY' 2> /dev/null
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    sys.exit(1)
sys.exit(not (isinstance(d, dict) and d.get("schema", 1) == 1 and d.get("result") == "ok"))
PY
}

# The line number of KEY $2 in key = value file $1, or nothing.
key_line() {
	awk -v k="$2" '{ l = $0; sub(/^[ \t]*/, "", l) }
		index(l, k) == 1 && substr(l, length(k) + 1) ~ /^[ \t]*=/ { print NR; exit }' "$1"
}

# kv_refuse FILE KEY REASON...: say on stderr why KEY of key = value file
# FILE is refused, with its line when the file has the key.
kv_refuse() {
	local line
	line=$(key_line "$1" "$2")
	echo "$1${line:+:$line}: $2: ${*:3}" >&2
}

# Value of KEY $2 in parsed key = value text $1 (the output of parse_kv).
kv_get() {
	printf '%s\n' "$1" | awk -F'\t' -v k="$2" '$1 == k { sub(/^[^\t]*\t/, ""); print; exit }'
}

# A kernel to run is a variant, optionally with an arm: K@ARM runs K with
# the job keys bench/arms gives ARM, whatever the job says.
ARMS_FILE=${ARMS_FILE:-$SUITE_ROOT/bench/arms}

# name<TAB>job keys<TAB>model<TAB>description for each arm of bench/arms.
arm_table() {
	awk '!/^[ \t]*(#|$)/ {
		keys = ""; model = ""; desc = ""
		for (i = 2; i <= NF; i++) {
			if (desc == "" && $i ~ /^model=/) model = substr($i, 7)
			else if (desc == "" && $i ~ /=/) keys = keys (keys == "" ? "" : " ") $i
			else desc = desc (desc == "" ? "" : " ") $i
		}
		printf "%s\t%s\t%s\t%s\n", $1, keys, model, desc
	}' "$ARMS_FILE"
}

arm_names() {
	arm_table | cut -f1
}

# The variant behind kernel $1.
arm_kernel() {
	echo "${1%%@*}"
}

# The arm of kernel $1, or nothing.
arm_of() {
	case "$1" in *@*) echo "${1#*@}" ;; esac
}

# Fails with a usage error unless $1 is a variant name or K@ARM.
arm_check() {
	case "$1" in
	*@*)
		[ -n "${1%%@*}" ] && arm_names | grep -qxF -- "${1#*@}" && return 0
		usage_error "kernel '$1': an arm is one of: $(arm_names | sed 's/^/K@/' | paste -sd ' ')"
		;;
	esac
	return 0
}

# arm_apply KERNEL: copy a job file from stdin to stdout with the job keys
# of KERNEL's arm set: a key the file has gets the arm's value, one it has
# not is added. A plain variant changes nothing.
arm_apply() {
	local arm keys
	arm=$(arm_of "$1")
	[ -n "$arm" ] && keys=$(arm_table | awk -F'\t' -v a="$arm" '$1 == a { print $2 }')
	awk -v keys="${keys:-}" '
		BEGIN {
			n = split(keys, w, " ")
			for (i = 1; i <= n; i++) { k = substr(w[i], 1, index(w[i], "=") - 1); v[k] = substr(w[i], index(w[i], "=") + 1); order[i] = k }
		}
		{
			line = $0; sub(/^[ \t]*/, "", line)
			k = line; sub(/[ \t]*=.*/, "", k)
			if (line !~ /^#/ && index(line, "=") && (k in v)) { print k " = " v[k]; done[k] = 1; next }
			print
		}
		END { for (i = 1; i <= n; i++) if (!(order[i] in done)) print order[i] " = " v[order[i]] }'
}
