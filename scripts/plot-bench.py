#!/usr/bin/env python3
"""Benchmark figures: symm against each anchor, drawn from recorded results.

  plot-bench.py convert SUMMARY.md [-o DIR]
      Turn the side-by-side table of a recorded GPU-suite summary
      (docs/gpu-runs/*.md, written by scripts/gpu-suite.sh) into the JSON the
      benchmarks write themselves ($BENCH_JSON): DIR/<stem>.<library>.json,
      one file per library (default DIR: the summary's folder).

  plot-bench.py plot RESULTS.json... [-o DIR]
      One SVG per figure into DIR (default docs/plots): for every sized test
      that symm and an anchor both measured, bandwidth and time per operation
      against size side by side (<test>-vs-<anchor>.svg), plus the fixed-size
      latencies as bars (latency-vs-<anchor>.svg). Also takes the JSON of
      tests/perf/bench_coll.py (symm vs NCCL vs SymmetricMemory: bus bandwidth
      and time per call of each collective, coll-<op>-<N>ranks.svg) and of
      tests/perf/bench_torch.py (host and GPU time per symm.torch.all_reduce
      call beside NCCL and SymmetricMemory, torch-allreduce-<N>ranks.svg).

Standard library only (the SVG is written directly), deterministic output, so
the committed figures can be checked against a fresh run (tests/tools).
Redraw the committed figures with:

  python3 scripts/plot-bench.py plot docs/gpu-runs/2026-11-21-1418-summary.*.json -o docs/plots
"""
import argparse
import json
import math
import os
import re
import sys

UNITS = {'B': 1, 'KiB': 1024, 'MiB': 1024 ** 2, 'GiB': 1024 ** 3}
TITLES = {
    'put_bw': 'symm_put (host-initiated, GPU to peer GPU)',
    'get_bw': 'symm_get (host-initiated, peer GPU to GPU)',
    'devput_bw': 'device put (kernel-initiated, best grid)',
    'reduce_f32': 'sum-reduce of float32 over 2 PEs',
}
LATENCIES = {
    'put_lat_8B': '8 B put, host round trip',
    'pingpong_half_rtt': 'device ping-pong, half round trip',
    'barrier_us': 'barrier (stream)',
}
COLORS = {'symm': '#1f6fb4'}
ANCHOR_COLORS = ['#d9541e', '#3a9a3a', '#8a4fb8']


def split_key(key):
    """'put_bw_1MiB' -> ('put_bw', 1048576); no size -> (key, None)."""
    m = re.match(r'^(.*)_(\d+)(B|KiB|MiB|GiB)$', key)
    if not m:
        return key, None
    return m.group(1), int(m.group(2)) * UNITS[m.group(3)]


def metric(unit):
    return {'GB/s': 'bandwidth', 'us': 'latency'}.get(unit, 'time')


# ---------------------------------------------------------------- convert ---

def parse_value(cell):
    cell = cell.strip()
    if cell in ('', '-'):
        return None
    m = re.match(r'^([0-9.eE+-]+) (GB/s|us|s)$', cell)
    if not m:
        raise ValueError('cannot read value %r' % cell)
    return float(m.group(1)), m.group(2)


def convert(md_path, out_dir):
    text = open(md_path).read()
    machine = re.search(r'^- machine: (.*)$', text, re.M)
    date = re.search(r'^# GPU suite: (.*)$', text, re.M)
    rows = {}
    anchors = []
    in_table = False
    for line in text.splitlines():
        if line.startswith('| measurement |'):
            cols = [c.strip() for c in line.strip('|').split('|')]
            anchors = cols[2:cols.index('factor (>1: symm better)')] if 'factor (>1: symm better)' in cols else cols[2:3]
            libs = ['symm'] + anchors
            rows = {lib: [] for lib in libs}
            in_table = True
            continue
        if not in_table:
            continue
        if not line.startswith('|'):
            in_table = False
            continue
        cells = [c.strip() for c in line.strip('|').split('|')]
        if cells[0].startswith('---'):
            continue
        key = cells[0]
        note = cells[-1] if len(cells) > 2 + len(anchors) + 1 else ''
        for i, lib in enumerate(['symm'] + anchors):
            v = parse_value(cells[1 + i])
            if v is None:
                continue
            test, size = split_key(key)
            rows[lib].append({'key': key, 'test': test, 'size_bytes': size, 'median': v[0],
                              'unit': v[1], 'metric': metric(v[1]),
                              'note': note if lib == 'symm' else ''})
    if not rows:
        sys.exit('%s: no "| measurement | symm | ..." table found' % md_path)
    stem = os.path.splitext(os.path.basename(md_path))[0]
    written = []
    for lib, results in rows.items():
        if not results:
            continue
        path = os.path.join(out_dir, '%s.%s.json' % (stem, lib.lower()))
        doc = {'library': lib, 'machine': machine.group(1) if machine else '?',
               'date': date.group(1) if date else '?', 'direction': 'PE 0 -> PE 1',
               'source': os.path.basename(md_path), 'results': results}
        with open(path, 'w') as f:
            json.dump(doc, f, indent=1)
            f.write('\n')
        written.append(path)
    return written


