"""What a benchmark prints of a failed run: a sanitizer's report whole (the abort that follows it
prints a long backtrace, which would push it out of a plain tail), then the run's last lines."""
import re

REPORT = re.compile(r"^(?:\[\w+\] )?(?:WARNING: ThreadSanitizer|==\d+==ERROR: \w+Sanitizer|\S+: runtime error:)",
                    re.M)


def failure_text(out, tail=3000):
    m = REPORT.search(out)
    report = out[m.start():m.start() + 6000] + "\n...\n" if m and m.start() < len(out) - tail else ""
    return report + out[-tail:]
