"""`symmrun` and `symm-info` from the wheel: run the bundled programs
(symm/_lib/symmrun, symm/_lib/symm-info), which use the bundled runtime."""
import os
import sys


def _exec(name):
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_lib", name)
    if not os.path.exists(exe):
        sys.stderr.write("%s: this symm package has no bundled %s (%s)\n" % (name, name, exe))
        return 127
    os.execv(exe, [exe] + sys.argv[1:])


def main():
    """symmrun -n N prog args..."""
    return _exec("symmrun")


def info():
    """symm-info [--json]"""
    return _exec("symm-info")


if __name__ == "__main__":
    sys.exit(main())
