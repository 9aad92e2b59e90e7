#!/usr/bin/env bash
# A fresh Debian 12 machine in a directory: a minimal root (mmdebstrap's
# minbase: the essential set and apt) plus exactly the packages that
# bench/deps.sh names, to run the suite's host-side checks in. A command the
# suite calls that deps.sh does not install is missing there, as it would be
# on a new machine.
#
#   fresh-root.sh build          make the root if it is not cached; print its path
#   fresh-root.sh run CMD [ARG...]
#                                run CMD as root in a throw-away overlay of the
#                                root, in /suite (a copy of this working tree,
#                                build/ and results/ left out); the overlay,
#                                with all it wrote, is gone afterwards
#   fresh-root.sh missing FILE   the commands FILE (a log) says were not found
#
# The root is cached under FRESH_ROOT_CACHE (default ~/.cache/cgroup-bench/
# fresh-root), keyed by the package list, so it is made once per list (a
# few minutes) and reused. The three most recently used are kept.
#
# Isolation: CMD runs chrooted in private mount and PID namespaces, with
# /proc, /dev and a tmpfs /tmp, and no /sys (nothing in it can reach the
# host's cgroups). The host's ccache directory is shared, to save compile
# time; nothing else of the host is visible.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/../../bench/lib.sh"

SUITE=${FRESH_ROOT_SUITE:-bookworm}
CACHE=${FRESH_ROOT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cgroup-bench/fresh-root}
KEEP=3
RECIPE=1

packages() {
	"$SUITE_ROOT/bench/deps.sh" --list | LC_ALL=C sort -u
}

root_key() {
	sha256_of_string "suite=$SUITE
variant=minbase
recipe=$RECIPE
packages=$(packages | paste -s -d' ' -)"
}

# Drop all but the KEEP most recently used roots.
prune() {
	local old
	# shellcheck disable=SC2012
	ls -1dt "$CACHE"/*/ 2> /dev/null | tail -n +$((KEEP + 1)) | while read -r old; do
		log "removing an older fresh root: $old"
		rm -rf "$old"
	done
}

cmd_build() {
	local key dir partial
	[ "$(id -u)" = 0 ] || die "making the fresh root needs root (mmdebstrap, chroot)"
	command -v mmdebstrap > /dev/null || die "mmdebstrap not found; run: make deps"
	key=$(root_key)
	dir=$CACHE/$key
	mkdir -p "$CACHE"
	exec 8> "$CACHE/.lock"
	flock 8
	if [ ! -f "$dir/done" ]; then
		partial=$CACHE/$key.partial
		rm -rf "$partial" "$dir"
		mkdir -p "$partial"
		log "mmdebstrap $SUITE minbase + $(packages | paste -s -d' ' -)"
		log "(a few minutes, once per package list; log: $CACHE/$key.log)"
		if ! debian_root "$SUITE" "$(packages | paste -s -d, -)" "$partial/root" "$CACHE/$key.log"; then
			rm -rf "$partial"
			die "mmdebstrap failed; see $CACHE/$key.log"
		fi
		packages > "$partial/packages"
		date -u +%Y-%m-%dT%H:%M:%SZ > "$partial/done"
		mv "$partial" "$dir"
	fi
	touch "$dir"
	prune
	echo "$dir/root"
}

# The part that runs in the new namespaces: $1 the root, $2 the scratch
# directory, the rest the command.
in_namespace() {
	local root=$1 scratch=$2 m ccache
	shift 2
	m=$scratch/merged
	mount --make-rprivate /
	mount -t overlay overlay \
		-o "lowerdir=$root,upperdir=$scratch/upper,workdir=$scratch/work" "$m"
	mount -t proc proc "$m/proc"
	mount --rbind /dev "$m/dev"
	mount -t tmpfs -o size=2G tmpfs "$m/tmp"
	ccache=${CCACHE_DIR:-$HOME/.cache/ccache}
	if [ -d "$ccache" ]; then
		mkdir -p "$m/root/.cache/ccache"
		mount --bind "$ccache" "$m/root/.cache/ccache"
	fi
	mkdir -p "$m/suite"
	tar -C "$SUITE_ROOT" --exclude=./build --exclude=./results -cf - . | tar -C "$m/suite" -xf -
	exec chroot "$m" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		CI="${CI:-}" V="${V:-0}" /bin/sh -c 'cd /suite && exec "$@"' sh "$@"
}

cmd_run() {
	local root scratch status
	[ $# -gt 0 ] || usage_error "usage: $PROG run CMD [ARG...]"
	root=$(cmd_build)
	scratch=$(mktemp -d "${TMPDIR:-/var/tmp}/fresh-root.XXXXXX")
	mkdir "$scratch/upper" "$scratch/work" "$scratch/merged"
	status=0
	unshare --mount --pid --fork --kill-child -- \
		"$0" __in_namespace "$root" "$scratch" "$@" || status=$?
	rm -rf "$scratch"
	return "$status"
}

# The commands FILE says were not found, as a shell (dash, bash), make or
# env words it when a command is not installed.
cmd_missing() {
	[ $# -eq 1 ] || usage_error "usage: $PROG missing FILE"
	sed -nE \
		-e 's/^.*: ([^ :/]+): (command )?not found$/\1/p' \
		-e 's/^make(\[[0-9]+\])?: ([^ :/]+): No such file or directory$/\2/p' \
		-e "s/^.*env: '([^'/]+)': No such file or directory$/\\1/p" "$1" |
		LC_ALL=C sort -u
}

main() {
	local cmd=${1:-}
	[ $# -gt 0 ] && shift
	case "$cmd" in
	build) [ $# -eq 0 ] || usage_error "usage: $PROG build"; cmd_build ;;
	run) cmd_run "$@" ;;
	missing) cmd_missing "$@" ;;
	__in_namespace) in_namespace "$@" ;;
	*) usage_error "usage: $PROG build | run CMD [ARG...] | missing FILE" ;;
	esac
}

main "$@"