# ------------------------------------------------------------------- SVG ----

def esc(s):
    return s.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')


def fmt_size(b):
    for u, m in (('GiB', 1024 ** 3), ('MiB', 1024 ** 2), ('KiB', 1024)):
        if b >= m and b % m == 0:
            return '%d %s' % (b // m, u)
    return '%d B' % b


def fmt_num(v):
    if v >= 1e5:
        return '%.3g' % v
    if v >= 100:
        return '%.0f' % v
    if v >= 1:
        return ('%.1f' % v).rstrip('0').rstrip('.')
    return ('%.3g' % v)


def decades(lo, hi):
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    if a == b:
        b += 1
    return a, b


def panel(out, x0, y0, w, h, series, ylabel, yunit):
    """Log-log panel at (x0, y0) of size w x h; series: [(name, color, dash, [(x, y)])]."""
    xs = [x for _, _, _, pts in series for x, _ in pts]
    ys = [y for _, _, _, pts in series for _, y in pts]
    lx0, lx1 = math.log2(min(xs)), math.log2(max(xs))
    if lx0 == lx1:
        lx1 += 1
    d0, d1 = decades(min(ys), max(ys))

    def px(x):
        return x0 + (math.log2(x) - lx0) / (lx1 - lx0) * w

    def py(y):
        return y0 + h - (math.log10(y) - d0) / (d1 - d0) * h

    out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#444"/>' % (x0, y0, w, h))
    for d in range(d0, d1 + 1):
        y = py(10 ** d)
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>' % (x0, y, x0 + w, y))
        out.append('<text x="%.1f" y="%.1f" text-anchor="end" font-size="11">%s</text>' % (x0 - 5, y + 4, fmt_num(10 ** d)))
    sizes = sorted(set(xs))
    last = -1e9
    for s in sizes:  # a label where it does not run into the previous one
        x = px(s)
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>' % (x, y0, x, y0 + h))
        if x - last >= 44:
            out.append('<text x="%.1f" y="%.1f" text-anchor="middle" font-size="11">%s</text>' % (x, y0 + h + 15, fmt_size(s)))
            last = x
    out.append('<text x="%.1f" y="%.1f" text-anchor="middle" font-size="12">message size</text>' % (x0 + w / 2, y0 + h + 32))
    out.append('<text x="%.1f" y="%.1f" text-anchor="middle" font-size="12" transform="rotate(-90 %.1f %.1f)">%s (%s, log scale)</text>'
               % (x0 - 50, y0 + h / 2, x0 - 50, y0 + h / 2, esc(ylabel), esc(yunit)))
    for name, color, dash, pts in series:
        pts = sorted(pts)
        path = ' '.join('%.1f,%.1f' % (px(x), py(y)) for x, y in pts)
        out.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>'
                   % (path, color, ' stroke-dasharray="6,4"' if dash else ''))
        for x, y in pts:
            out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s %s: %s %s</title></circle>'
                       % (px(x), py(y), color, esc(name), fmt_size(x), fmt_num(y), esc(yunit)))


def legend(out, x, y, items):
    for i, (name, color, dash) in enumerate(items):
        yy = y + 16 * i
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>'
                   % (x, yy, x + 24, yy, color, ' stroke-dasharray="6,4"' if dash else ''))
        out.append('<text x="%.1f" y="%.1f" font-size="12">%s</text>' % (x + 30, yy + 4, esc(name)))


def svg(width, height, body):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
            'font-family="DejaVu Sans, Helvetica, Arial, sans-serif">\n'
            '<rect width="100%%" height="100%%" fill="white"/>\n%s\n</svg>\n'
            % (width, height, width, height, '\n'.join(body)))


def sized_figure(test, runs, anchor, color):
    """runs: {lib: {size: GB/s}}; two panels: bandwidth, time per operation."""
    body = []
    title = TITLES.get(test, test)
    body.append('<text x="20" y="24" font-size="15" font-weight="bold">%s: symm vs %s</text>'
                % (esc(title), esc(anchor)))
    body.append('<text x="20" y="42" font-size="11" fill="#555">%s</text>' % esc(runs['_caption']))
    libs = [('symm', COLORS['symm'], False), (anchor, color, True)]
    bw = [(n, c, d, [(s, v) for s, v in runs[n].items()]) for n, c, d in libs]
    # time per operation in us = bytes / (GB/s * 1e3)
    lat = [(n, c, d, [(s, s / (v * 1e3)) for s, v in runs[n].items()]) for n, c, d in libs]
    panel(body, 95, 60, 320, 250, bw, 'bandwidth', 'GB/s')
    panel(body, 540, 60, 320, 250, lat, 'time per operation', 'us')
    legend(body, 105, 80, [(n, c, d) for n, c, d in libs])
    return svg(900, 360, body)


