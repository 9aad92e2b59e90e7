#!/usr/bin/env bash
# Build the suite's kernel variants from Debian's linux-source-6.1.
#
# One source tree and one object tree are shared by all variants. Switching
# variant rewrites only the files whose content differs between the two
# variants, so make rebuilds only what the patches change. Run with no
# arguments for usage.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

KSRC=${KSRC:-$BUILD_DIR/src/linux-source-6.1}
KOBJ=${KOBJ:-$BUILD_DIR/obj}
# A variant with its own config fragment builds in an object tree of its
# own, $KOBJ-NAME (NAME from the fragment's file name), so that switching
# allocator does not rebuild every other kernel.
KOBJ_DEFAULT=$KOBJ
VARIANT_FRAGMENT=""
KOUT=${KOUT:-$BUILD_DIR/kernels}
TARBALL=${TARBALL:-/usr/src/linux-source-6.1.tar.xz}
SOURCE_PKG=linux-source-6.1
JOBS=${JOBS:-$(nproc)}
PATCH_DIR=$SUITE_ROOT/patches
CONFIG_DIR=$PATCH_DIR/configs
VARIANTS_LOCAL=${VARIANTS_LOCAL:-$SUITE_ROOT/variants.local}
VARIANT_FILES=("$PATCH_DIR/variants" "$VARIANTS_LOCAL")
# Bump when the way a kernel is built changes, so old builds are redone.
BUILD_RECIPE=3
# The suite's own kernel modules (KUnit checks), built against each variant.
MODULE_DIR=$SUITE_ROOT/workloads/kunit

# Options every guest kernel needs (checked for prebuilt kernels too).
GUEST_FRAGMENTS=("$CONFIG_DIR/guest.config")
# Options the suite's own builds add: preferences and the selftests' needs.
BUILD_FRAGMENTS=("$CONFIG_DIR/build.config")

usage() {
	cat <<EOF
usage: $PROG COMMAND [ARGS]

  list                  the variants, how each is made, and which are built
  build [VARIANT...]    build variants (default: all) into $KOUT
  apply VARIANT [TREE]  put the source tree (or TREE) into VARIANT's state
  config [VARIANT]      write the guest .config into the object tree (of
                        VARIANT's config fragment, if it has one); print
                        its path
  compile VARIANT FILE  build one object (e.g. mm/vmscan.o) for VARIANT
  warnings VARIANT FILE.o...
                        build the objects afresh with W=1 (the kernel's extra
                        warnings) for VARIANT and print what the compiler said
  check-config FILE     check a kernel .config for what the guest needs
  add NAME bzimage=F config=C [DESCRIPTION]
  add NAME patches=DIR [base=VARIANT] [fragment=F] [DESCRIPTION]
  add NAME base=VARIANT fragment=F [DESCRIPTION]
                        register your own kernel in variants.local; either
                        form may add model=FORMULA (cliff, 9783aa, 9de7ca,
                        1bc63f, 6.1), the formula the analysis compares it
                        with; fragment=F adds a config fragment (built in
                        its own object tree; "# bench-lacks: CONFIG_X" lines
                        in it name guest options that config cannot have)
  path VARIANT          print the directory with VARIANT's bzImage
  export-selftests VARIANT DIR
                        copy the cgroup selftests' sources and the UAPI
                        headers of VARIANT's tree into DIR (src/, usr/)

Environment: KSRC (source tree), KOBJ (object tree), KOUT (built kernels),
TARBALL (the linux-source tarball), JOBS (make -j), V=1 (show commands).
EOF
}

# ---------------------------------------------------------------------------
# Variants

# Print "name<TAB>how<TAB>description" for every variant, from every file.
variant_table() {
	local f name how desc word
	for f in "${VARIANT_FILES[@]}"; do
		[ -f "$f" ] || continue
		while read -r name rest; do
			case "$name" in "" | "#"*) continue ;; esac
			how="" desc=""
			for word in $rest; do
				if [ -z "$desc" ] && [[ "$word" == *=* ]]; then
					how="$how${how:+ }$word"
				else
					desc="$desc${desc:+ }$word"
				fi
			done
			printf '%s\t%s\t%s\n' "$name" "$how" "$desc"
		done < "$f"
	done
}

variant_names() {
	variant_table | cut -f1
}

# The "how" words of variant $1, or fail listing the known variants.
variant_how() {
	local line
	line=$(variant_table | awk -F'\t' -v n="$1" '$1 == n' | sed -n '1,2p')
	if [ -z "$line" ]; then
		echo "$PROG: unknown kernel variant '$1'; known variants:" \
			"$(variant_names | tr '\n' ' ')" >&2
		exit "$EX_USAGE"
	fi
	if [ "$(printf '%s\n' "$line" | wc -l)" -gt 1 ]; then
		die "variant '$1' is defined twice (patches/variants, variants.local)"
	fi
	printf '%s\n' "$line" | cut -f2
}

