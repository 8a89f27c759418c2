"""A stand-in torch.distributed: records calls; broadcast_object_list goes
through a file that every rank of the test job can reach (FAKE_DIST_DIR), so
symm.torch.init_from_process_group is tested for real between processes."""
import enum
import os
import pickle
import time

calls = []
_state = {"init": False, "rank": 0, "size": 1}


class ReduceOp(enum.Enum):
    SUM = 0
    PRODUCT = 1
    MIN = 2
    MAX = 3
    BAND = 4
    BOR = 5
    BXOR = 6
    AVG = 7


def is_available():
    return True


def is_initialized():
    return _state["init"]


def init_process_group(backend="gloo", rank=None, world_size=None, device_id=None, **kwargs):
    if rank is None:  # torchrun's environment, like the real one
        rank = int(os.environ.get("RANK", 0))
    if world_size is None:
        world_size = int(os.environ.get("WORLD_SIZE", 1))
    _state.update(init=True, rank=rank, size=world_size, backend=backend)


class _Group:
    group_name = "0"


class group:  # noqa: N801 (torch's spelling)
    WORLD = _Group()


def destroy_process_group():
    _state["init"] = False


def get_rank(group=None):
    return _state["rank"]


def get_world_size(group=None):
    return _state["size"]


def get_global_rank(group, r):
    return r


def broadcast_object_list(objs, src=0, group=None):
    calls.append(("broadcast_object_list", src))
    path = os.path.join(os.environ["FAKE_DIST_DIR"], "bcast.pickle")
    if _state["rank"] == src:
        with open(path + ".tmp", "wb") as f:
            pickle.dump(list(objs), f)
        os.rename(path + ".tmp", path)
        return
    deadline = time.time() + 60
    while not os.path.exists(path):
        if time.time() > deadline:
            raise RuntimeError("fake broadcast_object_list: nothing from rank %d" % src)
        time.sleep(0.01)
    with open(path, "rb") as f:
        objs[:] = pickle.load(f)


def _rec(name):
    def f(*args, **kwargs):
        calls.append((name, args, kwargs))
    f.__name__ = name
    return f


for _n in ("all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single",
           "broadcast", "barrier"):
    globals()[_n] = _rec(_n)