def latency_figure(values, anchor, color, caption):
    """values: [(label, symm_us, anchor_us)] as grouped horizontal bars."""
    body = ['<text x="20" y="24" font-size="15" font-weight="bold">Latencies: symm vs %s (lower is better)</text>' % esc(anchor),
            '<text x="20" y="42" font-size="11" fill="#555">%s</text>' % esc(caption)]
    vmax = max(max(s, a) for _, s, a in values)
    x0, w = 260, 480
    for i, (label, s, a) in enumerate(values):
        y = 62 + i * 58
        body.append('<text x="%d" y="%d" text-anchor="end" font-size="12">%s</text>' % (x0 - 8, y + 22, esc(label)))
        for j, (name, v, col) in enumerate((('symm', s, COLORS['symm']), (anchor, a, color))):
            bw = v / vmax * w
            body.append('<rect x="%d" y="%d" width="%.1f" height="20" fill="%s"><title>%s: %s us</title></rect>'
                        % (x0, y + j * 22, bw, col, esc(name), fmt_num(v)))
            body.append('<text x="%.1f" y="%d" font-size="11">%s %s us</text>' % (x0 + bw + 5, y + j * 22 + 14, esc(name), fmt_num(v)))
    return svg(880, 80 + 58 * len(values), body)


SERIES_COLORS = {'symm': '#1f6fb4', 'nccl': '#d9541e', 'symm-mem one-shot': '#3a9a3a',
                 'symm-mem two-shot': '#8a4fb8', 'symm.torch heap': '#1f6fb4',
                 'symm.torch staged': '#6fa8dc', 'ctypes floor': '#999999',
                 'torch.distributed NCCL': '#d9541e', 'SymmetricMemory one-shot': '#3a9a3a'}


def multi_figure(title, caption, left, right):
    """Two log-log panels of several series: left/right = (series, ylabel, yunit),
    series [(name, dashed, [(bytes, y)])]; empty series are left out."""
    body = ['<text x="20" y="24" font-size="15" font-weight="bold">%s</text>' % esc(title),
            '<text x="20" y="42" font-size="11" fill="#555">%s</text>' % esc(caption)]
    names = []
    for (series, ylabel, yunit), x0 in ((left, 95), (right, 540)):
        ser = [(n, SERIES_COLORS.get(n, '#000'), d, pts) for n, d, pts in series if pts]
        if ser:
            panel(body, x0, 60, 320, 250, ser, ylabel, yunit)
            names += [(n, c, d) for n, c, d, _ in ser if (n, c, d) not in names]
    legend(body, 105, 358, names)  # under the panels: several series would hide the data
    return svg(900, 370 + 16 * len(names), body)


def plot_coll(doc, out_dir):
    """bench_coll.py JSON: one figure per op (bus bandwidth, time per call)."""
    written = []
    impls = ['symm', 'nccl', 'symm-mem one-shot', 'symm-mem two-shot']
    caption = '%d ranks on %d x %s, torch %s; back-to-back calls on one stream (CUDA events)' % (
        doc.get('ranks', 0), doc.get('gpus', 0), doc.get('machine', '?'), doc.get('torch', '?'))
    if doc.get('shared_gpu'):
        caption += '; ranks share a GPU: not performance'
    ops = []
    for r in doc.get('rows', []):
        if r['op'] not in ops:
            ops.append(r['op'])
    for op in ops:
        bw, t = [], []
        for impl in impls:
            pts_bw, pts_t = [], []
            for r in doc['rows']:
                c = r.get(impl) or {}
                if r['op'] == op and c.get('b2b_us') and c.get('busbw_gbs'):
                    pts_t.append((r['bytes'], c['b2b_us']))
                    pts_bw.append((r['bytes'], c['busbw_gbs']))
            bw.append((impl, impl != 'symm', pts_bw))
            t.append((impl, impl != 'symm', pts_t))
        if sum(1 for _, _, p in t if len(p) >= 2) < 1:
            continue
        name = 'coll-%s-%dranks.svg' % (op.replace('_', '-'), doc.get('ranks', 0))
        with open(os.path.join(out_dir, name), 'w') as f:
            f.write(multi_figure('%s: symm vs NCCL vs SymmetricMemory' % op.replace('_', '-'),
                                 caption, (bw, 'bus bandwidth', 'GB/s'),
                                 (t, 'time per call', 'us')))
        written.append(name)
    return written


