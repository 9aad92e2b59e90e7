#!/usr/bin/env bash
# Naming kernels: the variant list, registering your own kernel, and the
# checks on a prebuilt kernel's config. Builds nothing.
set -u
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/lib/tap.sh"

KERNEL=$SUITE_ROOT/bench/kernel.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export BUILD_DIR=$tmp/build KOUT=$tmp/kernels VARIANTS_LOCAL=$tmp/variants.local

out=$("$KERNEL" list)
ok $? "list runs"
# The series variants, as patches/variants names them.
mapfile -t variants < <(awk '!/^#/ && $2 ~ /^series=/ { print $1 }' "$SUITE_ROOT/patches/variants")
[ "${#variants[@]}" -ge 5 ]
ok $? "patches/variants names the series variants (${#variants[@]})"
for v in "${variants[@]}"; do
	like "$out" "^$v +series=[0-9]+ model=" "list names $v, with its model"
done

# A config with every option the guest needs, and one without CONFIG_MEMCG.
grep -E '^CONFIG_' "$SUITE_ROOT/patches/configs/guest.config" > "$tmp/good.config"
grep -v '^CONFIG_MEMCG=' "$tmp/good.config" > "$tmp/nomemcg.config"
echo 'CONFIG_MEMCG=m' >> "$tmp/nomemcg.config"
grep -v '^CONFIG_PSI=' "$tmp/nomemcg.config" > "$tmp/bad.config"
head -c 4096 /dev/urandom > "$tmp/bzImage"

runs "check-config accepts a config with every guest option" \
	"$KERNEL" check-config "$tmp/good.config"
out=$("$KERNEL" check-config "$tmp/bad.config" 2>&1)
is "$?" 1 "check-config refuses a config without CONFIG_MEMCG and CONFIG_PSI"
like "$out" "CONFIG_MEMCG=y \(have: CONFIG_MEMCG=m\)" "the refusal names CONFIG_MEMCG and what the config has"
like "$out" "CONFIG_PSI=y \(have: not set\)" "the refusal names CONFIG_PSI"

# Registering kernels: bad input is refused before anything is written.
refused "a variant name with a space is refused" "$KERNEL" add 'bad name' bzimage="$tmp/bzImage" config="$tmp/good.config"
refused "a missing bzImage is refused" "$KERNEL" add mine bzimage="$tmp/missing" config="$tmp/good.config"
like "$REFUSED_OUT" "does not exist" "the refusal says the file does not exist"
refused "bzimage= without config= is refused" "$KERNEL" add mine bzimage="$tmp/bzImage"
refused "an unknown key is refused" "$KERNEL" add mine colour=blue
refused "a name that exists already is refused" "$KERNEL" add control bzimage="$tmp/bzImage" config="$tmp/good.config"
refused "an unknown base variant is refused" "$KERNEL" add mine patches="$tmp" base=no-such
refused "an unknown formula is refused" "$KERNEL" add mine patches="$tmp" base=patched model=6.2
like "$REFUSED_OUT" "model: '6.2' is not a formula; one of: cliff 9783aa 9de7ca 1bc63f 6.1" \
	"the refusal lists the formulas"
refused "a missing config fragment is refused" "$KERNEL" add mine base=patched fragment="$tmp/none.config"
like "$REFUSED_OUT" "fragment: '$tmp/none.config' does not exist" "naming it"
refused "a fragment on a prebuilt kernel is refused" \
	"$KERNEL" add mine bzimage="$tmp/bzImage" config="$tmp/good.config" fragment="$tmp/good.config"
refused "a base without patches or a fragment is refused" "$KERNEL" add mine base=patched
[ ! -e "$VARIANTS_LOCAL" ]
ok $? "nothing was written to variants.local"

# A prebuilt kernel missing an option is refused with the list.
runs "a prebuilt kernel can be registered" \
	"$KERNEL" add theirs bzimage="$tmp/bzImage" config="$tmp/bad.config" a test kernel
out=$("$KERNEL" build theirs 2>&1)
is "$?" 1 "building a prebuilt kernel whose config lacks options fails"
like "$out" "CONFIG_MEMCG=y" "the failure lists CONFIG_MEMCG"
[ ! -e "$KOUT/theirs" ]
ok $? "nothing is left in the kernels directory"

# With a good config it is accepted and treated like any other variant.
cp "$tmp/good.config" "$tmp/bad.config"
out=$("$KERNEL" build theirs 2>&1)
ok $? "a prebuilt kernel with a good config is accepted"
cmp -s "$tmp/bzImage" "$KOUT/theirs/bzImage"
ok $? "its bzImage is in the kernels directory"
like "$(cat "$KOUT/theirs/manifest.json" 2> /dev/null)" '"kind": "prebuilt"' "its manifest says prebuilt"
like "$(cat "$KOUT/theirs/manifest.json" 2> /dev/null)" '"inputs_hash": "[0-9a-f]{64}"' "its manifest has an inputs hash"
out=$("$KERNEL" build theirs 2>&1)
like "$out" "up to date" "building it again is a no-op"
is "$("$KERNEL" path theirs 2> /dev/null)" "$KOUT/theirs" "path finds it"
like "$("$KERNEL" list)" "^theirs .* yes +a test kernel" "list shows it, built, with its description"
runs "a kernel can be registered with the formula it follows" \
	"$KERNEL" add mine patches="$tmp" base=patched model=6.1 my patches
like "$(cat "$VARIANTS_LOCAL")" $'^mine\tpatches=[^\t]* base=patched model=6.1\tmy patches$' \
	"variants.local records its model"
is "$(VARIANTS_LOCAL=$VARIANTS_LOCAL /usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import model
print(model.formula_of("mine@mglru"), model.formula_of("mine"), model.formula_of("theirs"))' "$SUITE_ROOT/analysis")" \
	"cliff 6.1 None" "the analysis models it by that formula, and a kernel without model= not at all"

# A variant that is another's patches under a config fragment.
like "$("$KERNEL" list)" "^patched\+slob +base=patched fragment=patches/configs/slob.config model=6.1 " \
	"list names the allocator variants with their fragment"
printf '# bench-lacks: CONFIG_MEMCG_KMEM (a test)\nCONFIG_SLOB=y\n' > "$tmp/my-slob.config"
runs "a variant can be a base under a config fragment" \
	"$KERNEL" add myslob base=patched fragment="$tmp/my-slob.config" model=6.1 mine, on SLOB
like "$(cat "$VARIANTS_LOCAL")" $'myslob\tbase=patched fragment=/[^\t]*/my-slob.config model=6.1\tmine, on SLOB' \
	"variants.local records it, the fragment's path made absolute"
cp "$tmp/my-slob.config" "$tmp/MySlob.config"
printf 'bad base=patched fragment=%s\n' "$tmp/MySlob.config" >> "$VARIANTS_LOCAL"
out=$("$KERNEL" config bad 2>&1)
like "$out" "a fragment's file name is NAME.config" "a fragment whose name cannot name an object tree is refused"

out=$("$KERNEL" path control 2>&1)
is "$?" 1 "path of an unbuilt kernel fails"
like "$out" "make kernel K=control" "and says which make target builds it"
refused "building an unknown variant is a usage error" "$KERNEL" build no-such-kernel
like "$REFUSED_OUT" "known variants: control .*patched .*theirs" "the error lists every known variant"

done_testing
