#!/usr/bin/env bash
# Install the Debian packages the suite needs, if any is missing.
#
#   deps.sh [GROUP...]          groups: kernel guest analysis hosts test
#                               (default: all)
#   deps.sh --list [GROUP...]   print the groups' packages, one a line
#
# This list is the whole of what the suite needs beyond Debian's essential
# set: tests/90-fresh-root.t runs the host-side checks in a root holding
# these packages and nothing else.
# Needs root to install; without it, prints the apt-get command to run.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

declare -A PKGS=(
	# Building kernels from Debian's linux-source (rsync: headers_install,
	# for the selftests).
	[kernel]="build-essential patch flex bison bc libelf-dev libssl-dev
		ccache cpio kmod xz-utils rsync linux-source-6.1"
	# The guest: its image and QEMU.
	[guest]="qemu-system-x86 qemu-utils mmdebstrap e2fsprogs"
	# Analysis: tables, statistics, plots, reports (Debian's Python only).
	[analysis]="python3 python3-matplotlib"
	# Spreading a run over other machines (bench/hosts.py): GNU parallel,
	# ssh and rsync.
	[hosts]="parallel openssh-client rsync"
	# Running the tests (git: the lint checks what git ignores;
	# openssh-server: tests/75-hosts.t starts its own sshd on 127.0.0.1).
	[test]="perl shellcheck jq valgrind git openssh-server"
)

list=0
if [ "${1:-}" = --list ]; then
	list=1
	shift
fi
groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(kernel guest analysis hosts test)

want=""
for g in "${groups[@]}"; do
	[ -n "${PKGS[$g]+x}" ] ||
		usage_error "unknown package group '$g' (${!PKGS[*]})"
	want="$want ${PKGS[$g]}"
done
if [ "$list" = 1 ]; then
	# shellcheck disable=SC2086
	printf '%s\n' $want
	exit 0
fi

missing=""
for p in $want; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2> /dev/null || true)
	[ "$status" = "install ok installed" ] || missing="$missing $p"
done
[ -n "$missing" ] || exit 0

if [ "$(id -u)" != 0 ]; then
	die "missing packages:$missing; install them with:" \
		"sudo apt-get install$missing"
fi
log "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
# openssh-server is here for the test's own sshd: installing it must not
# start the machine's sshd, nor enable it for the next boot. policy-rc.d
# stops the package from starting it now; sshd_not_to_be_run keeps
# Debian's ssh service (sysvinit and systemd alike) from ever starting.
if [[ " $missing " == *" openssh-server "* ]]; then
	mkdir -p /etc/ssh
	touch /etc/ssh/sshd_not_to_be_run
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\n# bench/deps.sh: start no service while installing\nexit 101\n' \
			> /usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		trap 'rm -f /usr/sbin/policy-rc.d' EXIT
	fi
fi
# shellcheck disable=SC2086
if ! run apt-get install -y -q --no-install-recommends $missing >&2; then
	log "retrying after apt-get update"
	run apt-get update -q >&2
	# shellcheck disable=SC2086
	run apt-get install -y -q --no-install-recommends $missing >&2 ||
		die "apt-get install failed for:$missing"
fi