variant_desc() {
	variant_table | awk -F'\t' -v n="$1" '$1 == n { print $3 }'
}

# Value of key $2 in the "how" words $1.
how_get() {
	local word
	for word in $1; do
		case "$word" in "$2="*) printf '%s\n' "${word#*=}" ; return 0 ;; esac
	done
	return 1
}

abs_path() {
	case "$1" in
	/*) printf '%s\n' "$1" ;;
	*) printf '%s\n' "$SUITE_ROOT/$1" ;;
	esac
}

# The patches of series file $1 (names relative to its directory), in order.
series_patches() {
	local series=$1 dir line
	dir=$(dirname "$series")
	while read -r line; do
		case "$line" in "" | "#"*) continue ;; esac
		printf '%s\n' "$dir/$line"
	done < "$series"
}

# Print the absolute path of every patch of variant $1, in order.
variant_patches() {
	local v=$1 how n base dir total
	how=$(variant_how "$v")
	if n=$(how_get "$how" series); then
		total=$(series_patches "$PATCH_DIR/series" | wc -l)
		case "$n" in
		'' | *[!0-9]*) die "variant '$v': series=$n is not a number" ;;
		esac
		[ "$n" -le "$total" ] ||
			die "variant '$v': series=$n, but patches/series has $total patches"
		# sed, not head: head's early exit would fail the pipe (pipefail).
		if [ "$n" -gt 0 ]; then
			series_patches "$PATCH_DIR/series" | sed -n "1,${n}p"
		fi
	elif dir=$(how_get "$how" patches); then
		dir=$(abs_path "$dir")
		[ -d "$dir" ] || die "variant '$v': patch directory '$dir' does not exist"
		if base=$(how_get "$how" base); then
			[ "$base" != "$v" ] || die "variant '$v' is its own base"
			variant_patches "$base"
		fi
		if [ -f "$dir/series" ]; then
			series_patches "$dir/series"
		else
			find "$dir" -maxdepth 1 -name '*.patch' | LC_ALL=C sort
		fi
	elif how_get "$how" bzimage > /dev/null; then
		die "variant '$v' is a prebuilt kernel; it has no patches"
	elif base=$(how_get "$how" base) && how_get "$how" fragment > /dev/null; then
		# Its base's patches under another config.
		[ "$base" != "$v" ] || die "variant '$v' is its own base"
		variant_patches "$base"
	else
		die "variant '$v': say series=N, patches=DIR, base=VARIANT fragment=F or bzimage=F config=C"
	fi
}

# The config fragment of variant $1 (its own fragment=, else its base's),
# as an absolute path, or nothing.
variant_fragment() {
	local how f base
	how=$(variant_how "$1")
	if f=$(how_get "$how" fragment); then
		f=$(abs_path "$f")
		[ -f "$f" ] || die "variant '$1': config fragment '$f' does not exist"
		[[ "$(basename "$f")" =~ ^[a-z0-9-]+\.config$ ]] ||
			die "variant '$1': a fragment's file name is NAME.config, NAME of a-z, 0-9 and '-' ($f)"
		printf '%s\n' "$f"
	elif base=$(how_get "$how" base); then
		[ "$base" != "$1" ] || die "variant '$1' is its own base"
		variant_fragment "$base"
	fi
}

# Build variant $1 with its config: set VARIANT_FRAGMENT and KOBJ.
use_variant_config() {
	VARIANT_FRAGMENT=$(variant_fragment "$1")
	if [ -n "$VARIANT_FRAGMENT" ]; then
		KOBJ=$KOBJ_DEFAULT-$(basename "$VARIANT_FRAGMENT" .config)
	else
		KOBJ=$KOBJ_DEFAULT
	fi
}

# The options ("CONFIG_X") the current fragment says its config cannot
# have, one a line.
lacked_options() {
	[ -n "$VARIANT_FRAGMENT" ] || return 0
	sed -n 's/^# bench-lacks: \(CONFIG_[A-Z0-9_]*\).*/\1/p' "$VARIANT_FRAGMENT"
}

variant_kind() {
	local how
	how=$(variant_how "$1")
	if how_get "$how" bzimage > /dev/null; then
		echo prebuilt
	else
		echo source
	fi
}

# ---------------------------------------------------------------------------
# The source tree

