"""No CUDA in the stand-in."""


def is_available():
    return False


def device_count():
    return 0


def set_device(d):
    raise RuntimeError("fake torch: no CUDA")
