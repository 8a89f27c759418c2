"""Run a torchrun script under symmrun on the CPU machine (dry runs):
    symmrun -n N python3 torchrun_env.py SCRIPT ARGS...
Sets torchrun's RANK, WORLD_SIZE, LOCAL_RANK from symmrun's SYMM_* variables
and FAKE_DIST_DIR (the NumPy stand-in's torch.distributed meets there), puts
the stand-in for torch (tests/fake_torch) first on the path, then runs
SCRIPT as __main__."""
import os
import runpy
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "fake_torch"))
os.environ.setdefault("RANK", os.environ.get("SYMM_RANK", "0"))
os.environ.setdefault("WORLD_SIZE", os.environ.get("SYMM_N_PES", "1"))
os.environ.setdefault("LOCAL_RANK", os.environ.get("SYMM_LOCAL_RANK", os.environ["RANK"]))
os.environ.setdefault("FAKE_DIST_DIR", os.path.join("/tmp", "symm-fake-dist-%d" % os.getppid()))
os.makedirs(os.environ["FAKE_DIST_DIR"], exist_ok=True)
if os.environ["RANK"] == "0":  # the job's meeting folder goes with it (read at init only)
    import atexit
    import shutil
    atexit.register(shutil.rmtree, os.environ["FAKE_DIST_DIR"], True)
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
runpy.run_path(script, run_name="__main__")