tarball_id() {
	local ver
	[ -f "$TARBALL" ] || die "kernel source '$TARBALL' not found; install it" \
		"with: apt-get install $SOURCE_PKG (or run: make deps)"
	ver=$(dpkg-query -W -f='${Version}' "$SOURCE_PKG" 2> /dev/null || echo unknown)
	printf '%s %s %s\n' "$(basename "$TARBALL")" "$ver" \
		"$(stat -c '%s %Y' "$TARBALL")"
}

# Install linux-source if its tarball is missing and we may.
ensure_tarball() {
	[ -f "$TARBALL" ] && return 0
	if [ "$TARBALL" = /usr/src/linux-source-6.1.tar.xz ] && [ "$(id -u)" = 0 ]; then
		log "installing $SOURCE_PKG (for $TARBALL)"
		DEBIAN_FRONTEND=noninteractive run apt-get install -y -q "$SOURCE_PKG" >&2 ||
			die "could not install $SOURCE_PKG; try: apt-get update && apt-get install $SOURCE_PKG"
	fi
	[ -f "$TARBALL" ] || die "kernel source '$TARBALL' not found; install it" \
		"with: apt-get install $SOURCE_PKG"
}

# Unpack the tarball into $KSRC unless it is there already. The tree appears
# whole or not at all; a different tarball wipes the tree and the objects.
ensure_source() {
	local id tmp top
	ensure_tarball
	id=$(tarball_id)
	if [ -f "$KSRC/.suite/unpacked" ] && [ "$(cat "$KSRC/.suite/unpacked")" = "$id" ]; then
		return 0
	fi
	if [ -d "$KSRC" ]; then
		log "source tree $KSRC is from another tarball; unpacking again"
		rm -rf "$KSRC" "$KOBJ_DEFAULT" "$KOBJ_DEFAULT"-*
	fi
	mkdir -p "$(dirname "$KSRC")"
	tmp=$(mktemp -d "$(dirname "$KSRC")/.unpack.XXXXXX")
	log "unpacking $TARBALL"
	run tar -xJf "$TARBALL" -C "$tmp" || { rm -rf "$tmp"; die "cannot unpack '$TARBALL'"; }
	top=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d | sed -n '1,1p')
	[ -f "$top/Makefile" ] || { rm -rf "$tmp"; die "'$TARBALL' holds no kernel tree"; }
	mkdir -p "$top/.suite"
	echo "$id" > "$top/.suite/unpacked"
	mv "$top" "$KSRC"
	rm -rf "$tmp"
}

kernel_version() {
	awk '/^VERSION =/ { v = $3 } /^PATCHLEVEL =/ { p = $3 }
	     /^SUBLEVEL =/ { s = $3 } END { print v "." p "." s }' "$KSRC/Makefile"
}

# Files that patch $1 creates, changes or deletes (paths below the tree).
patch_files() {
	awk '/^(---|\+\+\+) / {
		f = $2; sub(/\t.*/, "", f)
		if (f == "/dev/null") next
		sub(/^[^\/]*\//, "", f); print f
	}' "$1" | sort -u
}

# Put the kernel tree $2 (default $KSRC) into the state of variant $1: stock
# files plus the variant's patches. The patches are applied to copies first, so a patch that
# does not apply leaves the tree as it was. Only files whose content changes
# are rewritten, which keeps make's timestamps meaningful.
apply_variant() {
	local v=$1 tree=${2:-$KSRC} state staging f p files="" want out
	state=$tree/.suite
	local -a patches
	mapfile -t patches < <(variant_patches "$v")
	mkdir -p "$state/pristine"
	touch "$state/touched"

	for p in "${patches[@]}"; do
		[ -f "$p" ] || die "variant '$v': patch '$p' not found"
		files="$files$(patch_files "$p")"$'\n'
	done
	files=$(printf '%s' "$files" | sed '/^$/d' | sort -u)

	# Keep the stock version of every file before it is first changed.
	for f in $files; do
		grep -qxF "$f" "$state/touched" && continue
		mkdir -p "$(dirname "$state/pristine/$f")"
		if [ -e "$tree/$f" ]; then
			cp -p "$tree/$f" "$state/pristine/$f.tmp"
			mv "$state/pristine/$f.tmp" "$state/pristine/$f"
		else
			: > "$state/pristine/$f.absent"
		fi
		echo "$f" >> "$state/touched"
	done

	staging=$(mktemp -d "$state/staging.XXXXXX")
	# shellcheck disable=SC2064
	trap "rm -rf '$staging'" EXIT
	for f in $files; do
		[ -e "$state/pristine/$f" ] || continue
		mkdir -p "$(dirname "$staging/$f")"
		cp -p "$state/pristine/$f" "$staging/$f"
	done
	for p in "${patches[@]}"; do
		if ! out=$(patch -d "$staging" -p1 -F0 -N -f --no-backup-if-mismatch \
			-r - < "$p" 2>&1); then
			echo "$PROG: patch '$(basename "$p")' of variant '$v' does not apply" \
				"to $SOURCE_PKG:" >&2
			printf '%s\n' "$out" | sed 's/^/  /' >&2
			echo "$PROG: the source tree was left unchanged" >&2
			exit "$EX_FAIL"
		fi
	done

	# Every file any variant ever changed: the variant's version or stock.
	while read -r f; do
		if [ -e "$staging/$f" ]; then
			want=$staging/$f
		elif [ -e "$state/pristine/$f" ]; then
			want=$state/pristine/$f
		else
			rm -f "$tree/$f"
			continue
		fi
		if ! cmp -s "$want" "$tree/$f"; then
			mkdir -p "$(dirname "$tree/$f")"
			cp "$want" "$tree/$f.suite-tmp"
			mv "$tree/$f.suite-tmp" "$tree/$f"
		fi
	done < "$state/touched"
	rm -rf "$staging"
	trap - EXIT
	echo "$v" > "$state/variant"
}

