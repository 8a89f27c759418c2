"""The Python tests run on pytest: @case functions, run by pytest in the
process that defined them, then a closing 'N passed, N failed' line (the
line CI reads); exit status 1 on any failure.

A test file is a script (symmrun starts one per PE; a PE's cases run in
order, in step with its peers, between the file's own setup and teardown),
so pytest is handed the running __main__ module rather than importing the
file a second time (which would join the job again): the plugin below
makes pytest's module collector use it and collect exactly the @case
functions, in the order they were defined. pytest's options apply
(PYTEST_ADDOPTS="-k ring -x", for example).
"""
import os
import sys

_CASES = []


def _simulated_hosts():
    """SYMM_TEST_HOSTS=H: split the job's ranks into H simulated hosts, as
    symmrun --hosts H does, for launchers that cannot (torchrun): rank r of N
    gets SYMM_HOST_ID "symm-test-host-<r*H//N>" (contiguous ranks), so PEs of
    different simulated hosts share no memory and reach each other through a
    transport (SYMM_TRANSPORT, tcp unless set). Runs when this module is
    imported, before the test script joins the job (symm's init reads the
    variable). A SYMM_HOST_ID already set (symmrun --hosts) is kept."""
    h = os.environ.get("SYMM_TEST_HOSTS", "")
    if not h or os.environ.get("SYMM_HOST_ID"):
        return
    try:
        hosts = int(h)
        rank = int(os.environ.get("RANK", os.environ.get("SYMM_RANK", "0")))
        n = int(os.environ.get("WORLD_SIZE", os.environ.get("SYMM_N_PES", "1")))
    except ValueError:
        sys.exit("SYMM_TEST_HOSTS=%r (or RANK / WORLD_SIZE) is not a number" % h)
    if hosts < 1 or hosts > n or not 0 <= rank < n:
        sys.exit("SYMM_TEST_HOSTS=%d needs 1 <= hosts <= %d ranks (rank %d)" % (hosts, n, rank))
    host = rank * hosts // n
    os.environ["SYMM_HOST_ID"] = "symm-test-host-%d" % host
    os.environ.setdefault("SYMM_TRANSPORT", "tcp")
    if rank == 0:
        print("SYMM_TEST_HOSTS=%d: %d ranks on %d simulated hosts (rank 0 on %s)"
              % (hosts, n, hosts, os.environ["SYMM_HOST_ID"]), flush=True)


_simulated_hosts()


def same_host(pe):
    """Is PE pe on this process's (simulated) host? SYMM_TEST_HOSTS as above,
    or symmrun --hosts (SYMM_HOST_ID symmrun-host-*, SYMM_LOCAL_RANK,
    SYMM_LOCAL_N_PES: contiguous ranks); True without simulated hosts. A PE
    of another host is never load/store reachable (peer_tensor, peer_ptr)."""
    env = os.environ
    rank = int(env.get("RANK", env.get("SYMM_RANK", "0")))
    n = int(env.get("WORLD_SIZE", env.get("SYMM_N_PES", "1")))
    hid = env.get("SYMM_HOST_ID", "")
    if env.get("SYMM_TEST_HOSTS") and hid.startswith("symm-test-host-"):
        hosts = int(env["SYMM_TEST_HOSTS"])
        return pe * hosts // n == rank * hosts // n
    if hid.startswith("symmrun-host-") and "SYMM_LOCAL_RANK" in env and "SYMM_LOCAL_N_PES" in env:
        first = int(env.get("SYMM_RANK", rank)) - int(env["SYMM_LOCAL_RANK"])
        return first <= pe < first + int(env["SYMM_LOCAL_N_PES"])
    return True


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


class _Plugin:
    """Collect the running script's @case functions; count the outcomes."""

    def __init__(self, pytest, module, prefix=""):
        self.module = module
        self.prefix = prefix
        self.passed = self.failed = self.deselected = 0
        cases = {id(f) for f in _CASES}

        class Running(pytest.Module):
            def _getobj(self):
                return module

            def _register_setup_module_fixture(self):
                pass  # the script did its own setup before run()

        self.Running = Running
        self.cases = cases
        self.pytest = pytest

    def pytest_pycollect_makemodule(self, module_path, parent):
        return self.Running.from_parent(parent, path=module_path)

    def pytest_pycollect_makeitem(self, collector, name, obj):
        if id(obj) in self.cases and callable(obj):
            return [self.pytest.Function.from_parent(collector, name=name, callobj=obj)]
        return []  # nothing else in the script is a test (helpers, imported names)

    def pytest_deselected(self, items):
        self.deselected += len(items)  # -k / -m in PYTEST_ADDOPTS: not run, not failed

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.outcome == "failed":
            if report.outcome == "passed":
                self.passed += 1
            elif report.outcome == "failed":
                self.failed += 1
                # now, not in pytest's summary at the end: a peer left behind
                # in a collective may hang the run before that summary prints
                print("\n%sFAILED %s (%s):\n%s" % (self.prefix, report.nodeid.split("::")[-1],
                                                 report.when, report.longreprtext), flush=True)


def run(prefix=""):
    """Run the cases of the running script (__main__) on pytest; print
    'N passed, N failed' (prefixed: 'PE 0: ') last; 0 when all passed."""
    try:
        import pytest
    except ImportError:
        print("%sFAIL pytest is not installed for %s (python3 -m pip install pytest)"
              % (prefix, sys.executable), flush=True)
        print("%s0 passed, 1 failed" % prefix, flush=True)
        return 1
    module = sys.modules["__main__"]
    path = os.path.abspath(module.__file__)
    plugin = _Plugin(pytest, module, prefix)
    args = [path, "-v", "-p", "no:cacheprovider", "--rootdir", os.path.dirname(path),
            "-c", os.devnull, "-W", "default", "--tb=short", "--no-header"]
    if prefix:
        args += ["-o", "console_output_style=classic"]
    if os.environ.get("SYMM_TEST_TRACE") == "1":
        # trace lines as they happen (a run stopped by its time limit loses
        # captured output), and every thread's Python stack if it hangs
        import faulthandler
        args.append("-s")
        faulthandler.dump_traceback_later(int(os.environ.get("SYMM_TEST_TRACE_STACKS_S", "90")))
    pytest.main(args, plugins=[plugin])
    if os.environ.get("SYMM_TEST_TRACE") == "1":
        faulthandler.cancel_dump_traceback_later()
    missing = len(_CASES) - plugin.passed - plugin.failed - plugin.deselected
    if missing:  # a case pytest did not run (and was not asked to leave out) is a failure
        print("%sFAIL %d of %d cases did not run" % (prefix, missing, len(_CASES)), flush=True)
        plugin.failed += missing
    print("%s%d passed, %d failed" % (prefix, plugin.passed, plugin.failed), flush=True)
    return 1 if plugin.failed else 0
