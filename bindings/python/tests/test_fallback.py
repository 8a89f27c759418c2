"""With the runtime missing (SYMM_RUNTIME=/nonexistent): import works,
available() is False, every call raises symm.LibraryNotFound naming what was
tried, loader-answered calls still work."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import symm  # noqa: E402
from harness import case, check, expect_raises, run  # noqa: E402


@case
def not_available():
    check(os.environ.get("SYMM_RUNTIME") == "/nonexistent", "run with SYMM_RUNTIME=/nonexistent")
    check(symm.available() is False, "available() must be False")
    e = expect_raises(symm.LibraryNotFound, symm.probe)
    check(e.status == 5 and e.name == "SYMM_ERR_LIBRARY_NOT_FOUND", e)
    check("/nonexistent" in e.message, e.message)
    check(isinstance(e, symm.Error), "subclass of symm.Error")


@case
def init_raises_library_not_found():
    e = expect_raises(symm.LibraryNotFound, symm.init)
    check("/nonexistent" in e.message, e.message)
    expect_raises(symm.LibraryNotFound, symm.unique_id)
    expect_raises(symm.LibraryNotFound, symm.runtime_version)


@case
def loader_answers_without_runtime():
    check(symm.loader_version() == tuple(int(x) for x in symm.__version__.split(".")),
          (symm.loader_version(), symm.__version__))
    check(symm.runtime_path() == "", symm.runtime_path())
    e = expect_raises(symm.InvalidState, symm.set_runtime, "/elsewhere/libsymm_runtime.so.1")
    check("already" in e.message, e.message)


@case
def no_loader_at_all():
    # A fresh interpreter that finds no loader: import still works, calls raise.
    import subprocess
    env = dict(os.environ, SYMM_LOADER="/nonexistent/libsymm.so.1")
    code = ("import symm\nassert not symm.available()\ntry:\n symm.init()\n"
            "except symm.LibraryNotFound as e:\n print('LNF', e.message)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    check(out.returncode == 0 and "LNF" in out.stdout and "libsymm.so.1" in out.stdout,
          (out.returncode, out.stdout, out.stderr))


@case
def every_public_name_is_documented():
    # the API page (docs/python, bash bindings/python/gen_docs.sh) is made of these
    import inspect
    import symm.torch as st
    missing = []

    def doc_of(v):
        return (v.fget if isinstance(v, property) else v).__doc__

    for name in symm.__all__:
        v = getattr(symm, name)
        if inspect.isclass(v):
            if not v.__doc__:
                missing.append(name)
            for m, mv in vars(v).items():
                if not m.startswith("_") and (inspect.isfunction(mv) or isinstance(mv, property)) \
                        and not doc_of(mv):
                    missing.append("%s.%s" % (name, m))
        elif callable(v) and not v.__doc__:
            missing.append(name)
    for name in st.__all__ + ["use", "why_fallback"]:
        if not getattr(st, name).__doc__:
            missing.append("symm.torch." + name)
    check(not missing, "no docstring: %s" % missing)
    page = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "docs",
                        "python", "symm.torch.html")
    check(os.path.exists(page), "no rendered API page %s" % page)


sys.exit(run())