# ---------------------------------------------------------------------------
# Configuration

# Print each option of fragments $2... that .config $1 lacks; fail if any.
check_config() {
	local config=$1 line opt missing=0
	shift
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=*)
			grep -qxF "$line" "$config" && continue
			opt=${line%%=*}
			echo "  $line (have: $(grep "^$opt=" "$config" || echo "not set"))"
			missing=1
			;;
		"# CONFIG_"*" is not set")
			opt=${line#\# }
			opt=${opt%% *}
			grep -q "^$opt=" "$config" || continue
			echo "  $line (have: $(grep "^$opt=" "$config"))"
			missing=1
			;;
		esac
	done < <(cat "$@")
	return "$missing"
}

config_inputs_hash() {
	sha256_of_files "$KSRC/arch/x86/configs/x86_64_defconfig" \
		"$KSRC/kernel/configs/kvm_guest.config" \
		"${GUEST_FRAGMENTS[@]}" "${BUILD_FRAGMENTS[@]}" \
		"$KSRC/tools/testing/selftests/cgroup/config" \
		${VARIANT_FRAGMENT:+"$VARIANT_FRAGMENT"}
}

# The fragments whose every line must be in the suite's own .config (the
# variant's fragment last, so that it wins).
checked_fragments() {
	printf '%s\n' "${GUEST_FRAGMENTS[@]}" "${BUILD_FRAGMENTS[@]}" \
		"$KSRC/tools/testing/selftests/cgroup/config" ${VARIANT_FRAGMENT:+"$VARIANT_FRAGMENT"}
}

kmake() {
	# One fixed command line: kbuild rebuilds everything when it changes.
	# The flags of a make that called us (-s, a jobserver) are not passed on.
	run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		CCACHE_BASEDIR="$BUILD_DIR" CCACHE_NOHASHDIR=1 \
		KBUILD_BUILD_USER=bench KBUILD_BUILD_HOST=bench \
		make -C "$KSRC" O="$KOBJ" CC="ccache gcc" "$@"
}

# Write the guest .config into $KOBJ unless its inputs are unchanged.
make_config() {
	local hash missing frags
	hash=$(config_inputs_hash)
	if [ -f "$KOBJ/.config" ] && [ -f "$KOBJ/.suite-config" ] &&
		[ "$(cat "$KOBJ/.suite-config")" = "$hash" ]; then
		return 0
	fi
	command -v ccache > /dev/null || die "ccache not found; run: make deps"
	mkdir -p "$KOBJ"
	rm -f "$KOBJ/.suite-config"
	log "configuring: x86_64_defconfig + kvm_guest.config + patches/configs"
	kmake -s x86_64_defconfig > /dev/null
	mapfile -t frags < <(checked_fragments)
	# Options the variant's config cannot have leave the other fragments.
	local lacks f
	lacks=$(lacked_options)
	if [ -n "$lacks" ]; then
		mkdir -p "$KOBJ/.fragments"
		for f in "${!frags[@]}"; do
			grep -vE "^($(paste -sd'|' <<< "$lacks"))=" "${frags[$f]}" > "$KOBJ/.fragments/$f.config" || true
			frags[f]=$KOBJ/.fragments/$f.config
		done
	fi
	run "$KSRC/scripts/kconfig/merge_config.sh" -m -O "$KOBJ" "$KOBJ/.config" \
		"$KSRC/kernel/configs/kvm_guest.config" "${frags[@]}" > "$KOBJ/.merge.log" 2>&1 ||
		die "merge_config.sh failed; see $KOBJ/.merge.log"
	kmake -s olddefconfig > /dev/null
	if ! missing=$(check_config "$KOBJ/.config" "${frags[@]}"); then
		echo "$PROG: these requested options are not in the final .config" \
			"(a missing dependency or a renamed option?):" >&2
		printf '%s\n' "$missing" >&2
		exit "$EX_FAIL"
	fi
	echo "$hash" > "$KOBJ/.suite-config"
}