def plot_torch(doc, out_dir):
    """bench_torch.py JSON: host and GPU time per all_reduce call."""
    rows = doc.get('rows', {})
    host, gpu = [], []
    for name, by_size in rows.items():
        pts_h = [(int(sz), v['host_us']) for sz, v in by_size.items() if v.get('host_us')]
        pts_g = [(int(sz), v['gpu_us']) for sz, v in by_size.items() if v.get('gpu_us')]
        dashed = not name.startswith('symm.torch')
        host.append((name, dashed, pts_h))
        gpu.append((name, dashed, pts_g))
    if not any(len(p) >= 2 for _, _, p in host):
        return []
    caption = '%d ranks on %d x %s, torch %s; medians' % (
        doc.get('ranks', 0), doc.get('gpus', 0), doc.get('machine', '?'), doc.get('torch', '?'))
    name = 'torch-allreduce-%dranks.svg' % doc.get('ranks', 0)
    with open(os.path.join(out_dir, name), 'w') as f:
        f.write(multi_figure('all_reduce per Python call: symm.torch vs torch.distributed vs '
                             'SymmetricMemory', caption,
                             (host, 'host time per call', 'us'),
                             (gpu, 'GPU time per call (stream)', 'us')))
    return [name]


def plot(paths, out_dir):
    docs = [json.load(open(p)) for p in paths]
    os.makedirs(out_dir, exist_ok=True)
    written = []
    # the Python benchmarks' JSON: no "library" key
    for d in docs:
        if 'library' not in d and isinstance(d.get('rows'), list):
            written += plot_coll(d, out_dir)
        elif 'library' not in d and isinstance(d.get('rows'), dict):
            written += plot_torch(d, out_dir)
    docs = [d for d in docs if 'library' in d]
    if not docs:
        if not written:
            sys.exit('plot-bench: nothing to draw in %s' % ', '.join(paths))
        return written
    by_lib = {}
    for d in docs:
        by_lib.setdefault(d['library'], []).append(d)
    if 'symm' not in by_lib:
        sys.exit('plot-bench: no symm results among %s' % ', '.join(paths))
    symm = by_lib['symm'][0]
    anchors = sorted(l for l in by_lib if l != 'symm')
    if not anchors:
        sys.exit('plot-bench: no anchor (NVSHMEM, ...) results among %s' % ', '.join(paths))

    def sized(doc):
        t = {}
        for r in doc['results']:
            if r['size_bytes'] is not None and r['unit'] == 'GB/s' and r['median'] > 0:
                t.setdefault(r['test'], {})[int(r['size_bytes'])] = r['median']
        return t

    def scalar(doc):
        return {r['key']: r['median'] for r in doc['results'] if r['unit'] == 'us'}

    s_sized, s_lat = sized(symm), scalar(symm)
    for k, anchor in enumerate(anchors):
        adoc = by_lib[anchor][0]
        color = ANCHOR_COLORS[k % len(ANCHOR_COLORS)]
        a_sized, a_lat = sized(adoc), scalar(adoc)
        machine = symm.get('machine', '?').split(';')[0]
        caption = '%s, %s; medians recorded %s (%s)' % (
            machine, symm.get('direction', ''), symm.get('date', '?'),
            symm.get('source', 'benchmark JSON'))
        for test in sorted(s_sized):
            common = sorted(set(s_sized[test]) & set(a_sized.get(test, {})))
            if len(common) < 2:
                continue
            runs = {'symm': {s: s_sized[test][s] for s in common},
                    anchor: {s: a_sized[test][s] for s in common}, '_caption': caption}
            name = '%s-vs-%s.svg' % (test.replace('_', '-'), anchor.lower())
            with open(os.path.join(out_dir, name), 'w') as f:
                f.write(sized_figure(test, runs, anchor, color))
            written.append(name)
        vals = [(LATENCIES[k2], s_lat[k2], a_lat[k2]) for k2 in LATENCIES if k2 in s_lat and k2 in a_lat]
        if vals:
            name = 'latency-vs-%s.svg' % anchor.lower()
            cap = '%s, %s; medians recorded %s' % (machine, symm.get('direction', ''), symm.get('date', '?'))
            with open(os.path.join(out_dir, name), 'w') as f:
                f.write(latency_figure(vals, anchor, color, cap))
            written.append(name)
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    c = sub.add_parser('convert', help='recorded summary table -> JSON')
    c.add_argument('summary')
    c.add_argument('-o', '--out', default=None)
    p = sub.add_parser('plot', help='JSON results -> SVG figures')
    p.add_argument('results', nargs='+')
    p.add_argument('-o', '--out', default='docs/plots')
    a = ap.parse_args()
    if a.cmd == 'convert':
        for path in convert(a.summary, a.out or os.path.dirname(a.summary) or '.'):
            print(path)
    else:
        for name in plot(a.results, a.out):
            print(os.path.join(a.out, name))
    return 0


if __name__ == '__main__':
    sys.exit(main())
