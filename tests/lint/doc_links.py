#!/usr/bin/env python3
"""doc_links.py - every relative link in the user documents (README.md,
docs/*.md, src/README.md, tests/README.md, bench/README.md) names a file or
directory of the repository, and every #anchor a heading of its document.

    doc_links.py REPO
"""
import os
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(path):
    """GitHub-style anchors of a Markdown file's headings."""
    out = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"#+\s+(.*)", line)
            if m:
                a = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
                out.add(a)
    return out


def main():
    repo = sys.argv[1]
    docs = ["README.md", "src/README.md", "tests/README.md", "bench/README.md"]
    docs += ["docs/" + f for f in sorted(os.listdir(os.path.join(repo, "docs"))) if f.endswith(".md")]
    bad = []
    for doc in docs:
        path = os.path.join(repo, doc)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):          # http:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not os.path.exists(dest):
                bad.append(f"{doc}: link to {target}: no such file")
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                bad.append(f"{doc}: link to {target}: no such heading")
    if bad:
        for b in bad:
            print(b, file=sys.stderr)
        print(f"FAIL docs_links_point_to_what_exists: expected every relative link to resolve; {len(bad)} do not",
              file=sys.stderr)
        return 1
    print(f"PASS docs_links_point_to_what_exists ({len(docs)} documents)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
