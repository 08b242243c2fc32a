#!/usr/bin/env python3
"""layers.py - the shape of src/: layers, names in comments, dead functions.

    layers.py SRC_DIR [layers|comments|unused] [CALLER_DIR...]

layers (the default): no file of src/ includes or calls a layer above its
own. The layers are written once, in the table of src/README.md between
"<!-- layers" and "<!-- end of layers -->" (top first), each file named by
its path under src/ (the directories are groups of layers). A file may
include the headers of its own row and the rows below it, and call the
functions and macros those headers declare (or that the file defines
itself).

comments: every nd_ name a comment of src/ mentions exists in src/'s code
(a function, macro, type or variable): a comment cannot go on naming a
function that was renamed or removed. Names written as patterns
(nd_locks_NAME, nd_opt_buf_##name) are left out.

unused: every nd_ function src/ defines is called (or its address taken,
or aliased) somewhere outside its own definition and declarations: in
src/, or in the CALLER_DIRs (the tools and tests that use internals).

Exit 0 when the check passes, 1 when it does not (one FAIL line each).
"""

import os
import re
import sys


def layer_table(src):
    text = open(os.path.join(src, "README.md")).read()
    m = re.search(r"<!-- layers[^>]*-->(.*?)<!-- end of layers -->", text, re.S)
    if not m:
        sys.exit("FAIL layers: src/README.md has no layer table between '<!-- layers' and "
                 "'<!-- end of layers -->'")
    rows = [l for l in m.group(1).splitlines() if l.startswith("|")][2:]   # header, rule
    layer_of = {}
    names = []
    for depth, row in enumerate(rows):
        cells = [c.strip() for c in row.strip("|").split("|")]
        names.append(cells[0])
        for f in re.findall(r"`([^`]+)`", cells[1]):
            layer_of[f] = depth          # 0 = top
    return layer_of, names


def strip_comments(code):
    code = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), code, flags=re.S)
    return re.sub(r"//[^\n]*", "", code)


def strip_strings(code):
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', code)


def source_files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, fs in os.walk(root) for f in fs
                  if f.endswith((".c", ".h", ".cc", ".cpp", ".hpp")))


def comments_of(code):
    """(line, text) of every comment."""
    out = []
    for m in re.finditer(r"/\*.*?\*/|//[^\n]*", code, flags=re.S):
        out.append((code.count("\n", 0, m.start()) + 1, m.group(0)))
    return out


def check_comments(src):
    files = source_files(src)
    raw = {f: open(os.path.join(src, f)).read() for f in files}
    known = set()
    for f in files:
        known.update(re.findall(r"\b(nd_\w+)", strip_comments(raw[f])))
    problems = []
    for f in files:
        for line, text in comments_of(raw[f]):
            for m in re.finditer(r"\b(nd_\w+)", text):
                name = m.group(1)
                if any(c.isupper() for c in name) or name.endswith("_"):
                    continue   # a pattern: nd_locks_NAME, nd_opt_buf_##name
                if name not in known:
                    problems.append("%s:%d: a comment names %s, which src/ does not define or use"
                                    % (f, line + text.count("\n", 0, m.start()), name))
    for p in sorted(set(problems)):
        print("FAIL names: " + p)
    if problems:
        return 1
    print("PASS names: every nd_ name in the comments of %d files of src/ exists in the code" % len(files))
    return 0


