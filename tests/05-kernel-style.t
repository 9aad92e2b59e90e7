#!/usr/bin/env bash
# Kernel style, checked by the kernel's own scripts/checkpatch.pl (taken from
# the linux-source tarball): the patch series, the selftest patch, and the
# suite's C code, which follows kernel style too (its KUnit modules in
# workloads/kunit with no exception). For userspace C, three
# kernel-only checks are off: volatile (sig_atomic_t needs it), function
# names in usage strings, and __printf (a kernel macro).
set -u
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/lib/tap.sh"
cd "$SUITE_ROOT" || exit 1

TARBALL=${TARBALL:-/usr/src/linux-source-6.1.tar.xz}
[ -f "$TARBALL" ] || skip_all "$TARBALL missing (make deps installs it)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xJf "$TARBALL" -C "$tmp" --strip-components=1 linux-source-6.1/scripts/checkpatch.pl \
	linux-source-6.1/scripts/spelling.txt linux-source-6.1/scripts/const_structs.checkpatch
ok $? "checkpatch.pl extracted from $(basename "$TARBALL")"
CHECKPATCH=("$tmp/scripts/checkpatch.pl" --no-tree --terse --show-types)

mapfile -t series < <(grep -v '^#' patches/series | grep -v '^$' | sed 's|^|patches/|'; ls patches/selftests/*.patch patches/mglru/*.patch patches/reverts/*/*.patch patches/trace/*.patch patches/trace/*/*.patch)
for p in "${series[@]}"; do
	out=$("${CHECKPATCH[@]}" - < "$p" 2>&1)
	ok $? "checkpatch: $p${out:+
$(printf '%s\n' "$out" | sed 's/^/# /')}"
done

mapfile -t sources < <(ls workloads/*.[ch] tests/c/*.[ch])
for f in "${sources[@]}"; do
	out=$("${CHECKPATCH[@]}" --ignore VOLATILE,EMBEDDED_FUNCTION_NAME,PREFER_DEFINED_ATTRIBUTE_MACRO \
		-f "$f" 2>&1)
	ok $? "checkpatch: $f${out:+
$(printf '%s\n' "$out" | sed 's/^/# /')}"
done

# Kernel modules: kernel code, so no exceptions.
for f in workloads/kunit/*.c; do
	out=$("${CHECKPATCH[@]}" -f "$f" 2>&1)
	ok $? "checkpatch: $f${out:+
$(printf '%s\n' "$out" | sed 's/^/# /')}"
done

done_testing
