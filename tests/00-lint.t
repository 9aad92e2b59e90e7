#!/usr/bin/env bash
# Static checks: every shell script is shellcheck-clean, the Makefile's help
# lists every target, and git ignores the build cache.
set -u
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/lib/tap.sh"
cd "$SUITE_ROOT" || exit 1

# Shell scripts are shellchecked; Python ones (by name or first line) parsed.
mapfile -t files < <({ ls bench/*.sh rootfs/*.sh rootfs/overlay/usr/local/sbin/* tests/*.t tests/lib/*.sh .ci/run \
	analysis/*.py tests/fixtures/runs/*.py; } 2> /dev/null)
for f in "${files[@]}"; do
	if [[ "$f" == *.py ]] || [[ "$(sed -n 1p "$f")" == *python* ]]; then
		out=$(/usr/bin/python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' "$f" 2>&1)
		ok $? "python3 parses $f${out:+
$(printf '%s\n' "$out" | sed 's/^/# /')}"
	else
		out=$(shellcheck -x "$f" 2>&1)
		ok $? "shellcheck $f${out:+
$(printf '%s\n' "$out" | sed 's/^/# /')}"
	fi
done

help=$(make --no-print-directory 2>&1)
ok $? "make with no target runs help"
# Every target a user can name (the .PHONY ones; found apart from the "## "
# comments that make the help) is in the help.
mapfile -t targets < <(sed -n 's/^\.PHONY: *//p' Makefile | tr ' ' '\n' | grep -v '^$')
[ "${#targets[@]}" -ge 10 ]
ok $? "the Makefile's phony targets are found (${#targets[@]})"
for t in "${targets[@]}"; do
	like "$help" "^  $t " "make help lists $t"
done
for t in bench test check deps kernels kernel; do
	like "$help" "^  $t " "make help has the $t target"
done

# The documents stand on their own: every relative link in README.md and
# docs/ names a file in the repository, and no tracked file points outside it.
mapfile -t docs < <(ls README.md docs/*.md docs/results/*.md)
[ "${#docs[@]}" -ge 5 ]
ok $? "the documents are found (${#docs[@]})"
for d in "${docs[@]}"; do
	bad=""
	while read -r link; do
		link=${link%%#*}
		[ -z "$link" ] && continue
		[ -e "$(dirname "$d")/$link" ] || bad="$bad $link"
	done < <(grep -o '](\([^)]*\))' "$d" | sed 's/^](//; s/)$//' | grep -v '^[a-z]*://')
	is "$bad" "" "every relative link in $d resolves"
done
# The team's design notes live in a folder beside the checkout, which users
# do not have; no tracked file may point there.
notes_dir='\.\./'"shared"
outside=$(git grep -l -e "$notes_dir" -e 'DESIGN\.md' -- ':!tests/00-lint.t' 2> /dev/null)
is "$outside" "" "no tracked file points at the design notes outside the repository"

git check-ignore -q build/obj/x.o
ok $? "git ignores build/"
git check-ignore -q results/run/x.csv
ok $? "git ignores results/"

done_testing
