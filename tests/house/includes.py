#!/usr/bin/env python3
"""The include direction of src/: each folder is a layer, and a file includes only headers of its own
folder or of the layers below it (LAYERS, top first). Also no line of src/'s C and C++ files is
longer than 120 columns.

usage: includes.py [SOURCE_DIR]     (default: the checkout this script is in; exit status 1 on a problem)
"""
import os
import re
import sys

# Top first: a layer may include the ones after it. Every folder of src/ with C or C++ files is here.
LAYERS = ["fortran", "runtime", "mpi", "pnc", "transport", "model", "match", "types", "config", "common"]
MAX_COLUMNS = 120
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"')


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    src = os.path.join(root, "src")
    problems, arrows = [], set()
    for folder in sorted(os.listdir(src)):
        path = os.path.join(src, folder)
        if not os.path.isdir(path):
            continue
        files = [f for f in sorted(os.listdir(path)) if f.endswith((".c", ".h", ".cpp", ".hpp"))]
        if files and folder not in LAYERS:
            problems.append(f"src/{folder}/ is in no layer: add it to LAYERS in {os.path.relpath(__file__, root)}")
            continue
        for name in files:
            rel = f"src/{folder}/{name}"
            for n, line in enumerate(open(os.path.join(path, name), errors="replace"), 1):
                if len(line.rstrip("\n")) > MAX_COLUMNS:
                    problems.append(f"{rel}:{n}: {len(line.rstrip())} columns (at most {MAX_COLUMNS})")
                m = INCLUDE.match(line)
                if not m or m.group(1) == folder or not os.path.isdir(os.path.join(src, m.group(1))):
                    continue
                to = m.group(1)
                arrows.add((folder, to))
                if to not in LAYERS or LAYERS.index(to) < LAYERS.index(folder):
                    problems.append(f"{rel}:{n}: includes {to}/, a layer above {folder}/ (order: "
                                    f"{' > '.join(LAYERS)})")
    for p in problems:
        print(p)
    print(f"{len(arrows)} include arrows between folders of src/: " +
          ("all point down, no line too long" if not problems else f"{len(problems)} problems"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