# ---------------------------------------------------------------------------
# Building

# The cgroup selftests' sources (with what they include) and the tree's UAPI
# headers, copied out under the tree lock so that they are the variant's.
SELFTEST_FILES=(kselftest.h cgroup/test_memcontrol.c cgroup/cgroup_util.c cgroup/cgroup_util.h
	cgroup/Makefile clone3/clone3_selftests.h pidfd/pidfd.h)
export_selftests() {
	local dir=$1 f
	rm -rf "${dir:?}/src" "${dir:?}/usr"
	mkdir -p "$dir/src/tools/testing/selftests"
	for f in "${SELFTEST_FILES[@]}"; do
		mkdir -p "$(dirname "$dir/src/tools/testing/selftests/$f")"
		cp "$KSRC/tools/testing/selftests/$f" "$dir/src/tools/testing/selftests/$f" ||
			die "$f is not in the tree"
	done
	kmake -s headers_install INSTALL_HDR_PATH="$(cd "$dir" && pwd)/usr" > /dev/null ||
		die "make headers_install failed"
}

lock_tree() {
	mkdir -p "$BUILD_DIR"
	exec 9> "$BUILD_DIR/.kernel.lock"
	flock -n 9 || { log "waiting for another build in $BUILD_DIR"; flock 9; }
}

gcc_id() {
	gcc --version | sed -n 1p
}

