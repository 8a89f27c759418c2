"""In-tree PEP 517 build backend for the symm Python package (stdlib only).

build_wheel runs the project's Meson build (the repository two levels up),
then writes a wheel with the pure-Python package plus symm/_lib/ holding
libsymm.so.1 (the loader), libsymm_runtime.so.1 (the runtime, found by the
loader in its own directory), any transport plugins, and the symmrun launcher.
The wheel is tagged py3-none-<platform>: the package uses ctypes, so it works
with any CPython 3.8+ of that platform.

config_settings: {"builddir": PATH} reuses a Meson build directory;
{"meson-args": "-Dcuda=disabled ..."} adds setup options.
"""
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NAME, VERSION = "symm", "1.3.0"


def _platform_tag():
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def _tag():
    return "py3-none-" + _platform_tag()


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def _metadata():
    readme = ""
    p = os.path.join(HERE, "README.md")
    if os.path.exists(p):
        with open(p, encoding="utf-8") as f:
            readme = f.read()
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
            "Summary: One-sided communication over a symmetric heap (GPUs and hosts), from Python\n"
            "License: Apache-2.0\nRequires-Python: >=3.8\n"
            "Provides-Extra: numpy\nRequires-Dist: numpy; extra == \"numpy\"\n"
            "Provides-Extra: torch\nRequires-Dist: torch; extra == \"torch\"\n"
            "Description-Content-Type: text/markdown\n\n%s" % (NAME, VERSION, readme))


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = os.path.join(metadata_directory, "%s-%s.dist-info" % (NAME, VERSION))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    return os.path.basename(d)


def _tool_env():
    """The environment for meson and ninja. Under pip's build isolation the
    environment points Python at pip's private build environment
    (PYTHONPATH with its sitecustomize, PYTHONNOUSERSITE), where a meson or
    ninja that was pip-installed into this Python (as scripts/deps.sh does)
    cannot import itself: those two entries are taken out again."""
    env = dict(os.environ)
    pp = [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
          if p and "pip-build-env" not in p]
    isolated = len(pp) != len([p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    if pp:
        env["PYTHONPATH"] = os.pathsep.join(pp)
    else:
        env.pop("PYTHONPATH", None)
    if isolated:
        env.pop("PYTHONNOUSERSITE", None)
    return env


def _run(cmd):
    print("symm_build: " + " ".join(cmd), file=sys.stderr)
    r = subprocess.run(cmd, stdout=sys.stderr, stderr=sys.stderr, env=_tool_env())
    if r.returncode:
        raise RuntimeError("symm_build: %s failed (exit %d)" % (cmd[0], r.returncode))


def _build_source(bd):
    """The source tree a Meson build directory was set up for, or None."""
    try:
        with open(os.path.join(bd, "meson-info", "meson-info.json"), encoding="utf-8") as f:
            return json.load(f)["directories"]["source"]
    except (OSError, ValueError, KeyError):
        return None


def _meson_build(config_settings):
    cs = config_settings or {}
    if not os.path.exists(os.path.join(ROOT, "meson.build")):
        raise RuntimeError("symm_build: %s is not the symm source tree (no meson.build): install "
                           "from a checkout, python3 -m pip install ./bindings/python" % ROOT)
    bd = cs.get("builddir") or os.environ.get("SYMM_WHEEL_BUILDDIR")
    if bd:
        bd = os.path.abspath(bd)
    else:
        # One per source tree: a build directory made for another checkout
        # would pack that checkout's libraries.
        tag = hashlib.sha256(os.path.realpath(ROOT).encode()).hexdigest()[:12]
        bd = os.path.join(tempfile.gettempdir(), "symm-wheel-build-%d-%s" % (os.getuid(), tag))
    for tool in ("meson", "ninja"):
        if not shutil.which(tool):
            raise RuntimeError("symm_build: %s is not on PATH (bash scripts/deps.sh installs it, "
                               "or: python3 -m pip install meson ninja)" % tool)
    extra = (cs.get("meson-args") or os.environ.get("SYMM_WHEEL_MESON_ARGS") or "").split()
    if os.path.exists(os.path.join(bd, "build.ninja")):
        src = _build_source(bd)
        if src is not None and os.path.realpath(src) != os.path.realpath(ROOT):
            raise RuntimeError("symm_build: the build directory %s belongs to %s, not to %s; "
                               "name another (SYMM_WHEEL_BUILDDIR) or remove it" % (bd, src, ROOT))
        if extra:  # the options asked for now, not those of an earlier setup
            _run(["meson", "configure", bd] + extra)
    else:
        _run(["meson", "setup", bd, ROOT, "-Dbuildtype=release", "-Dtests=disabled",
              "-Dfuzz=disabled", "-Dbindings=disabled"] + extra)
    _run(["ninja", "-C", bd])
    return bd


def _payload(bd):
    """(archive name, source path, executable) of every shipped file."""
    out = []
    pkg = os.path.join(HERE, "symm")
    for dirpath, _, files in os.walk(pkg):
        if "__pycache__" in dirpath or os.path.basename(dirpath) == "_lib":
            continue
        for f in sorted(files):
            if f.endswith(".py") or f == "py.typed":
                src = os.path.join(dirpath, f)
                out.append((os.path.relpath(src, HERE).replace(os.sep, "/"), src, False))
    libs = [("libsymm.so.1", os.path.join(bd, "loader", "libsymm.so.1"), False),
            ("libsymm_runtime.so.1", os.path.join(bd, "runtime", "libsymm_runtime.so.1"), False),
            ("symmrun", os.path.join(bd, "runtime", "symmrun"), True)]
    tdir = os.path.join(bd, "runtime", "transports")
    for dirpath, _, files in os.walk(tdir):
        for f in sorted(files):
            if f.endswith(".so") or ".so." in f:
                libs.append((f, os.path.join(dirpath, f), False))
    info = os.path.join(bd, "runtime", "symm-info")
    if os.path.exists(info):
        libs.append(("symm-info", info, True))
    for name, src, exe in libs:
        if not os.path.exists(src):
            raise RuntimeError("symm_build: the build has no %s" % src)
        out.append(("symm/_lib/" + name, os.path.realpath(src), exe))
    return out


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    bd = _meson_build(config_settings)
    tag = _tag()
    wheel_name = "%s-%s-%s.whl" % (NAME, VERSION, tag)
    path = os.path.join(wheel_directory, wheel_name)
    dist = "%s-%s.dist-info" % (NAME, VERSION)
    records = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        def add(name, data, exe=False):
            zi = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = ((0o755 if exe else 0o644) | 0o100000) << 16
            z.writestr(zi, data)
            records.append(_record_line(name, data))
        for name, src, exe in _payload(bd):
            with open(src, "rb") as f:
                add(name, f.read(), exe)
        add(dist + "/METADATA", _metadata().encode())
        add(dist + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: symm_build\n"
                              "Root-Is-Purelib: false\nTag: %s\n" % tag).encode())
        add(dist + "/entry_points.txt", b"[console_scripts]\nsymmrun = symm._launch:main\nsymm-info = symm._launch:info\n")
        records.append(dist + "/RECORD,,")
        z.writestr(dist + "/RECORD", "\n".join(records) + "\n")
    return wheel_name
