#!/usr/bin/env python3
"""scripts/plot-bench.py: recorded tables to JSON, JSON to figures (matplotlib).

Usage: test_plots.py SOURCE_ROOT

1. convert (standard library): the recorded summary table gives exactly the
   committed JSON.
2. plot, from the fixture JSON in tests/tools/plot_fixture (symm and an
   anchor; bench_coll.py's and bench_torch.py's JSON): the expected files,
   each an SVG whose series lines (<g id="series-NAME">, one per library and
   panel) have one point per measured size, drawn where the data says: on a
   log-log panel every point's pixel position is the same linear function of
   (log2 size, log10 value) for every series (so a wrong value, size or
   series shows), symm above the anchor where its bandwidth is higher and
   below where its time is lower; bars for the latencies, labels as text.
3. the recorded JSON draws the figures committed in docs/plots (same names).
4. refusals: symm without an anchor, a missing file.
Exit 77 (meson's skip) with the reason when matplotlib is not installed
(bash scripts/deps.sh --all installs it; the test command runs that first).
"""
import filecmp
import glob
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

ROOT = sys.argv[1]
SCRIPT = os.path.join(ROOT, 'scripts', 'plot-bench.py')
FIX = os.path.join(ROOT, 'tests', 'tools', 'plot_fixture')
RUN = os.path.join(ROOT, 'docs', 'gpu-runs', '2026-11-21-1418-summary')
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print('FAIL:', what)
    return cond


