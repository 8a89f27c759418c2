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

# The Python benchmarks' JSON (tests/perf/bench_coll.py, bench_torch.py): one figure per
# collective with every implementation, and the per-call figure of symm.torch.
with tempfile.TemporaryDirectory() as d:
    rows = []
    for op in ('all_reduce', 'all_gather'):
        for b in (8, 1024, 1 << 20):
            r = {'op': op, 'bytes': b}
            for k, impl in enumerate(('symm', 'nccl', 'symm-mem one-shot')):
                if impl.startswith('symm-mem') and op != 'all_reduce':
                    continue
                us = 5.0 + k + b / 1e5
                r[impl] = {'b2b_us': us, 'graph_us': us, 'busbw_gbs': b / us / 1e3, 'error': None}
            rows.append(r)
    rows.append({'op': 'all_gather', 'bytes': 4, 'nccl': {'b2b_us': None, 'error': 'wrong blocks'}})
    coll = os.path.join(d, 'bench_coll_4.json')
    json.dump({'machine': 'test GPU', 'gpus': 4, 'ranks': 4, 'shared_gpu': False, 'torch': 'x',
               'rows': rows, 'notes': []}, open(coll, 'w'))
    tor = os.path.join(d, 'bench_torch_2.json')
    trows = {name: {str(b): {'host_us': 6.0 + k + b / 1e4, 'gpu_us': 5.0 + k, 'graph_us': None}
                    for b in (8, 256, 65536)}
             for k, name in enumerate(('symm.torch heap', 'torch.distributed NCCL',
                                       'SymmetricMemory one-shot'))}
    json.dump({'machine': 'test GPU', 'gpus': 2, 'ranks': 2, 'shared_gpu': False, 'torch': 'x',
               'rows': trows, 'c_api_gpu_us': {}}, open(tor, 'w'))
    out_dir = os.path.join(d, 'py')
    rc, out, err = run('plot', coll, tor, '-o', out_dir)
    check(rc == 0, 'plot of the Python benchmarks failed: %s' % err)
    made = sorted(os.listdir(out_dir)) if os.path.isdir(out_dir) else []
    check(made == ['coll-all-gather-4ranks.svg', 'coll-all-reduce-4ranks.svg',
                   'torch-allreduce-2ranks.svg'], 'figures: %r' % made)
    for name, want in (('coll-all-reduce-4ranks.svg', ('symm', 'nccl', 'symm-mem one-shot')),
                       ('coll-all-gather-4ranks.svg', ('symm', 'nccl')),
                       ('torch-allreduce-2ranks.svg', ('symm.torch heap', 'torch.distributed NCCL',
                                                       'SymmetricMemory one-shot'))):
        if name not in made:
            continue
        root = ET.parse(os.path.join(out_dir, name)).getroot()
        texts = [t.text or '' for t in root.iter() if t.tag.endswith('text')]
        check(all(w in texts for w in want), '%s: series labels %r' % (name, texts))
        lines = [e for e in root.iter() if e.tag.endswith('polyline')]
        check(len(lines) == 2 * len(want), '%s: %d lines, expected %d' % (name, len(lines), 2 * len(want)))
    rc, out, err = run('plot', os.path.join(d, 'missing.json'), '-o', out_dir)
    check(rc != 0, 'a missing file must fail')

if failures:
    print('%d check(s) failed' % len(failures))
    sys.exit(1)
print('plots reproduce from the recorded data')
