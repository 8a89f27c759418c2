#!/usr/bin/env python3
"""Where the loader looks for the runtime when SYMM_RUNTIME is not set.

Builds small install trees in a temporary directory (copies and symlinks of
the loader and of fake runtimes) and probes each with owndir_probe, which
dlopens the loader by path and reports the status and the runtime that got
loaded.

usage: loader_own_dir.py --probe EXE --loader LIBSYMM --fake GOOD --nosym BAD
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

SONAME = "libsymm.so.1"
RUNTIME = "libsymm_runtime.so.1"
failures = []


def probe(exe, loader, cwd=None, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k not in ("SYMM_RUNTIME", "LD_LIBRARY_PATH")}
    env.update(env_extra or {})
    argv = [exe] + ([loader] if loader else [])
    p = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError("owndir_probe failed (%d): %s" % (p.returncode, p.stderr))
    out = p.stdout
    status = runtimes = None
    head, _, message = out.partition("message=")
    runtimes = []
    for line in head.splitlines():
        if line.startswith("status="):
            status = line[len("status="):]
        elif line.startswith("runtime="):
            runtimes.append(os.path.realpath(os.path.join(cwd or os.getcwd(), line[len("runtime="):])))
    return status, runtimes, message.rstrip("\n")


def check(name, cond, detail):
    print("%s %s" % ("ok  " if cond else "FAIL", name))
    if not cond:
        print("     " + detail.replace("\n", "\n     "))
        failures.append(name)


def install(d, src, name, link=False):
    os.makedirs(d, exist_ok=True)
    dst = os.path.join(d, name)
    if link:
        os.symlink(os.path.relpath(src, d), dst)
    else:
        shutil.copy2(src, dst)
    return dst


def expect_loaded(name, result, runtime_path):
    status, runtimes, message = result
    want = os.path.realpath(runtime_path)
    check(name, status == "SYMM_SUCCESS" and runtimes == [want],
          "status %s, loaded %s, expected %s\nmessage: %s" % (status, runtimes, want, message))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", required=True)
    ap.add_argument("--builtin", required=True)
    ap.add_argument("--loader", required=True)
    ap.add_argument("--fake", required=True)
    ap.add_argument("--nosym", required=True)
    a = ap.parse_args()
    for k in ("probe", "builtin", "loader", "fake", "nosym"):  # meson passes build-relative paths
        setattr(a, k, os.path.abspath(getattr(a, k)))

    tmp = tempfile.mkdtemp(prefix="symm-loader-")
    try:
        t = lambda *p: os.path.join(tmp, *p)

        # 1. A copy of the loader with a runtime next to it.
        lib = install(t("lib"), a.loader, SONAME)
        good = install(t("lib"), a.fake, RUNTIME)
        expect_loaded("runtime beside the loader", probe(a.probe, lib), good)

        # 2. The same loader opened by a relative path from another directory.
        expect_loaded("relative loader path", probe(a.probe, "lib/" + SONAME, cwd=tmp), good)

        # 3. A symlinked loader: the link's directory has no runtime, the real
        # directory has one.
        link = install(t("link"), lib, SONAME, link=True)
        expect_loaded("symlinked loader, runtime beside the real file", probe(a.probe, link), good)

        # 4. ... and a runtime in the link's directory comes first.
        link_rt = install(t("link2"), a.fake, RUNTIME)
        link2 = install(t("link2"), lib, SONAME, link=True)
        expect_loaded("symlinked loader, runtime beside the link", probe(a.probe, link2), link_rt)

        # 5. SYMM_RUNTIME is final: a bad value is not rescued by the runtime
        # beside the loader.
        bad = t("none", RUNTIME)
        status, runtimes, message = probe(a.probe, lib, env_extra={"SYMM_RUNTIME": bad})
        check("SYMM_RUNTIME set and wrong: no fallback",
              status == "SYMM_ERR_LIBRARY_NOT_FOUND" and runtimes == [] and bad in message
              and "loader's directory" not in message and "system search path" not in message,
              "status %s, loaded %s\nmessage: %s" % (status, runtimes, message))

        # 6. SYMM_RUNTIME set and right: used even with another runtime around.
        other = install(t("other"), a.fake, RUNTIME)
        expect_loaded("SYMM_RUNTIME chosen over the loader's directory",
                      probe(a.probe, lib, env_extra={"SYMM_RUNTIME": other}), other)

        # 7. The system search path (LD_LIBRARY_PATH) comes last.
        bare = install(t("bare"), a.loader, SONAME)
        sys_rt = install(t("sys"), a.fake, RUNTIME)
        expect_loaded("runtime on the system search path",
                      probe(a.probe, bare, env_extra={"LD_LIBRARY_PATH": t("sys")}), sys_rt)

        # 8. A library without symm_runtime_negotiate beside the loader is
        # skipped: the search goes on to the system path.
        skip = install(t("skip"), a.loader, SONAME)
        install(t("skip"), a.nosym, RUNTIME)
        result = probe(a.probe, skip, env_extra={"LD_LIBRARY_PATH": t("sys")})
        expect_loaded("a non-runtime beside the loader is skipped", result, sys_rt)

        # 8b. A loader compiled into a program (Go, Zig): the runtime beside the
        # program, whether it is started by path or by a bare name through
        # $PATH (dladdr then names no directory; /proc/self/exe does).
        exe = install(t("bin"), a.builtin, "owndir_builtin")
        rt_bin = install(t("bin"), a.fake, RUNTIME)
        expect_loaded("built-in loader started by path", probe(exe, None), rt_bin)
        expect_loaded("built-in loader started through $PATH",
                      probe("owndir_builtin", None, cwd=tmp,
                            env_extra={"PATH": t("bin") + os.pathsep + os.environ.get("PATH", "")}),
                      rt_bin)

        # 9. Nothing anywhere: the message lists each place tried.
        status, runtimes, message = probe(a.probe, bare)
        if status == "SYMM_SUCCESS" and runtimes and not runtimes[0].startswith(tmp):
            print("skip nothing anywhere: a runtime is installed on this system (%s)" % runtimes[0])
        else:
            check("no runtime anywhere",
                  status == "SYMM_ERR_LIBRARY_NOT_FOUND" and runtimes == []
                  and t("bare", RUNTIME) + " (loader's directory)" in message
                  and RUNTIME + " (system search path)" in message,
                  "status %s, loaded %s\nmessage: %s" % (status, runtimes, message))

        # 10. The non-runtime is named in the message with its reason.
        status, runtimes, message = probe(a.probe, skip)
        if not (status == "SYMM_SUCCESS" and runtimes and not runtimes[0].startswith(tmp)):
            check("a skipped non-runtime is reported",
                  status == "SYMM_ERR_LIBRARY_NOT_FOUND"
                  and t("skip", RUNTIME) + " (loader's directory): not a symm runtime" in message
                  and "symm_runtime_negotiate" in message,
                  "status %s\nmessage: %s" % (status, message))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    if failures:
        print("%d scenario(s) failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
