"""What every compat script shares: collect failed checks, then report them
and exit non-zero, or print the one line of what passed."""
import sys


class Checks:
    def __init__(self, what):
        self.what = what
        self.failures = []

    def check(self, what, got, expected):
        if got != expected:
            self.failures.append(f"{what}: expected {expected!r}, got {got!r}")

    def fail(self, what):
        self.failures.append(what)

    def report(self, passed):
        if self.failures:
            print(f"{self.what} against Loom FAILED:\n  " + "\n  ".join(self.failures))
            sys.exit(1)
        print(f"{self.what} against Loom: {passed}: ok")