# What a source variant's build depends on; equal hashes mean up to date.
source_inputs_hash() {
	local series_hash=$1
	sha256_of_string "recipe=$BUILD_RECIPE
tarball=$(tarball_id)
series=$series_hash
config=$(config_inputs_hash)
modules=$(sha256_of_files "$MODULE_DIR"/*)
gcc=$(gcc_id)"
}

prebuilt_inputs_hash() {
	sha256_of_string "recipe=$BUILD_RECIPE
bzimage=$(sha256sum < "$1" | cut -d' ' -f1)
config=$(sha256sum < "$2" | cut -d' ' -f1)
guest=$(sha256_of_files "${GUEST_FRAGMENTS[@]}")"
}

is_up_to_date() {
	local dir=$KOUT/$1 hash=$2
	[ -f "$dir/bzImage" ] && [ -f "$dir/manifest.json" ] &&
		grep -qF "\"inputs_hash\": \"$hash\"" "$dir/manifest.json"
}

suite_version() {
	git -C "$SUITE_ROOT" describe --always --dirty 2> /dev/null || echo unknown
}

# Run make for bzImage with a progress line every 30 s; full log in $1.
make_with_progress() {
	local log=$1 v=$2 start pid n last next
	start=$(date +%s)
	next=$((start + 30))
	kmake -j"$JOBS" LOCALVERSION="-$v" bzImage > "$log" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2> /dev/null; do
		sleep 1
		if [ "$(date +%s)" -ge "$next" ]; then
			next=$((next + 30))
			n=$(grep -c '^  [A-Z]' "$log" || true)
			last=$(grep '^  [A-Z]' "$log" | tail -n 1 | tr -s ' ')
			log "[$v] $(( $(date +%s) - start ))s, $n build steps, last:$last"
		fi
	done
	if ! wait "$pid"; then
		echo "$PROG: building variant '$v' failed; last lines of $log:" >&2
		grep -v '^  [A-Z]' "$log" | tail -n 30 | sed 's/^/  /' >&2
		exit "$EX_FAIL"
	fi
}

# Build the tree's modules (for Module.symvers) and the suite's own against
# it, with the LOCALVERSION of the bzImage just built (so kernel.release,
# and with it the modules' vermagic, stays the variant's); copy the suite's
# .ko files into $2.
build_modules() {
	local v=$1 dest=$2 dir=$BUILD_DIR/modules/$1 blog=$KOUT/$1.build.log
	log "[$v] building modules and the suite's KUnit modules"
	kmake -j"$JOBS" LOCALVERSION="-$v" modules >> "$blog" 2>&1 || {
		tail -n 30 "$blog" >&2
		rm -rf "$dest"
		die "building the modules of variant '$v' failed; see $blog"
	}
	rm -rf "$dir"
	mkdir -p "$dir"
	cp "$MODULE_DIR"/* "$dir/"
	kmake LOCALVERSION="-$v" M="$dir" modules >> "$blog" 2>&1 || {
		tail -n 30 "$blog" >&2
		rm -rf "$dest"
		die "building the suite's KUnit modules for variant '$v' failed; see $blog"
	}
	cp "$dir"/*.ko "$dest/"
}

# Write manifest.json for the kernel in directory $1 from key=value lines.
write_manifest() {
	local dir=$1 first=1 key val kv
	shift
	{
		echo "{"
		for kv in "$@"; do
			key=${kv%%=*}
			val=${kv#*=}
			[ "$first" = 1 ] || echo ","
			first=0
			if [[ "$val" =~ ^(\[.*\]|0|[1-9][0-9]*)$ ]]; then
				printf '  "%s": %s' "$key" "$val"
			else
				printf '  "%s": %s' "$key" "$(json_str "$val")"
			fi
		done
		printf '\n}\n'
	} | write_atomic "$dir/manifest.json"
}

json_list() {
	local first=1 item
	printf '['
	for item in "$@"; do
		[ "$first" = 1 ] || printf ', '
		first=0
		json_str "$item"
	done
	printf ']'
}

build_source_variant() {
	local v=$1 start hash series_hash out tmp names=() mods=() p
	local -a patches extra=()
	use_variant_config "$v"
	ensure_source
	mapfile -t patches < <(variant_patches "$v")
	if [ "${#patches[@]}" -gt 0 ]; then
		series_hash=$(sha256_of_files "${patches[@]}")
	else
		series_hash=$(sha256_of_string "")
	fi
	hash=$(source_inputs_hash "$series_hash")
	if is_up_to_date "$v" "$hash"; then
		log "[$v] up to date: $KOUT/$v"
		return 0
	fi
	start=$(date +%s)
	log "[$v] applying ${#patches[@]} patches"
	apply_variant "$v"
	make_config
	log "[$v] building bzImage with make -j$JOBS (log: $KOUT/$v.build.log)"
	mkdir -p "$KOUT"
	make_with_progress "$KOUT/$v.build.log" "$v"

	out=$KOUT/$v
	tmp=$(mktemp -d "$KOUT/.$v.XXXXXX")
	build_modules "$v" "$tmp"
	cp "$KOBJ/arch/x86/boot/bzImage" "$KOBJ/System.map" "$tmp/"
	cp "$KOBJ/.config" "$tmp/config"
	mv "$KOUT/$v.build.log" "$tmp/build.log"
	for p in "${patches[@]}"; do names+=("$(basename "$p")"); done
	for p in "$tmp"/*.ko; do mods+=("$(basename "$p")"); done
	if [ -n "$VARIANT_FRAGMENT" ]; then
		mapfile -t p < <(lacked_options)
		extra=("config_fragment=${VARIANT_FRAGMENT#"$SUITE_ROOT"/}" "lacks=$(json_list "${p[@]}")")
	fi
	write_manifest "$tmp" "schema=1" "variant=$v" "kind=source" "${extra[@]}" \
		"description=$(variant_desc "$v")" \
		"kernel_release=$(cat "$KOBJ/include/config/kernel.release")" \
		"source_package=$SOURCE_PKG $(dpkg-query -W -f='${Version}' "$SOURCE_PKG" 2> /dev/null || echo unknown)" \
		"source_version=$(kernel_version)" \
		"patches=$(json_list "${names[@]}")" \
		"modules=$(json_list "${mods[@]}")" \
		"series_hash=$series_hash" \
		"config_hash=$(sha256sum < "$tmp/config" | cut -d' ' -f1)" \
		"inputs_hash=$hash" \
		"compiler=$(gcc_id)" \
		"suite_version=$(suite_version)" \
		"built_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
		"build_seconds=$(( $(date +%s) - start ))"
	rm -rf "$out"
	mv "$tmp" "$out"
	log "[$v] built in $(( $(date +%s) - start ))s: $out/bzImage"
	if [ -n "$VARIANT_FRAGMENT" ] && [ -n "$(lacked_options)" ]; then
		log "[$v] its config has no $(lacked_options | paste -sd' ')" \
			"(${VARIANT_FRAGMENT#"$SUITE_ROOT"/}): what needs them refuses this kernel"
	fi
}

build_prebuilt_variant() {
	local v=$1 how bz cfg hash tmp missing
	how=$(variant_how "$v")
	bz=$(abs_path "$(how_get "$how" bzimage)")
	cfg=$(how_get "$how" config) || die "variant '$v': bzimage= needs config= too"
	cfg=$(abs_path "$cfg")
	[ -f "$bz" ] || die "variant '$v': bzImage '$bz' not found"
	[ -f "$cfg" ] || die "variant '$v': config '$cfg' not found"
	if ! missing=$(check_config "$cfg" "${GUEST_FRAGMENTS[@]}"); then
		echo "$PROG: variant '$v': $cfg lacks what the guest needs:" >&2
		printf '%s\n' "$missing" >&2
		exit "$EX_FAIL"
	fi
	hash=$(prebuilt_inputs_hash "$bz" "$cfg")
	if is_up_to_date "$v" "$hash"; then
		log "[$v] up to date: $KOUT/$v"
		return 0
	fi
	mkdir -p "$KOUT"
	tmp=$(mktemp -d "$KOUT/.$v.XXXXXX")
	cp "$bz" "$tmp/bzImage"
	cp "$cfg" "$tmp/config"
	write_manifest "$tmp" "schema=1" "variant=$v" "kind=prebuilt" \
		"description=$(variant_desc "$v")" \
		"bzimage_from=$bz" "config_from=$cfg" \
		"config_hash=$(sha256sum < "$cfg" | cut -d' ' -f1)" \
		"inputs_hash=$hash" \
		"suite_version=$(suite_version)" \
		"built_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
		"build_seconds=0"
	rm -rf "${KOUT:?}/$v"
	mv "$tmp" "$KOUT/$v"
	log "[$v] prebuilt kernel accepted: $KOUT/$v/bzImage"
}

cmd_build() {
	local v
	local -a want
	if [ $# -eq 0 ]; then
		mapfile -t want < <(variant_names)
	else
		want=("$@")
	fi
	for v in "${want[@]}"; do
		variant_how "$v" > /dev/null
	done
	lock_tree
	for v in "${want[@]}"; do
		if [ "$(variant_kind "$v")" = prebuilt ]; then
			build_prebuilt_variant "$v"
		else
			build_source_variant "$v"
		fi
	done
}

cmd_list() {
	local name how desc state
	printf '%-12s %-28s %-9s %s\n' VARIANT HOW BUILT DESCRIPTION
	while IFS=$'\t' read -r name how desc; do
		state=no
		[ -f "$KOUT/$name/bzImage" ] && state=yes
		printf '%-12s %-28s %-9s %s\n' "$name" "$how" "$state" "$desc"
	done < <(variant_table)
}

cmd_add() {
	local name=$1 how="" desc="" word base
	shift
	[[ "$name" =~ ^[A-Za-z0-9._-]+$ ]] ||
		usage_error "variant name '$name' may only hold letters, digits, '.', '_' and '-'"
	if variant_names | grep -qxF "$name"; then
		usage_error "variant '$name' exists already"
	fi
	for word in "$@"; do
		case "$word" in
		bzimage=* | config=* | patches=* | base=* | fragment=*)
			case "$word" in
			base=*) ;;
			*)
				[ -e "$(abs_path "${word#*=}")" ] ||
					usage_error "${word%%=*}: '${word#*=}' does not exist"
				word="${word%%=*}=$(cd "$(dirname "${word#*=}")" && pwd)/$(basename "${word#*=}")"
				;;
			esac
			how="$how${how:+ }$word"
			;;
		model=*)
			# The formulas are named once, in analysis/model.py.
			/usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import model
sys.exit(sys.argv[2] not in model.FORMULAS)' "$SUITE_ROOT/analysis" "${word#*=}" ||
				usage_error "model: '${word#*=}' is not a formula; one of:" \
					"$(/usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import model
print(*model.FORMULAS)' "$SUITE_ROOT/analysis")"
			how="$how${how:+ }$word"
			;;
		*=*) usage_error "unknown key '${word%%=*}' (bzimage, config, patches, base, fragment, model)" ;;
		*) desc="$desc${desc:+ }$word" ;;
		esac
	done
	if how_get "$how" bzimage > /dev/null; then
		how_get "$how" config > /dev/null || usage_error "bzimage= needs config= too"
	elif ! how_get "$how" patches > /dev/null &&
		! { how_get "$how" base > /dev/null && how_get "$how" fragment > /dev/null; }; then
		usage_error "say bzimage=F config=C, patches=DIR [base=VARIANT], or base=VARIANT fragment=F"
	fi
	if how_get "$how" bzimage > /dev/null && how_get "$how" fragment > /dev/null; then
		usage_error "fragment= is for kernels the suite builds, not with bzimage="
	fi
	if base=$(how_get "$how" base); then
		variant_how "$base" > /dev/null
	fi
	printf '%s\t%s\t%s\n' "$name" "$how" "${desc:-your own kernel}" \
		>> "$VARIANTS_LOCAL"
	log "added variant '$name' to $VARIANTS_LOCAL; build it with: make kernel K=$name"
}

main() {
	local cmd=${1:-} missing
	[ $# -gt 0 ] && shift
	case "$cmd" in
	list) cmd_list ;;
	build) cmd_build "$@" ;;
	apply)
		case $# in 1 | 2) ;; *) usage_error "usage: $PROG apply VARIANT [TREE]" ;; esac
		variant_how "$1" > /dev/null
		[ "$(variant_kind "$1")" = source ] || die "variant '$1' is prebuilt"
		if [ $# -eq 2 ]; then
			[ -f "$2/Makefile" ] || die "'$2' is not a kernel tree"
			apply_variant "$1" "$2"
		else
			lock_tree
			ensure_source
			apply_variant "$1"
		fi
		;;
	config)
		[ $# -le 1 ] || usage_error "usage: $PROG config [VARIANT]"
		if [ $# -eq 1 ]; then
			variant_how "$1" > /dev/null
			[ "$(variant_kind "$1")" = source ] || die "variant '$1' is prebuilt: its config is its own"
		fi
		use_variant_config "${1:-patched}"
		lock_tree
		ensure_source
		make_config
		echo "$KOBJ/.config"
		;;
	compile)
		[ $# -eq 2 ] || usage_error "usage: $PROG compile VARIANT FILE.o"
		variant_how "$1" > /dev/null
		lock_tree
		ensure_source
		use_variant_config "$1"
		apply_variant "$1"
		make_config
		kmake -s -j"$JOBS" LOCALVERSION="-$1" "$2"
		;;
	warnings)
		[ $# -ge 2 ] || usage_error "usage: $PROG warnings VARIANT FILE.o..."
		variant_how "$1" > /dev/null
		[ "$(variant_kind "$1")" = source ] ||
			die "variant '$1' is prebuilt: there is no tree to build its objects from"
		local v=$1 f
		shift
		for f in "$@"; do
			[[ "$f" =~ ^[a-z0-9_/-]+\.o$ ]] || usage_error "'$f' is not an object file (e.g. mm/sparse.o)"
		done
		lock_tree
		ensure_source
		use_variant_config "$v"
		apply_variant "$v"
		make_config
		for f in "$@"; do [ -f "$KSRC/${f%.o}.c" ] || die "no ${f%.o}.c in the tree"; done
		# Removed first: an object that is up to date prints nothing.
		# -Wno-error: the config's CONFIG_WERROR would turn the first
		# warning into an error and hide the rest.
		for f in "$@"; do rm -f "$KOBJ/$f"; done
		kmake -j"$JOBS" LOCALVERSION="-$v" W=1 KCFLAGS=-Wno-error "$@" 2>&1
		;;
	export-selftests)
		[ $# -eq 2 ] || usage_error "usage: $PROG export-selftests VARIANT DIR"
		variant_how "$1" > /dev/null
		lock_tree
		ensure_source
		if [ "$(variant_kind "$1")" = source ]; then
			apply_variant "$1"
		else
			# A prebuilt kernel has no tree here: the stock one's tests.
			log "variant '$1' is prebuilt: its selftests come from the stock tree (patched)"
			apply_variant patched
		fi
		export_selftests "$2"
		;;
	check-config)
		[ $# -eq 1 ] || usage_error "usage: $PROG check-config FILE"
		[ -f "$1" ] || die "config '$1' not found"
		if ! missing=$(check_config "$1" "${GUEST_FRAGMENTS[@]}"); then
			echo "$PROG: $1 lacks what the guest needs:" >&2
			printf '%s\n' "$missing" >&2
			exit "$EX_FAIL"
		fi
		;;
	add)
		[ $# -ge 2 ] || usage_error "usage: $PROG add NAME bzimage=F config=C | patches=DIR [base=V]"
		cmd_add "$@"
		;;
	path)
		[ $# -eq 1 ] || usage_error "usage: $PROG path VARIANT"
		variant_how "$1" > /dev/null
		[ -f "$KOUT/$1/bzImage" ] ||
			die "kernel '$1' is not built; build it with: make kernel K=$1"
		echo "$KOUT/$1"
		;;
	"" | -h | --help | help) usage ;;
	*) usage >&2; exit "$EX_USAGE" ;;
	esac
}

main "$@"
