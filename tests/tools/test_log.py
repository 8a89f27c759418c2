#!/usr/bin/env python3
"""The runtime's diagnostic log (SYMM_DEBUG*), seen from a 4-PE job.

Usage: test_log.py SYMMRUN LOG_PROG

Runs tests/tools/log_prog.c under symmrun with several SYMM_DEBUG settings
and checks what each PE wrote: nothing by default, one INFO block per PE at
init, TRACE lines naming each collective's algorithm, long-wait lines naming
what they wait for, the subsystem filter, per-PE files from SYMM_DEBUG_FILE,
and a clean warning (not a failure) for bad values.
"""
import os
import re
import subprocess
import sys
import tempfile

SYMMRUN, PROG = sys.argv[1], sys.argv[2]
N = 4
LINE = re.compile(r'^\[symm\] (\S+):(\d+) PE (\d+|-) tid (\d+) (\d+\.\d{6}) (WARN|INFO|TRACE) '
                  r'([a-z]+): (.*)$')
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print('FAIL:', what)


def run(env_extra, n=N, hosts=None):
    env = dict(os.environ)
    for k in ('SYMM_DEBUG', 'SYMM_DEBUG_SUBSYS', 'SYMM_DEBUG_FILE', 'SYMM_TRANSPORT'):
        env.pop(k, None)
    env.update(env_extra)
    extra = ['--hosts', str(hosts)] if hosts else []
    p = subprocess.run([SYMMRUN, '-n', str(n)] + extra + ['--timeout', '60', PROG], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    out, err = p.stdout.decode(errors='replace'), p.stderr.decode(errors='replace')
    label = ' '.join('%s=%s' % kv for kv in env_extra.items()) or '(no SYMM_DEBUG)'
    check(p.returncode == 0, '%s: job exit %d\n%s\n%s' % (label, p.returncode, out, err))
    for pe in range(n):
        check('PE %d of %d: ok' % (pe, n) in out, '%s: PE %d did not finish' % (label, pe))
    return out, err


def log_lines(text):
    return [l for l in text.splitlines() if l.startswith('[symm]')]


def parsed(text):
    rows = []
    for l in log_lines(text):
        m = LINE.match(l)
        check(m is not None, 'malformed log line: %r' % l)
        if m:
            rows.append(m.groups())
    return rows


# 1. Default: warnings only, and this job has none.
out, err = run({})
check(log_lines(out + err) == [], 'default run wrote log lines: %r' % log_lines(err)[:3])

# 2. INFO: one block per PE saying what it chose; long waits name their target.
out, err = run({'SYMM_DEBUG': 'INFO'})
rows = parsed(err)
for pe in range(N):
    mine = [r[7] for r in rows if r[2] == str(pe) and r[6] == 'init' and r[5] == 'INFO']
    text = '\n'.join(mine)
    check(re.search(r'^symm runtime \d+\.\d+\.\d+ \(ABI \d+\.\d+\) at /\S+libsymm_runtime\.so', text, re.M),
          'PE %d: no runtime version/path line' % pe)
    check(re.search(r'loader \d+\.\d+\.\d+ at /\S+libsymm\.so\.1, negotiated ABI \d+\.\d+', text),
          'PE %d: no loader line' % pe)
    check(re.search(r'^backend host \(auto: ', text, re.M), 'PE %d: no backend line' % pe)
    check(re.search(r'^host: no device; the heap is host memory', text, re.M),
          'PE %d: no device line' % pe)
    check(re.search(r'^PE %d of %d on host \S+ \(host id [0-9a-f]{16}\), local PE %d of %d, '
                    r'1 host\(s\) in the job; bootstrap auto, launcher symmrun' % (pe, N, pe, N),
                    text, re.M), 'PE %d: no layout line' % pe)
    check(re.search(r'^heap cap 64 MiB \(env\), chunk 1 MiB \(env\), system area 128 KiB, '
                    r'backed 1 MiB; thread level MULTIPLE; SYMM_TIMEOUT_MS 60000 \(default\), '
                    r'SYMM_PEER_TIMEOUT_MS 100 \(default\)', text, re.M),
          'PE %d: no heap/threads/timeouts line:\n%s' % (pe, text))
    check(re.search(r'^transport: ', text, re.M), 'PE %d: no transport line' % pe)
    pids = {r[1] for r in rows if r[2] == str(pe)}
    check(len(pids) == 1, 'PE %d: lines from %d processes' % (pe, len(pids)))
    check(any(r[2] == str(pe) and r[6] == 'bootstrap' and re.match(
        r'joined a job of %d PE\(s\) as rank %d \(env mode, rendezvous server \S+, served by symmrun\)'
        % (N, pe), r[7]) for r in rows), 'PE %d: no bootstrap line' % pe)
    check(any(r[2] == str(pe) and r[6] == 'heap' and re.match(
        r'heap grew to \d+ bytes backed \(cap 67108864\) for 2097152 bytes at offset \d+', r[7])
        for r in rows), 'PE %d: no heap growth line' % pe)
check(not [r for r in rows if r[5] == 'TRACE'], 'INFO run has TRACE lines')
waits = [r for r in rows if r[6] == 'wait']
check(any(r[2] == '1' and re.match(r'still waiting after \d+\.\d s for all of elements \[0, 1\) of '
                                   r'the buffer at heap offset \d+ to be == 42', r[7])
          for r in waits), 'no long-wait line of PE 1 naming its element wait: %r' % waits)
check(any(r[2] in ('2', '3') and re.match(r'still waiting after \d+\.\d s for the barrier flag at '
                                          r'heap offset \d+ to reach \d+', r[7])
          for r in waits), 'no long-wait line naming a barrier flag: %r' % waits)

# 2b. Across (simulated) hosts: the transport line says which and why.
out, err = run({'SYMM_DEBUG': 'INFO', 'SYMM_DEBUG_SUBSYS': 'transport,init'}, hosts=2)
rows = parsed(err)
for pe in range(N):
    check(any(r[2] == str(pe) and r[6] == 'transport' and re.match(
        r'tcp opened on .* chosen by SYMM_TRANSPORT=auto(; skipped: ibverbs: .*)?$', r[7])
        for r in rows), 'PE %d: no transport line naming the choice: %r' % (pe, [r[7] for r in rows if r[6] == 'transport']))
    check(any(r[2] == str(pe) and r[6] == 'init' and re.match(
        r'PE %d of %d on host \S+ \(host id [0-9a-f]{16}\), local PE %d of 2, 2 host\(s\) in the job'
        % (pe, N, pe % 2), r[7]) for r in rows), 'PE %d: no 2-host layout line' % pe)

# 3. TRACE limited to coll: each collective names its algorithm; init is filtered out.
out, err = run({'SYMM_DEBUG': 'TRACE', 'SYMM_DEBUG_SUBSYS': 'coll'})
rows = parsed(err)
check(rows and all(r[6] == 'coll' for r in rows), 'subsystem filter let through: %r' %
      sorted({r[6] for r in rows}))
for pe in range(N):
    check(any(r[2] == str(pe) and r[5] == 'TRACE' and re.match(
        r'symm_broadcast: team of 4 PEs, 16 elements of 8 bytes: generic: ', r[7]) for r in rows),
        'PE %d: no TRACE line naming the broadcast algorithm' % pe)
# "^" removes a subsystem.
out, err = run({'SYMM_DEBUG': 'INFO', 'SYMM_DEBUG_SUBSYS': '^wait'})
rows = parsed(err)
check(any(r[6] == 'init' for r in rows) and not any(r[6] == 'wait' for r in rows),
      '^wait did not remove the wait lines')

# 4. A bad level: one warning naming the valid ones per process; the job runs.
out, err = run({'SYMM_DEBUG': 'LOUD'})
bad = [l for l in log_lines(err) if 'SYMM_DEBUG="LOUD" is not a level; valid: NONE, WARN, INFO, TRACE' in l]
check(len(bad) == N, 'expected %d warnings for SYMM_DEBUG=LOUD, got %d' % (N, len(bad)))
out, err = run({'SYMM_DEBUG': 'INFO', 'SYMM_DEBUG_SUBSYS': 'init,nosuch'})
check(any('unknown subsystem "nosuch"' in l for l in log_lines(err)), 'no warning for an unknown subsystem')

# 5. NONE: silent.
out, err = run({'SYMM_DEBUG': 'none'})
check(log_lines(out + err) == [], 'SYMM_DEBUG=none wrote log lines')

# 6. Per-PE files.
with tempfile.TemporaryDirectory() as d:
    out, err = run({'SYMM_DEBUG': 'INFO', 'SYMM_DEBUG_FILE': d + '/symm.%h.%p.%r.log'})
    check(log_lines(out + err) == [], 'SYMM_DEBUG_FILE run still wrote to the terminal')
    files = sorted(os.listdir(d))
    check(len(files) == N, 'expected %d log files, got %r' % (N, files))
    for f in files:
        m = re.match(r'symm\.([^.]+)\.(\d+)\.(\d+)\.log$', f)
        check(m is not None, 'file name %r does not follow the pattern' % f)
        if not m:
            continue
        rows = parsed(open(os.path.join(d, f)).read())
        check(rows and all(r[2] == m.group(3) and r[1] == m.group(2) for r in rows),
              '%s holds lines of another PE or process' % f)
        check(any(r[6] == 'init' and r[7].startswith('backend host') for r in rows),
              '%s lacks the init block' % f)

# A bad pattern: one warning per process, then stderr.
out, err = run({'SYMM_DEBUG': 'INFO', 'SYMM_DEBUG_SUBSYS': 'init', 'SYMM_DEBUG_FILE': '/tmp/symm.%q.log'})
check(sum(1 for l in log_lines(err) if 'SYMM_DEBUG_FILE="/tmp/symm.%q.log": bad pattern' in l) == N,
      'no warning per process for a bad SYMM_DEBUG_FILE pattern')

# 7. A file that cannot be opened: one warning per process, then stderr; the job runs.
out, err = run({'SYMM_DEBUG': 'INFO', 'SYMM_DEBUG_FILE': '/nonexistent-dir/symm.%r.log'})
warn = [l for l in log_lines(err) if 'SYMM_DEBUG_FILE: cannot open /nonexistent-dir/symm.' in l]
check(len(warn) == N, 'expected %d open warnings, got %d' % (N, len(warn)))
check(sum(1 for l in log_lines(err) if ' INFO init: backend host' in l) == N,
      'INFO lines did not fall back to stderr')

if failures:
    print('%d check(s) failed' % len(failures))
    sys.exit(1)
print('all log checks passed')
