#!/usr/bin/env python3
"""The links of README.md and docs/*.md: every relative link names a file or folder of the tree, and
every #anchor a heading of the Markdown file it points into (GitHub's anchors: lowercase, punctuation
dropped, spaces to '-', a repeated heading suffixed -1, -2, ...).

usage: links.py [SOURCE_DIR]     (default: the checkout this script is in; exit status 1 on a broken link)
"""
import glob
import os
import re
import sys

LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def anchors(text):
    """The anchors of a Markdown text's headings (not those inside code blocks)."""
    found, seen, fenced = set(), {}, False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        m = None if fenced else HEADING.match(line)
        if m:
            a = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            n = seen.get(a, 0)
            seen[a] = n + 1
            found.add(a if n == 0 else f"{a}-{n}")
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    files = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    texts = {f: open(f).read() for f in files}
    known = {f: anchors(t) for f, t in texts.items()}
    broken, count = [], 0
    for f, text in texts.items():
        # (links inside code blocks are code, not links)
        prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
        for m in LINK.finditer(prose):
            target = m.group(1)
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            count += 1
            path, _, anchor = target.partition("#")
            to = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            where = os.path.relpath(f, root)
            if not os.path.exists(to):
                broken.append(f"{where}: link to {target}: no such file")
            elif anchor and to.endswith(".md"):
                if to not in known:
                    known[to] = anchors(open(to).read())
                if anchor not in known[to]:
                    broken.append(f"{where}: link to {target}: no such heading in {os.path.relpath(to, root)}")
    for b in broken:
        print(b)
    print(f"{count} links in {len(files)} files: " + (f"{len(broken)} broken" if broken else "all resolve"))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
