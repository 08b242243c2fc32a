#!/usr/bin/env python3
"""readme_options.py - the README's short option table names options that
exist, with their defaults as the code has them (the full table, in
docs/options.md, is compared whole by readme_table.sh).

    readme_options.py README.md GENERATED_OPTIONS.md

The README's table lies between "<!-- options brief:" and
"<!-- end of options brief -->"; a row may name several options, with their
defaults in the same order ("`a`, `b` | 1, 2 | ...").
"""
import re
import sys


def rows(text, start, end):
    inside = False
    for line in text.splitlines():
        if line.startswith(start):
            inside = True
            continue
        if line.startswith(end):
            return
        if inside and line.startswith("|") and not line.startswith("|---"):
            yield [c.strip() for c in line.strip("|").split("|")]


def main():
    readme, generated = sys.argv[1], sys.argv[2]
    defaults = {}
    with open(generated, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"\| `([a-z_]+)` \| ([^|]*) \|", line)
            if m:
                defaults[m.group(1)] = m.group(2).strip()
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    bad, seen = [], 0
    for cells in rows(text, "<!-- options brief:", "<!-- end of options brief -->"):
        if cells[0] == "option":
            continue
        names = re.findall(r"`([a-z_]+)`", cells[0])
        given = [d.strip() for d in cells[1].split(",")] if cells[1] else [""]
        if len(names) != len(given):
            bad.append(f"row {cells[0]}: {len(names)} options, {len(given)} defaults")
            continue
        for name, d in zip(names, given):
            seen += 1
            if name not in defaults:
                bad.append(f"{name}: no such option")
            elif d != defaults[name] and not (d == "" and defaults[name] == "(none)"):
                bad.append(f"{name}: default {d!r} in the README, {defaults[name]!r} in the code")
    if seen == 0:
        bad.append("no options table between <!-- options brief: ... --> and <!-- end of options brief -->")
    if bad:
        for b in bad:
            print(b, file=sys.stderr)
        print("FAIL readme_options_brief_matches_the_code: expected the README's short option table "
              "to name existing options with their defaults", file=sys.stderr)
        return 1
    print(f"PASS readme_options_brief_matches_the_code ({seen} options)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