def check_unused(src, callers):
    files = source_files(src)
    raw = {f: strip_comments(open(os.path.join(src, f)).read()) for f in files}
    defined = {}
    for f in files:
        # Definitions start at column 0 with their type and end their line
        # with the parameter list (the style of every file); a prototype
        # ends with ';'.
        for m in re.finditer(r"^(?!return\b|if\b|else\b)[A-Za-z_][\w \t\*]*?\b(nd_\w+)\s*\([^;{]*\)\s*(?:\{|\n\{)",
                             raw[f], re.M):
            defined.setdefault(m.group(1), f)
    texts = [raw[f] for f in files]
    for d in callers:
        for f in source_files(d):
            texts.append(strip_comments(open(os.path.join(d, f)).read()))
    # Every nd_ word of every text, once (a word is the whole of \w+ after
    # a boundary, so it is exactly what \bNAME\b finds): the place of each
    # occurrence by name, instead of a search of every text for each name.
    places = {}
    for t in texts:
        for m in re.finditer(r"\b(nd_\w+)", t):
            places.setdefault(m.group(1), []).append((t, m.start(), m.end()))
    problems = []
    for name, where in sorted(defined.items()):
        uses = 0
        for t, start, end in places.get(name, ()):
            line_start = t.rfind("\n", 0, start) + 1
            line_end = t.find("\n", end)
            line = t[line_start:line_end if line_end >= 0 else len(t)]
            # A definition or declaration starts at column 0 and names it
            # before its '('; anything else is a use.
            if re.match(r"^(?!return\b)[A-Za-z_][\w \t\*]*?\b" + re.escape(name) + r"\s*\(", line) and \
                    not line.startswith((" ", "\t")):
                continue
            uses += 1
        if uses == 0:
            problems.append("%s defines %s, which nothing calls" % (where, name))
    for p in problems:
        print("FAIL unused: " + p)
    if problems:
        return 1
    print("PASS unused: each of the %d nd_ functions src/ defines is called" % len(defined))
    return 0


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../src")
    mode = sys.argv[2] if len(sys.argv) > 2 else "layers"
    if mode == "comments":
        return check_comments(src)
    if mode == "unused":
        return check_unused(src, sys.argv[3:])
    layer_of, names = layer_table(src)
    files = sorted(os.path.relpath(os.path.join(d, f), src)
                   for d, _, fs in os.walk(src) for f in fs if f.endswith((".c", ".h", ".cc")))
    base = {}
    for f in files:
        b = os.path.basename(f)
        if b in base:
            problems_early = "two files of src/ are named %s: %s and %s" % (b, base[b], f)
            print("FAIL layers: " + problems_early)
            return 1
        base[b] = f
    problems = []
    for f in files:
        if f not in layer_of:
            problems.append("%s is in no layer of src/README.md's table" % f)
    for f in layer_of:
        if f not in files:
            problems.append("src/README.md's layer table names %s, which does not exist" % f)
    raw = {f: strip_comments(open(os.path.join(src, f)).read()) for f in files}
    code = {f: strip_strings(raw[f]) for f in files}

    # Which header declares each nd_ name (functions, inline functions, macros).
    declared = {}
    for f in files:
        if not f.endswith(".h"):
            continue
        for m in re.finditer(r"^\s*#\s*define\s+(nd_\w+)\s*\(", code[f], re.M):
            declared.setdefault(m.group(1), f)
        # Declarations and definitions start at column 0 with their type
        # (the style of every header); calls are indented.
        for m in re.finditer(r"^(?!return\b|if\b|else\b)[A-Za-z_][\w \t\*]*?\b(nd_\w+)\s*\(", code[f], re.M):
            declared.setdefault(m.group(1), f)

    for f in files:
        if f not in layer_of:
            continue
        mine = layer_of[f]
        for m in re.finditer(r'^\s*#\s*include\s+"([^"]+)"', raw[f], re.M):
            inc = base.get(os.path.basename(m.group(1)), m.group(1))
            if inc in layer_of and layer_of[inc] < mine:
                problems.append("%s (layer '%s') includes %s (layer '%s', above it)"
                                % (f, names[mine], inc, names[layer_of[inc]]))
        for m in re.finditer(r"\b(nd_\w+)\s*\(", code[f]):
            h = declared.get(m.group(1))
            if h is not None and h in layer_of and layer_of[h] < mine:
                line = code[f].count("\n", 0, m.start()) + 1
                problems.append("%s:%d (layer '%s') calls %s, declared in %s (layer '%s', above it)"
                                % (f, line, names[mine], m.group(1), h, names[layer_of[h]]))
    # Each directory is one run of rows: a layer group.
    seen, last = [], None
    for f, depth in sorted(layer_of.items(), key=lambda kv: kv[1]):
        d = os.path.dirname(f)
        if d != last:
            if d in seen:
                problems.append("directory src/%s holds rows that are not next to each other in the table" % d)
            seen.append(d)
            last = d
    for p in sorted(set(problems)):
        print("FAIL layers: " + p)
    if problems:
        return 1
    print("PASS layers: %d files of src/ include and call only their own layer and those below "
          "(%d layers)" % (len(files), len(names)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
