"""A benchmark's own section of a markdown report (docs/PERFORMANCE.md): its text between the
markers <!-- NAME: begin --> and <!-- NAME: end -->, replaced on every run (appended the first time),
so that several benchmarks write one report without touching each other's parts."""
import os


def replace(path, name, text):
    """Put `text` (without the markers) as the section of benchmark `name` in the file at `path`."""
    begin, end = f"<!-- {name}: begin -->", f"<!-- {name}: end -->"
    new = f"{begin}\n{text.strip(chr(10))}\n{end}"
    old = open(path).read() if os.path.exists(path) else ""
    if begin in old and end in old:
        old = old[:old.index(begin)] + new + old[old.index(end) + len(end):]
    else:
        old = old.rstrip("\n") + "\n\n" + new + "\n"
    with open(path, "w") as f:
        f.write(old)
