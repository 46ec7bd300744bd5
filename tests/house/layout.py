#!/usr/bin/env python3
"""README.md's Layout block against the tree: every top-level folder but src/, tools/ and tests/, and
every folder of those three, has its line there, and every folder named there exists.

usage: layout.py [SOURCE_DIR]     (default: the checkout this script is in; exit status 1 on a difference)
"""
import os
import re
import subprocess
import sys

DETAILED = ("src", "tools", "tests")  # the folders whose folders each get a line


def tracked_folders(root):
    """The folders of the tree that hold tracked files (git ls-files; without git, every folder but
    build trees and hidden ones), as paths relative to root ending with '/'."""
    try:
        files = subprocess.run(["git", "-C", root, "ls-files"], check=True, capture_output=True,
                               text=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        files = [os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs]
        files = [f for f in files if not re.match(r"(build|\.)", f)]
    folders = set()
    for f in files:
        parts = f.split("/")[:-1]
        if not parts or parts[0].startswith("."):
            continue
        if parts[0] not in DETAILED:
            folders.add(parts[0] + "/")
        elif len(parts) > 1:
            folders.add(parts[0] + "/" + parts[1] + "/")
    return folders


def listed_folders(readme):
    """The first word of each line of the code block under '## Layout'."""
    text = open(readme).read()
    m = re.search(r"^## Layout\n.*?^```\n(.*?)^```", text, re.S | re.M)
    if not m:
        sys.exit(f"{readme}: no code block under '## Layout'")
    return [line.split()[0] for line in m.group(1).splitlines() if line.strip()]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    listed = listed_folders(os.path.join(root, "README.md"))
    tree = tracked_folders(root)
    problems = [f"README.md's Layout names {p}, which is not a folder of the tree" for p in listed
                if not os.path.isdir(os.path.join(root, p))]
    problems += [f"README.md's Layout has no line for {p}" for p in sorted(tree - set(listed))]
    problems += [f"README.md's Layout names {p} twice" for p in sorted(set(listed)) if listed.count(p) > 1]
    for p in problems:
        print(p)
    print(f"{len(listed)} folders listed, {len(tree)} in the tree: " + ("agree" if not problems else "differ"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
