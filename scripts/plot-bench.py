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

Figures are drawn with matplotlib (PyPI: python3 -m pip install matplotlib, or
the package's [plot] extra; bash scripts/deps.sh --all installs it); convert
needs only the standard library. The SVGs keep their text as text and name
each series' line (<g id="series-NAME">), so tests/tools/test_plots.py reads
them back; a fixed hash salt and no date make a rerun give the same file.
Redraw the committed figures with:

  python3 scripts/plot-bench.py plot docs/gpu-runs/2026-11-21-1418-summary.*.json -o docs/plots
"""
import argparse
import json
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
SERIES_COLORS = {'symm': '#1f6fb4', 'nccl': '#d9541e', 'symm-mem one-shot': '#3a9a3a',
                 'symm-mem two-shot': '#8a4fb8', 'symm.torch heap': '#1f6fb4',
                 'symm.torch staged': '#6fa8dc', 'ctypes floor': '#999999',
                 'torch.distributed NCCL': '#d9541e', 'SymmetricMemory one-shot': '#3a9a3a'}


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


# --------------------------------------------------------------- figures ---

def pyplot():
    """matplotlib's pyplot with a file-only backend, or an exit that says how
    to install it."""
    try:
        import matplotlib
    except ImportError:
        sys.exit('plot-bench: matplotlib is not installed: python3 -m pip install matplotlib '
                 '(or bash scripts/deps.sh --all, or pip install "symm[plot]")')
    matplotlib.use('Agg')
    matplotlib.rcParams.update({
        'svg.fonttype': 'none',       # text stays text (searchable, smaller)
        'svg.hashsalt': 'symm-plot',  # stable ids: a rerun writes the same file
        'font.size': 9,
        'axes.titlesize': 10,
    })
    import matplotlib.pyplot as plt
    return plt


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
    return '%.3g' % v


def save(fig, path):
    fig.savefig(path, format='svg', metadata={'Date': None})
    import matplotlib.pyplot as plt
    plt.close(fig)


def log_panel(ax, series, ylabel, yunit):
    """Log-log panel: series [(name, color, dashed, [(bytes, y)])]; each line
    gets the gid series-<name> (its <g id> in the SVG)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogFormatter, NullLocator
    sizes = sorted({x for _, _, _, pts in series for x, _ in pts})
    for name, color, dashed, pts in series:
        pts = sorted(pts)
        line, = ax.plot([x for x, _ in pts], [y for _, y in pts], color=color, marker='o',
                        markersize=3.5, linewidth=1.8, linestyle='--' if dashed else '-',
                        label=name)
        line.set_gid('series-' + name)
    ax.set_xscale('log', base=2)
    ax.set_yscale('log')
    # a size label on every data size, thinned to about 8 so they do not collide
    step = max(1, (len(sizes) + 7) // 8)
    ax.xaxis.set_major_locator(FixedLocator(sizes[::step]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_size(int(round(v)))))
    ax.tick_params(axis='x', labelrotation=30)
    # plain numbers (30, not 3x10^1); minor ticks labelled only on short ranges
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_num(v)))
    ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False))
    ax.set_xlabel('message size')
    ax.set_ylabel('%s (%s, log scale)' % (ylabel, yunit))
    ax.grid(True, which='major', color='#dddddd', linewidth=0.6)


