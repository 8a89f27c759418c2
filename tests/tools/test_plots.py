#!/usr/bin/env python3
"""scripts/plot-bench.py reproduces the committed figures from recorded data.

Usage: test_plots.py SOURCE_ROOT

1. convert: the recorded summary table gives exactly the committed JSON.
2. plot: the committed JSON gives exactly the committed SVGs in docs/plots
   (the figures are what the command draws, not hand-edited), each a valid
   SVG with a symm and an anchor series.
3. a JSON-only run (the benchmarks' own $BENCH_JSON form) plots too, and
   input without an anchor is refused with a message.
"""
import filecmp
import glob
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

ROOT = sys.argv[1]
SCRIPT = os.path.join(ROOT, 'scripts', 'plot-bench.py')
RUN = os.path.join(ROOT, 'docs', 'gpu-runs', '2026-11-21-1418-summary')
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print('FAIL:', what)


def run(*args):
    p = subprocess.run([sys.executable, SCRIPT] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


with tempfile.TemporaryDirectory() as d:
    rc, out, err = run('convert', RUN + '.md', '-o', d)
    check(rc == 0, 'convert failed: %s' % err)
    for lib in ('symm', 'nvshmem'):
        fresh, kept = os.path.join(d, '2026-11-21-1418-summary.%s.json' % lib), '%s.%s.json' % (RUN, lib)
        check(os.path.exists(fresh) and filecmp.cmp(fresh, kept, shallow=False),
              'convert output for %s differs from the committed %s' % (lib, kept))
    sym = json.load(open(RUN + '.symm.json'))
    put1m = [r for r in sym['results'] if r['key'] == 'put_bw_1MiB']
    check(put1m and put1m[0]['size_bytes'] == 1048576 and put1m[0]['median'] == 237.2 and
          put1m[0]['unit'] == 'GB/s', 'put_bw_1MiB in the JSON: %r' % put1m)

    figs = os.path.join(d, 'plots')
    rc, out, err = run('plot', RUN + '.symm.json', RUN + '.nvshmem.json', '-o', figs)
    check(rc == 0, 'plot failed: %s' % err)
    made = sorted(os.listdir(figs)) if os.path.isdir(figs) else []
    kept = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, 'docs', 'plots', '*.svg')))
    check(made == kept and len(made) >= 5, 'figures drawn %r != committed %r' % (made, kept))
    for name in made:
        path = os.path.join(figs, name)
        check(filecmp.cmp(path, os.path.join(ROOT, 'docs', 'plots', name), shallow=False),
              'docs/plots/%s differs from what plot-bench.py draws' % name)
        root = ET.parse(path).getroot()
        check(root.tag.endswith('svg'), '%s is not SVG' % name)
        texts = ' '.join(t.text or '' for t in root.iter() if t.tag.endswith('text'))
        check('symm' in texts and 'NVSHMEM' in texts, '%s lacks a series label' % name)
        if name != 'latency-vs-nvshmem.svg':
            lines = [e for e in root.iter() if e.tag.endswith('polyline')]
            check(len(lines) == 4, '%s: %d series lines, expected 4 (2 panels x 2)' % (name, len(lines)))

    # The benchmarks' own JSON (no "source"), and a refusal without an anchor.
    solo = os.path.join(d, 'solo.json')
    json.dump({'library': 'symm', 'machine': '1 x test', 'date': 'now', 'results': sym['results']},
              open(solo, 'w'))
    rc, out, err = run('plot', solo, '-o', os.path.join(d, 'solo'))
    check(rc != 0 and 'no anchor' in err, 'symm alone: exit %d, %r' % (rc, err))

if failures:
    print('%d check(s) failed' % len(failures))
    sys.exit(1)
print('plots reproduce from the recorded data')
