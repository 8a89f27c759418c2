#!/usr/bin/env python3
"""Side-by-side markdown table of bench_symm and bench_nvshmem results.

Usage: compare.py SYMM_RESULTS NVSHMEM_RESULTS [--title TEXT]

Each input holds lines "RESULT <key> <value> <unit> [note]". The factor is
symm / NVSHMEM for bandwidths (GB/s) and NVSHMEM / symm for times (us, s), so
a factor above 1 always means symm is better.
"""
import sys


def load(path):
    rows = {}
    order = []
    try:
        with open(path) as f:
            for line in f:
                parts = line.rstrip('\n').split(' ', 4)
                if len(parts) < 4 or parts[0] != 'RESULT':
                    continue
                key, value, unit = parts[1], float(parts[2]), parts[3]
                note = parts[4] if len(parts) > 4 else ''
                if key not in rows:
                    order.append(key)
                rows[key] = (value, unit, note.strip())
    except OSError:
        pass
    return rows, order


def fmt(v, unit):
    if v is None:
        return '-'
    if unit == 'GB/s':
        return '%.3g GB/s' % v if v < 10 else '%.1f GB/s' % v
    if unit == 'us':
        return '%.2f us' % v
    if unit == 's':
        return '%.3f s' % v
    return '%g %s' % (v, unit)


def main():
    args = sys.argv[1:]
    title = None
    if '--title' in args:
        i = args.index('--title')
        title = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        sys.stderr.write(__doc__)
        return 2
    symm, order = load(args[0])
    nv, nv_order = load(args[1])
    for k in nv_order:
        if k not in symm:
            order.append(k)
    out = []
    if title:
        out.append('### ' + title)
        out.append('')
    out.append('| measurement | symm | NVSHMEM | factor (>1: symm better) | symm notes |')
    out.append('|---|---|---|---|---|')
    for k in order:
        s = symm.get(k)
        n = nv.get(k)
        unit = (s or n)[1]
        sv = s[0] if s else None
        nv_v = n[0] if n else None
        factor = '-'
        if sv and nv_v:
            f = sv / nv_v if unit == 'GB/s' else nv_v / sv
            factor = '%.2fx' % f
        out.append('| %s | %s | %s | %s | %s |' % (k, fmt(sv, unit), fmt(nv_v, unit), factor,
                                                   s[2] if s else ''))
    print('\n'.join(out))
    return 0


if __name__ == '__main__':
    sys.exit(main())
