"""A tiny test harness (no pytest needed): @case functions, PASS/FAIL lines, a
closing 'N passed, N failed' line, exit status 1 on any failure."""
import sys
import traceback

_CASES = []


def case(fn):
    _CASES.append(fn)
    return fn


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def expect_raises(exc, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc as e:
        return e
    raise AssertionError("%s did not raise %s" % (getattr(fn, "__name__", fn), exc.__name__))


def run(prefix=""):
    passed = failed = 0
    for fn in _CASES:
        try:
            fn()
        except Exception:  # report every failure, go on with the next case
            failed += 1
            print("%sFAIL %s\n%s" % (prefix, fn.__name__, traceback.format_exc()), flush=True)
        else:
            passed += 1
            print("%sPASS %s" % (prefix, fn.__name__), flush=True)
    print("%s%d passed, %d failed" % (prefix, passed, failed), flush=True)
    return 1 if failed else 0
