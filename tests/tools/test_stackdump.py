"""The stack dump preload (tests/tools/stackdump.c) on a program whose two
threads sit in blocking calls: every thread's frames come out, named where
the program exports the function, the program goes on and ends normally;
with SYMM_STACKS_IF naming no loaded module nothing is printed."""
import os
import re
import subprocess
import sys

preload, prog = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])


def run(stacks_if):
    env = dict(os.environ, LD_PRELOAD=preload, SYMM_STACKS_S="0.3", SYMM_STACKS_IF=stacks_if)
    r = subprocess.run([prog, "1.5"], env=env, capture_output=True, text=True, timeout=30)
    return r.returncode, r.stdout, r.stderr


rc, out, err = run("")
assert rc == 0, f"the program ended with {rc}: {err}"
assert "worker ran: 1" in out, out
assert re.search(r"stackdump pid \d+: every thread's stack after 300 ms", err), err
assert re.search(r"stackdump pid \d+: done", err), err
tids = set(re.findall(r"stackdump pid \d+ tid (\d+) \(", err))
assert len(tids) == 2, f"frames of {len(tids)} threads, want 2 (main, worker):\n{err}"
assert re.search(r"#\d+ \S*stack_prog\+0x[0-9a-f]+ stack_prog_worker\+0x", err), err
assert re.search(r"#\d+ \S*stack_prog\+0x[0-9a-f]+ main\+0x", err), err
assert "no answer" not in err, err

rc, out, err = run("no-such-module-here")
assert rc == 0 and "worker ran: 1" in out, (rc, out, err)
assert "stackdump" not in err, err
print("stack dump: 2 threads' frames, the program unharmed; silent without the module")