def run(*args):
    p = subprocess.run([sys.executable, SCRIPT] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def series(path):
    """{id: [[(x, y) of each point] for each line with that id]} of an SVG."""
    out = {}
    for g in ET.parse(path).getroot().iter():
        gid = g.get('id', '')
        if not gid.startswith('series-'):
            continue
        d = next((c.get('d') for c in g if c.tag.endswith('path')), '')
        pts = [(float(x), float(y)) for x, y in re.findall(r'[ML] ([-0-9.e]+) ([-0-9.e]+)', d)]
        out.setdefault(gid[len('series-'):], []).append(pts)
    return out


def texts(path):
    return [t.text or '' for t in ET.parse(path).getroot().iter() if t.tag.endswith('text')]


def check_panel(name, lines):
    """lines: [(pixel points, data points [(size, value)])] of one panel: one
    affine map from (log2 size, log10 value) to pixels fits every point."""
    pairs = [(p, d) for pix, dat in lines for p, d in zip(pix, sorted(dat))]
    (px0, py0), (s0, v0) = pairs[0]
    kx = ky = None
    for (px, py), (s, v) in pairs[1:]:
        if s != s0:
            k = (px - px0) / (math.log2(s) - math.log2(s0))
            kx = k if kx is None else kx
            if not check(abs(k - kx) <= 1e-3 * abs(kx),
                         '%s: size %d drawn at x %.2f' % (name, s, px)):
                return
        if v != v0:
            k = (py - py0) / (math.log10(v) - math.log10(v0))
            ky = k if ky is None else ky
            if not check(abs(k - ky) <= 1e-3 * abs(ky),
                         '%s: value %g drawn at y %.2f' % (name, v, py)):
                return
    check(kx is not None and kx > 0 and ky is not None and ky < 0,
          '%s: sizes grow to the right and values upwards (%r, %r)' % (name, kx, ky))


try:
    import matplotlib  # noqa: F401  (only whether it imports)
    have_mpl = True
except ImportError:
    have_mpl = False

with tempfile.TemporaryDirectory() as d:
    # 1. convert: standard library only, byte for byte
    rc, out, err = run('convert', RUN + '.md', '-o', d)
    check(rc == 0, 'convert failed: %s' % err)
    for lib in ('symm', 'nvshmem'):
        fresh = os.path.join(d, '2026-11-21-1418-summary.%s.json' % lib)
        kept = '%s.%s.json' % (RUN, lib)
        check(os.path.exists(fresh) and filecmp.cmp(fresh, kept, shallow=False),
              'convert output for %s differs from the committed %s' % (lib, kept))
    sym = json.load(open(RUN + '.symm.json'))
    put1m = [r for r in sym['results'] if r['key'] == 'put_bw_1MiB']
    check(put1m and put1m[0]['size_bytes'] == 1048576 and put1m[0]['median'] == 237.2 and
          put1m[0]['unit'] == 'GB/s', 'put_bw_1MiB in the JSON: %r' % put1m)

    if not have_mpl:
        rc, out, err = run('plot', os.path.join(FIX, 'symm.json'),
                           os.path.join(FIX, 'nvshmem.json'), '-o', os.path.join(d, 'x'))
        check(rc != 0 and 'pip install matplotlib' in err,
              'without matplotlib plot must fail saying how to install it: %d %r' % (rc, err))
        if failures:
            sys.exit(1)
        print('matplotlib is not installed (python3 -m pip install matplotlib, or '
              'bash scripts/deps.sh --all): convert checked, figures not drawn')
        sys.exit(77)

    # 2. the fixture: symm and NVSHMEM
    fs = json.load(open(os.path.join(FIX, 'symm.json')))
    fa = json.load(open(os.path.join(FIX, 'nvshmem.json')))
    figs = os.path.join(d, 'fix')
    rc, out, err = run('plot', os.path.join(FIX, 'symm.json'), os.path.join(FIX, 'nvshmem.json'),
                       '-o', figs)
    check(rc == 0, 'plot of the fixture failed: %s' % err)
    made = sorted(os.listdir(figs)) if os.path.isdir(figs) else []
    check(made == ['get-bw-vs-nvshmem.svg', 'latency-vs-nvshmem.svg', 'put-bw-vs-nvshmem.svg'],
          'fixture figures: %r' % made)
    check(sorted(out.split()) == sorted(os.path.join(figs, m) for m in made),
          'plot prints the files it wrote: %r' % out)
    for test in ('put_bw', 'get_bw'):
        path = os.path.join(figs, '%s-vs-nvshmem.svg' % test.replace('_', '-'))
        if not os.path.exists(path):
            continue
        check(ET.parse(path).getroot().tag.endswith('svg'), '%s is not SVG' % path)
        data = {lib: sorted((r['size_bytes'], r['median'])
                            for r in doc['results'] if r['test'] == test)
                for lib, doc in (('symm', fs), ('NVSHMEM', fa))}
        s = series(path)
        if not check(sorted(s) == ['NVSHMEM', 'symm'] and all(len(v) == 2 for v in s.values()),
                     '%s: series %r, expected symm and NVSHMEM in two panels each'
                     % (path, sorted(s))):
            continue
        for lib in s:
            for pts in s[lib]:
                check(len(pts) == len(data[lib]),
                      '%s %s: %d points, %d sizes' % (path, lib, len(pts), len(data[lib])))
        # left panel: bandwidth; right: time per operation (bytes / GB/s / 1e3 us)
        check_panel(path + ' bandwidth', [(s[lib][0], data[lib]) for lib in s])
        check_panel(path + ' time',
                    [(s[lib][1], [(b, b / (v * 1e3)) for b, v in data[lib]]) for lib in s])
        check(all(a[1] < b[1] for a, b in zip(s['symm'][0], s['NVSHMEM'][0])),
              '%s: symm (higher bandwidth) must be drawn above NVSHMEM' % path)
        check(all(a[1] > b[1] for a, b in zip(s['symm'][1], s['NVSHMEM'][1])),
              '%s: symm (less time) must be drawn below NVSHMEM' % path)
        t = texts(path)
        check(any('symm' in x and 'NVSHMEM' in x for x in t) and 'symm' in t and 'NVSHMEM' in t
              and '1 MiB' in t and any('2 x test GPU' in x for x in t),
              '%s: title, legend, size labels or caption missing: %r' % (path, t))
    lat = os.path.join(figs, 'latency-vs-nvshmem.svg')
    if os.path.exists(lat):
        bars = [g.get('id') for g in ET.parse(lat).getroot().iter()
                if g.get('id', '').startswith('bar-')]
        check(sorted(bars) == ['bar-NVSHMEM-0', 'bar-NVSHMEM-1', 'bar-symm-0', 'bar-symm-1'],
              'latency bars: %r' % bars)
        t = texts(lat)
        check('symm 5.2 us' in t and 'NVSHMEM 6.5 us' in t and 'NVSHMEM 3 us' in t
              and '8 B put, host round trip' in t,
              'latency labels: %r' % t)

    # the Python benchmarks' JSON: one figure per collective, one for symm.torch
    out_dir = os.path.join(d, 'py')
    coll = json.load(open(os.path.join(FIX, 'bench_coll_4.json')))
    rc, out, err = run('plot', os.path.join(FIX, 'bench_coll_4.json'),
                       os.path.join(FIX, 'bench_torch_2.json'), '-o', out_dir)
    check(rc == 0, 'plot of the Python benchmarks failed: %s' % err)
    made = sorted(os.listdir(out_dir)) if os.path.isdir(out_dir) else []
    check(made == ['coll-all-gather-4ranks.svg', 'coll-all-reduce-4ranks.svg',
                   'torch-allreduce-2ranks.svg'], 'figures: %r' % made)
    for name, op, want in (('coll-all-reduce-4ranks.svg', 'all_reduce',
                            ('symm', 'nccl', 'symm-mem one-shot')),
                           ('coll-all-gather-4ranks.svg', 'all_gather', ('symm', 'nccl'))):
        path = os.path.join(out_dir, name)
        if name not in made:
            continue
        s = series(path)
        check(sorted(s) == sorted(want) and all(len(v) == 2 for v in s.values()),
              '%s: series %r, expected %r in both panels' % (name, sorted(s), want))
        data = {impl: [(r['bytes'], r[impl]) for r in coll['rows']
                       if r['op'] == op and (r.get(impl) or {}).get('b2b_us')] for impl in want}
        if sorted(s) == sorted(want):
            check_panel(name + ' bus bandwidth',
                        [(s[i][0], [(b, c['busbw_gbs']) for b, c in data[i]]) for i in want])
            check_panel(name + ' time',
                        [(s[i][1], [(b, c['b2b_us']) for b, c in data[i]]) for i in want])
        check(all(w in texts(path) for w in want), '%s: legend %r' % (name, texts(path)))
    path = os.path.join(out_dir, 'torch-allreduce-2ranks.svg')
    if os.path.exists(path):
        s = series(path)
        check(sorted(s) == ['SymmetricMemory one-shot', 'symm.torch heap', 'torch.distributed NCCL']
              and all(len(v) == 2 and all(len(p) == 3 for p in v) for v in s.values()),
              'torch figure: %r' % {k: [len(p) for p in v] for k, v in s.items()})

    # 3. the recorded run draws the figures committed in docs/plots
    rec = os.path.join(d, 'rec')
    rc, out, err = run('plot', RUN + '.symm.json', RUN + '.nvshmem.json', '-o', rec)
    check(rc == 0, 'plot of the recorded run failed: %s' % err)
    made = sorted(os.listdir(rec)) if os.path.isdir(rec) else []
    kept = sorted(os.path.basename(p)
                  for p in glob.glob(os.path.join(ROOT, 'docs', 'plots', '*.svg')))
    check(made == kept and len(made) >= 5, 'figures drawn %r != committed %r' % (made, kept))

    # 4. refusals
    solo = os.path.join(d, 'solo.json')
    json.dump(fs, open(solo, 'w'))
    rc, out, err = run('plot', solo, '-o', os.path.join(d, 'solo'))
    check(rc != 0 and 'no anchor' in err, 'symm alone: exit %d, %r' % (rc, err))
    rc, out, err = run('plot', os.path.join(d, 'missing.json'), '-o', out_dir)
    check(rc != 0 and 'missing.json' in err,
          'a missing file must fail naming it: %d %r' % (rc, err))

if failures:
    print('%d check(s) failed' % len(failures))
    sys.exit(1)
print('plots: convert reproduces the recorded JSON; every figure kind drawn where its data says')
