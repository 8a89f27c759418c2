"""`symmrun` from the wheel: runs the bundled launcher (symm/_lib/symmrun)."""
import os
import sys


def main():
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_lib", "symmrun")
    if not os.path.exists(exe):
        sys.stderr.write("symmrun: this symm package has no bundled launcher (%s)\n" % exe)
        return 127
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
