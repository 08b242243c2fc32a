#!/bin/sh
# readme_table.sh - a table in a document (docs/options.md, docs/statistics.md,
# src/README.md) is the one the code generates, so the documentation cannot
# drift.
#   readme_table.sh NAME DOCUMENT.md GENERATED.md GENERATOR
# The document holds the table between "<!-- NAME table: generated ..." and
# "<!-- end of NAME table -->".
set -eu
name=$1 readme=$2 generated=$3 generator=$4
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
sed -n "/<!-- $name table: generated/,/<!-- end of $name table -->/p" "$readme" | sed '1d;$d' > "$tmp"
if ! diff -u "$generated" "$tmp"; then
    echo "FAIL readme_${name}_table_matches_the_code: expected $readme's $name table to equal $generated (regenerate it with $generator md)" >&2
    exit 1
fi
echo "PASS readme_${name}_table_matches_the_code"
