#!/usr/bin/env python3
"""The shape of src/'s C and C++ files. The include direction: each folder is a layer, and a file
includes only headers of its own folder or of the layers below it (LAYERS, top first). No line is
longer than 120 columns, no function longer than 80 lines (a definition that starts at column 0
and ends at the next line that is a lone "}" or "};"), and no folder holds more than a quarter of
src/'s lines.

usage: source.py [SOURCE_DIR]     (default: the checkout this script is in; exit status 1 on a problem)
"""
import os
import re
import sys

# Top first: a layer may include the ones after it. Every folder of src/ with C or C++ files is here.
LAYERS = ["fortran", "frontend", "session", "output", "runtime", "mpi", "pnc", "transport", "model", "match", "types",
          "config", "common"]
MAX_COLUMNS = 120
MAX_FOLDER_SHARE = 0.25  # of src/'s lines: no folder grows into the room where every idea lands
MAX_FUNCTION_LINES = 80
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"')
# A function definition's first line at column 0: a return type and a name, a parameter list that may
# go on over the next lines, no ';' (a declaration) and no '=' (a variable).
DEFINITION = re.compile(r"^(?!namespace\b|extern\b|struct\b|class\b|enum\b|union\b|template\b|typedef\b|using\b|#)"
                        r"[A-Za-z_][\w:<>,*& ]*[\s*&]([\w:~]+|operator\S+)\(")


def long_functions(rel, lines):
    """(line, name, length) of each function of `lines` over MAX_FUNCTION_LINES."""
    found, start = [], None
    for n, line in enumerate(lines, 1):
        if start is None:
            m = DEFINITION.match(line)
            if m and ";" not in line.split("//")[0] and "=" not in line.split("(")[0]:
                start, name = n, m.group(1)
        elif line.rstrip() in ("}", "};"):
            if n - start + 1 > MAX_FUNCTION_LINES:
                found.append(f"{rel}:{start}: {name} is {n - start + 1} lines (at most {MAX_FUNCTION_LINES})")
            start = None
        elif DEFINITION.match(line) and line.rstrip().endswith(";"):
            start = None  # a declaration over several lines
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    src = os.path.join(root, "src")
    problems, arrows, folder_lines = [], set(), {}
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
            lines = open(os.path.join(path, name), errors="replace").read().split("\n")
            folder_lines[folder] = folder_lines.get(folder, 0) + len(lines) - 1
            problems += long_functions(rel, lines)
            for n, line in enumerate(lines, 1):
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
    total = sum(folder_lines.values())
    for folder, n in sorted(folder_lines.items()):
        if n > MAX_FOLDER_SHARE * total:
            problems.append(f"src/{folder}/ holds {n} of src/'s {total} lines ({100 * n / total:.0f}%, at most "
                            f"{100 * MAX_FOLDER_SHARE:.0f}%): split it by idea")
    for p in problems:
        print(p)
    print(f"{len(arrows)} include arrows between folders of src/: " +
          ("all point down, no line, function or folder too long" if not problems else f"{len(problems)} problem{'s' * (len(problems) != 1)}"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
