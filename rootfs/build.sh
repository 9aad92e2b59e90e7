#!/usr/bin/env bash
# Build the guest's root filesystem image, build/rootfs/rootfs.ext4.
#
# Two layers, each rebuilt only when its inputs change:
#   base.tar     Debian 12 from mmdebstrap, the packages in rootfs/packages
#   rootfs.ext4  base.tar + rootfs/overlay + the suite's guest files, made
#                with mke2fs -d (no loop mount, no root filesystem mounted)
#
#   build.sh            build what is out of date, print the image path
#   build.sh --check    exit 0 if the image is up to date, 1 if not
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/../bench/lib.sh"

ROOTFS_SRC=$SUITE_ROOT/rootfs
OUTDIR=${ROOTFS_DIR:-$BUILD_DIR/rootfs}
SUITE=${ROOTFS_SUITE:-bookworm}
# The file system's size; the file is sparse, so this costs only what is used.
# Swap files the jobs make come out of it.
IMAGE_SIZE=${ROOTFS_SIZE:-8G}

packages() {
	grep -v '^#' "$ROOTFS_SRC/packages" | grep -v '^$' | tr '\n' ',' | sed 's/,$//'
}

base_hash() {
	sha256_of_string "suite=$SUITE
packages=$(packages)
recipe=1"
}

# Everything that goes into the image on top of the base.
image_hash() {
	local files
	files=$(cd "$SUITE_ROOT" && find rootfs/overlay bench/lib.sh build/bin/bench-load \
		build/bin/bench-collect -type f | LC_ALL=C sort)
	sha256_of_string "base=$(base_hash)
size=$IMAGE_SIZE
files=$(cd "$SUITE_ROOT" && for f in $files; do
		printf '%s %s %s\n' "$f" "$(stat -c %a "$f")" "$(sha256sum < "$f" | cut -d' ' -f1)"
	done)
build=$(sha256sum < "$0" | cut -d' ' -f1)"
}

build_base() {
	local hash tmp
	hash=$(base_hash)
	if [ -f "$OUTDIR/base.tar" ] && [ "$(cat "$OUTDIR/base.hash" 2> /dev/null)" = "$hash" ]; then
		return 0
	fi
	command -v mmdebstrap > /dev/null || die "mmdebstrap not found; run: make deps"
	mkdir -p "$OUTDIR"
	tmp=$OUTDIR/base.partial.tar
	log "mmdebstrap $SUITE with: $(packages) (log: $OUTDIR/mmdebstrap.log)"
	debian_root "$SUITE" "$(packages)" "$tmp" "$OUTDIR/mmdebstrap.log" ||
		die "mmdebstrap failed; see $OUTDIR/mmdebstrap.log"
	mv "$tmp" "$OUTDIR/base.tar"
	echo "$hash" > "$OUTDIR/base.hash"
}

# Turn the unpacked base in $1 into the suite's guest.
customise() {
	local root=$1 unit
	cp -a "$ROOTFS_SRC/overlay/." "$root/"
	install -D -m 644 "$SUITE_ROOT/bench/lib.sh" "$root/usr/local/lib/bench/lib.sh"
	# The workloads and the collector, built for this same Debian release.
	install -m 755 "$SUITE_ROOT/build/bin/bench-load" \
		"$SUITE_ROOT/build/bin/bench-collect" "$root/usr/local/bin/"
	# Root logs in without a password on the serial console (make run).
	sed -i 's/^root:[^:]*:/root::/' "$root/etc/shadow"
	# Timers and services that would wake up in the middle of a measurement,
	# and anything that kills by pressure (none is installed; masked anyway).
	for unit in apt-daily.timer apt-daily-upgrade.timer man-db.timer \
		e2scrub_all.timer e2scrub_reap.service fstrim.timer dpkg-db-backup.timer \
		systemd-oomd.service systemd-oomd.socket systemd-timesyncd.service \
		getty@tty1.service; do
		ln -sf /dev/null "$root/etc/systemd/system/$unit"
	done
}

build_image() {
	local hash tmp
	hash=$(image_hash)
	if [ -f "$OUTDIR/rootfs.ext4" ] && [ "$(cat "$OUTDIR/rootfs.hash" 2> /dev/null)" = "$hash" ]; then
		return 0
	fi
	tmp=$(mktemp -d "$OUTDIR/.image.XXXXXX")
	# shellcheck disable=SC2064
	trap "rm -rf '$tmp'" EXIT
	mkdir "$tmp/root"
	run tar -xf "$OUTDIR/base.tar" -C "$tmp/root"
	customise "$tmp/root"
	log "making the ext4 image ($IMAGE_SIZE, sparse)"
	run mke2fs -q -t ext4 -L benchroot -d "$tmp/root" "$tmp/rootfs.ext4" "$IMAGE_SIZE" > /dev/null ||
		die "mke2fs failed"
	mv "$tmp/rootfs.ext4" "$OUTDIR/rootfs.ext4"
	echo "$hash" > "$OUTDIR/rootfs.hash"
	rm -rf "$tmp"
	trap - EXIT
}

main() {
	if [ "${1:-}" = --check ]; then
		[ -f "$OUTDIR/rootfs.ext4" ] &&
			[ "$(cat "$OUTDIR/rootfs.hash" 2> /dev/null)" = "$(image_hash)" ]
		return
	fi
	[ $# -eq 0 ] || usage_error "usage: $PROG [--check]"
	[ "$(id -u)" = 0 ] || die "building the image needs root (mmdebstrap, file ownership)"
	mkdir -p "$OUTDIR"
	# The guest binaries go into the image; build them first if needed.
	run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$SUITE_ROOT" \
		build/bin/bench-load build/bin/bench-collect > /dev/null ||
		die "building the guest binaries failed; run: make bin"
	exec 8> "$OUTDIR/.lock"
	flock 8
	build_base
	build_image
	echo "$OUTDIR/rootfs.ext4"
}

main "$@"
