#!/usr/bin/env python3
"""Run a test command; turn "no usable GPU" failures into a meson skip (77).

Usage: skip_no_device.py COMMAND [ARGS...]

The tests/mp programs fail (CHECK_OK) when symm_init on the CUDA backend
answers SYMM_ERR_NO_DEVICE; on a machine without a GPU that is a skip, not a
failure. Output is passed through unchanged.
"""
import subprocess
import sys


def main() -> int:
    if len(sys.argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.decode(errors='replace')
    sys.stdout.write(out)
    if p.returncode != 0 and 'SYMM_ERR_NO_DEVICE' in out:
        print('SKIP: no usable GPU (symm_init answered SYMM_ERR_NO_DEVICE)')
        return 77
    return p.returncode


if __name__ == '__main__':
    sys.exit(main())
