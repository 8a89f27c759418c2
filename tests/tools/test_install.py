#!/usr/bin/env python3
"""An installed symm, as a user gets it: `meson install --destdir` of this build, then

- find_package(symm) builds examples/ring/ring.c with CMake (symm::symm), and a
  find_package of a later major is refused (the version file);
- the installed symmrun runs it on 2 PEs on 2 simulated hosts over tcp with no
  SYMM_RUNTIME and no SYMM_TRANSPORT_PATH: the loader finds the runtime in its
  own folder and the runtime finds the plugin in <libdir>/symm/ (where it is
  installed, and nowhere else); SYMM_TRANSPORT_PATH still comes first (a broken
  plugin there is the one reported);
- symm.pc and cmake/symm/ sit in the same libdir, the man pages of symmrun and
  symm-info are installed and render with `man -l`, and LICENSE and
  CHANGELOG.md are in share/doc/symm/.

Usage: test_install.py BUILD_ROOT SOURCE_ROOT
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

BUILD, SRC = sys.argv[1:3]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print('FAIL:', what)
    return cond


def run(cmd, env=None, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, **kw)


if not shutil.which('cmake'):
    print('SKIP: cmake is not installed (apt-get install cmake)')
    sys.exit(77)
tmp = tempfile.mkdtemp(prefix='symm-install-')
try:
    dest = os.path.join(tmp, 'dest')
    r = run(['meson', 'install', '-C', BUILD, '--destdir', dest, '--no-rebuild', '--quiet'])
    if not check(r.returncode == 0, f'meson install: exit {r.returncode}\n{r.stdout}{r.stderr}'):
        sys.exit(1)
    configs = glob.glob(os.path.join(dest, '**', 'cmake', 'symm', 'symmConfig.cmake'),
                        recursive=True)
    if not check(len(configs) == 1, f'symmConfig.cmake installed once: {configs}'):
        sys.exit(1)
    cmake_dir = os.path.dirname(configs[0])
    libdir = os.path.dirname(os.path.dirname(cmake_dir))
    check(os.path.isfile(os.path.join(cmake_dir, 'symmConfigVersion.cmake')),
          'symmConfigVersion.cmake beside symmConfig.cmake')
    check(os.path.isfile(os.path.join(libdir, 'pkgconfig', 'symm.pc')),
          f'symm.pc in {libdir}/pkgconfig (beside cmake/symm)')
    symmrun = glob.glob(os.path.join(dest, '**', 'bin', 'symmrun'), recursive=True)
    prefix = os.path.dirname(os.path.dirname(symmrun[0])) if symmrun else None
    check(prefix, 'symmrun installed in bin/')
    plugin = os.path.join(libdir, 'symm', 'libsymm_transport_tcp.so')
    check(os.path.isfile(plugin), f'tcp plugin installed at {plugin}')
    check(not glob.glob(os.path.join(libdir, 'libsymm_transport_*')),
          'no transport plugin directly in libdir')

    # find_package(symm) -> symm::symm -> ring
    env = {k: v for k, v in os.environ.items()
           if not k.startswith('SYMM_') and k != 'LD_LIBRARY_PATH'}
    bdir = os.path.join(tmp, 'consumer')
    cfg = ['cmake', '-S', os.path.join(SRC, 'tests', 'tools', 'cmake_consumer'),
           '-DCMAKE_PREFIX_PATH=' + prefix,
           '-DRING_SOURCE=' + os.path.join(SRC, 'examples', 'ring', 'ring.c')]
    r = run(cfg + ['-B', bdir], env=env)
    check(r.returncode == 0, f'cmake configure: exit {r.returncode}\n{r.stdout}{r.stderr}')
    r = run(['cmake', '--build', bdir], env=env)
    ring = os.path.join(bdir, 'ring')
    check(r.returncode == 0 and os.path.isfile(ring),
          f'cmake --build: exit {r.returncode}\n{r.stdout}{r.stderr}')
    r = run(cfg + ['-B', os.path.join(tmp, 'consumer-2'), '-DSYMM_WANT=2.0'], env=env)
    said = ' '.join((r.stdout + r.stderr).split())  # cmake wraps its messages
    check(r.returncode != 0 and 'compatible with requested version "2.0"' in said
          and 'version: 1.' in said,
          f'find_package(symm 2.0) refused by the version file: exit {r.returncode}')
    r = run(['readelf', '-d', ring])
    check('libsymm.so.1' in r.stdout, 'ring needs libsymm.so.1')

    if os.path.isfile(ring) and prefix:
        env_tp = dict(env, SYMM_TRANSPORT='tcp')
        r = run([symmrun[0], '-n', '2', '--hosts', '2', '--timeout', '60', ring], env=env_tp)
        check(r.returncode == 0 and r.stdout.count(': ok') == 2,
              f'installed symmrun -n 2 --hosts 2 ring over tcp: exit {r.returncode}\n'
              f'{r.stdout}{r.stderr}')
        broken = os.path.join(tmp, 'broken')
        os.mkdir(broken)
        open(os.path.join(broken, 'libsymm_transport_tcp.so'), 'w').close()
        r = run([symmrun[0], '-n', '2', '--hosts', '2', '--timeout', '60', ring],
                env=dict(env_tp, SYMM_TRANSPORT_PATH=broken))
        check(r.returncode != 0 and broken in r.stderr,
              f'SYMM_TRANSPORT_PATH first: exit {r.returncode}, the broken plugin named\n'
              f'{r.stderr[-2000:]}')

    for tool in ('symmrun', 'symm-info'):
        pages = glob.glob(os.path.join(dest, '**', 'man1', tool + '.1'), recursive=True)
        if check(len(pages) == 1, f'{tool}.1 installed in a man1 folder: {pages}'):
            r = run(['man', '-l', pages[0]], env=dict(env, MANPAGER='cat', PAGER='cat'))
            check(r.returncode == 0 and 'NAME' in r.stdout and tool in r.stdout,
                  f'man -l {pages[0]}: exit {r.returncode}')
    for doc in ('LICENSE', 'CHANGELOG.md'):
        got = glob.glob(os.path.join(dest, '**', 'doc', 'symm', doc), recursive=True)
        check(len(got) == 1 and open(got[0]).read() == open(os.path.join(SRC, doc)).read(),
              f'{doc} installed in share/doc/symm: {got}')
finally:
    shutil.rmtree(tmp, ignore_errors=True)
if failures:
    print(f'test_install: {len(failures)} failures')
    sys.exit(1)
print('test_install: ok')
