"""The exception hierarchy, and the two failures a caller most wants to catch
happening for real: a peer that dies (symm.PeerFailed) and a bounded wait
that expires (symm.Timeout).
    python3 test_errors.py SYMMRUN"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import symm  # noqa: E402
from symm import errors  # noqa: E402
from harness import case, check, expect_raises, run  # noqa: E402

SYMMRUN = sys.argv[1]


@case
def one_class_per_status_under_error():
    names = set()
    for status, cls in errors.BY_STATUS.items():
        check(issubclass(cls, symm.Error) and cls is not symm.Error, cls)
        check(cls.status == status and getattr(symm, cls.__name__) is cls, cls)
        e = errors.from_status(status, "SYMM_ERR_X", "why")
        check(type(e) is cls and e.status == status and e.message == "why", e)
        check(cls.__doc__, "%s has no docstring" % cls.__name__)
        names.add(cls.__name__)
    check({"PeerFailed", "Timeout", "LibraryNotFound", "OutOfBounds"} <= names, names)
    e = errors.from_status(99, "SYMM_ERR_NEWER", "from a newer runtime")
    check(type(e) is symm.Error and e.status == 99 and "SYMM_ERR_NEWER" in str(e), e)
    try:
        raise errors.from_status(10, "SYMM_ERR_PEER_FAILED", "gone")
    except symm.Error as caught:  # the base catches every one
        check(isinstance(caught, symm.PeerFailed), caught)


@case
def a_dead_peer_raises_peer_failed():
    code = ("import os, time, symm\n"
            "ctx = symm.init()\n"
            "if ctx.my_pe == 1:\n"
            "    os._exit(3)\n"
            "t0 = time.time()\n"
            "try:\n"
            "    ctx.barrier_all()\n"
            "    print('PE 0: barrier returned')\n"
            "except symm.PeerFailed as e:\n"
            "    print('PE 0: PeerFailed %s %d after %.2f s: %s' % (e.name, e.status,"
            " time.time() - t0, e.message))\n")
    p = subprocess.run([SYMMRUN, "-n", "2", "--timeout", "60", sys.executable, "-c", code],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=90)
    out = p.stdout.decode(errors="replace")
    check(p.returncode == 3, "symmrun exits with the dead PE's status: %d\n%s" % (p.returncode, out))
    check("PE 0: PeerFailed SYMM_ERR_PEER_FAILED 10 after" in out and "PE 1" in out,
          out + p.stderr.decode(errors="replace"))


@case
def a_bounded_wait_raises_timeout():
    # A UID job of 2 that only one PE joins: init gives up after timeout_ms.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SYMM_RANK", "SYMM_N_PES"))}
    os.environ.clear()
    os.environ.update(env)
    uid = symm.unique_id()
    t0 = time.time()
    e = expect_raises(symm.Timeout, symm.init, unique_id=uid, rank=0, n_pes=2, timeout_ms=400)
    took = time.time() - t0
    check(e.status == 11 and e.name == "SYMM_ERR_TIMEOUT" and "400 ms" in e.message, e)
    check(0.3 < took < 10, "took %.2f s" % took)


sys.exit(run())
