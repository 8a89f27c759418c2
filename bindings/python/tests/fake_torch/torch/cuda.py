"""No CUDA in the stand-in, unless FAKE_TORCH_CUDA=N: then N pretend GPUs
whose streams, events and graphs run nothing (a "cuda" tensor is a CPU
tensor), so that GPU scripts' control flow (tests/perf/bench_torch.py) can
be dry-run on the CPU machine: every call path, the table and the JSON, no
figure."""
import contextlib
import os
import time

_N = int(os.environ.get("FAKE_TORCH_CUDA", "0") or 0)
_cur = [0]


def is_available():
    return _N > 0


def device_count():
    return _N


def set_device(d):
    if not _N:
        raise RuntimeError("fake torch: no CUDA")
    _cur[0] = int(getattr(d, "index", d) or 0)


def current_device():
    return _cur[0]


def get_device_name(d=None):
    return "fake GPU (FAKE_TORCH_CUDA)"


def synchronize(d=None):
    pass


class Stream:
    cuda_stream = 0

    def __init__(self, device=None, priority=0):
        pass

    def synchronize(self):
        pass

    def wait_stream(self, other):
        pass


def current_stream(d=None):
    return Stream()


@contextlib.contextmanager
def stream(s):
    yield s


class Event:
    def __init__(self, enable_timing=False):
        self.t = None

    def record(self, s=None):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return (other.t - self.t) * 1e3  # ms, like torch


class CUDAGraph:
    def __init__(self):
        self.captured = False

    def replay(self):
        if not self.captured:
            raise RuntimeError("fake CUDAGraph: replay before capture")


@contextlib.contextmanager
def graph(g, stream=None, pool=None):
    yield g
    g.captured = True