def sized_figure(plt, test, runs, anchor, color):
    """runs: {lib: {size: GB/s}}; two panels: bandwidth, time per operation."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.9))
    fig.suptitle('%s: symm vs %s' % (TITLES.get(test, test), anchor), fontweight='bold',
                 x=0.02, ha='left')
    fig.text(0.02, 0.9, runs['_caption'], fontsize=7.5, color='#555555')
    libs = [('symm', COLORS['symm'], False), (anchor, color, True)]
    bw = [(n, c, d, list(runs[n].items())) for n, c, d in libs]
    # time per operation in us = bytes / (GB/s * 1e3)
    lat = [(n, c, d, [(s, s / (v * 1e3)) for s, v in runs[n].items()]) for n, c, d in libs]
    log_panel(left, bw, 'bandwidth', 'GB/s')
    log_panel(right, lat, 'time per operation', 'us')
    left.legend(loc='upper left', frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    return fig


def latency_figure(plt, values, anchor, color, caption):
    """values: [(label, symm_us, anchor_us)] as grouped horizontal bars."""
    height = 1.3 + 0.75 * len(values)
    fig, ax = plt.subplots(figsize=(9, height))
    fig.suptitle('Latencies: symm vs %s (lower is better)' % anchor, fontweight='bold',
                 x=0.02, ha='left')
    fig.text(0.02, 1 - 0.5 / height, caption, fontsize=7.5, color='#555555')
    h = 0.38
    vmax = max(max(s, a) for _, s, a in values)
    for j, (name, col) in enumerate((('symm', COLORS['symm']), (anchor, color))):
        ys = [i + (j - 0.5) * h for i in range(len(values))]
        vs = [v[1 + j] for v in values]
        bars = ax.barh(ys, vs, height=h * 0.95, color=col, label=name)
        for i, bar in enumerate(bars.patches):  # <g id="bar-NAME-i"> in the SVG
            bar.set_gid('bar-%s-%d' % (name, i))
        for y, v in zip(ys, vs):
            ax.text(v + vmax * 0.01, y, '%s %s us' % (name, fmt_num(v)), va='center',
                    fontsize=8)
    ax.set_yticks(range(len(values)))
    ax.set_yticklabels([v[0] for v in values])
    ax.invert_yaxis()
    ax.set_xlim(0, vmax * 1.35)
    ax.set_xlabel('us')
    for side in ('top', 'right'):
        ax.spines[side].set_visible(False)
    fig.tight_layout(rect=(0.01, 0, 1, 1 - 0.6 / height))
    return fig


def multi_figure(plt, title, caption, left, right):
    """Two log-log panels of several series: left/right = (series, ylabel, yunit),
    series [(name, dashed, [(bytes, y)])]; empty series are left out. The
    legend goes under the panels: several series would hide the data."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.6))
    fig.suptitle(title, fontweight='bold', x=0.02, ha='left')
    fig.text(0.02, 0.905, caption, fontsize=7.5, color='#555555')
    names = []
    for (series, ylabel, yunit), ax in zip((left, right), axes):
        ser = [(n, SERIES_COLORS.get(n, '#000000'), d, pts) for n, d, pts in series if pts]
        if ser:
            log_panel(ax, ser, ylabel, yunit)
        else:
            ax.set_axis_off()
        names += [n for n, _, _, _ in ser if n not in names]
    handles = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    fig.legend([handles[n] for n in names], names, loc='lower left', ncol=min(3, len(names)),
               frameon=False, bbox_to_anchor=(0.02, 0.0))
    fig.tight_layout(rect=(0, 0.06 + 0.035 * ((len(names) + 2) // 3), 1, 0.89))
    return fig


def plot_coll(plt, doc, out_dir):
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
        save(multi_figure(plt, '%s: symm vs NCCL vs SymmetricMemory' % op.replace('_', '-'),
                          caption, (bw, 'bus bandwidth', 'GB/s'), (t, 'time per call', 'us')),
             os.path.join(out_dir, name))
        written.append(name)
    return written


def plot_torch(plt, doc, out_dir):
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
    save(multi_figure(plt, 'all_reduce per Python call: symm.torch vs torch.distributed vs '
                      'SymmetricMemory', caption, (host, 'host time per call', 'us'),
                      (gpu, 'GPU time per call (stream)', 'us')),
         os.path.join(out_dir, name))
    return [name]


def plot(paths, out_dir):
    docs = []
    for p in paths:
        try:
            docs.append(json.load(open(p)))
        except (OSError, ValueError) as e:
            sys.exit('plot-bench: %s: %s' % (p, e))
    plt = pyplot()
    os.makedirs(out_dir, exist_ok=True)
    written = []
    # the Python benchmarks' JSON: no "library" key
    for d in docs:
        if 'library' not in d and isinstance(d.get('rows'), list):
            written += plot_coll(plt, d, out_dir)
        elif 'library' not in d and isinstance(d.get('rows'), dict):
            written += plot_torch(plt, d, out_dir)
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
    anchors = sorted(lib for lib in by_lib if lib != 'symm')
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
            save(sized_figure(plt, test, runs, anchor, color), os.path.join(out_dir, name))
            written.append(name)
        vals = [(LATENCIES[k2], s_lat[k2], a_lat[k2]) for k2 in LATENCIES
                if k2 in s_lat and k2 in a_lat]
        if vals:
            name = 'latency-vs-%s.svg' % anchor.lower()
            cap = '%s, %s; medians recorded %s' % (machine, symm.get('direction', ''),
                                                   symm.get('date', '?'))
            save(latency_figure(plt, vals, anchor, color, cap), os.path.join(out_dir, name))
            written.append(name)
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    c = sub.add_parser('convert', help='recorded summary table -> JSON')
    c.add_argument('summary')
    c.add_argument('-o', '--out', default=None)
    p = sub.add_parser('plot', help='JSON results -> SVG figures (matplotlib)')
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
