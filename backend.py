"""The array-module switch: NumPy on the CPU, CuPy on a GPU, chosen in one place.

Every other module is written against an array module `xp` and asks `array_module_of(array)`
which one an array belongs to, so the same code runs on both. CuPy is imported only when a GPU
is asked for (`device="gpu"`) or may be used (`device="auto"`).
"""
import numpy

DEVICES = ("cpu", "gpu", "auto")


def _usable_cupy():
    """CuPy if it imports AND a CUDA device answers, else None.

    `import cupy` succeeds on machines without a GPU; only a device call tells (it raises a
    RuntimeError subclass, CUDARuntimeError, when no driver or device is there).
    """
    try:
        import cupy
    except ImportError:
        return None
    try:
        if cupy.cuda.is_available() and cupy.cuda.runtime.getDeviceCount() > 0:
            return cupy
    except RuntimeError:
        pass
    return None


def array_module(device="auto"):
    """The array module for `device` in {"cpu", "gpu", "auto"}; auto = GPU when one is usable."""
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}: use one of {', '.join(DEVICES)}")
    if device == "cpu":
        return numpy
    cupy = _usable_cupy()
    if cupy is not None:
        return cupy
    if device == "gpu":
        raise RuntimeError("device 'gpu' needs CuPy and a CUDA GPU, and none is usable here: "
                           "install the [gpu] extra on a machine with a GPU, or use --device cpu")
    return numpy


def array_module_of(array):
    """NumPy or CuPy, whichever `array` lives in (without importing CuPy). An array of any other
    kind that names its module by the array API's `__array_namespace__` gets that module: the
    tests' stand-in for CuPy on a CPU (tests/strict_array.py) is found so."""
    package = type(array).__module__.split(".")[0]
    if package == "cupy":
        import cupy
        return cupy
    if package != "numpy" and hasattr(array, "__array_namespace__"):
        return array.__array_namespace__()
    return numpy


def to_numpy(array):
    """A NumPy copy of a NumPy or CuPy array (for saving, printing and plotting)."""
    return array.get() if hasattr(array, "get") and not isinstance(array, numpy.ndarray) else numpy.asarray(array)


def device_name(xp):
    """A human-readable name of the device behind `xp`."""
    if xp is numpy:
        import platform
        return f"cpu ({platform.processor() or platform.machine()})"
    props = xp.cuda.runtime.getDeviceProperties(xp.cuda.Device().id)
    return f"gpu ({props['name'].decode()})"
