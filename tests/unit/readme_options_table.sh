#!/bin/sh
# readme_options_table.sh - the option table in README.md is the one the code
# generates (tools/gen-options md), so the documentation cannot drift.
#   readme_options_table.sh README.md GENERATED.md
set -eu
readme=$1 generated=$2
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
sed -n '/<!-- options table: generated/,/<!-- end of options table -->/p' "$readme" | sed '1d;$d' > "$tmp"
if ! diff -u "$generated" "$tmp"; then
    echo "FAIL readme_options_table_matches_the_code: expected README.md's option table to equal $generated (regenerate it with build/tools/gen-options md)" >&2
    exit 1
fi
echo "PASS readme_options_table_matches_the_code"
