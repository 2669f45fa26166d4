"""A stand-in for CuPy on a CPU: arrays on a pretend device that refuse NumPy arrays as CuPy does.

On a CPU every array is NumPy's, so code that makes an array on the host where it should make it
on the device (`numpy.zeros` instead of `xp.zeros`, noise drawn without its `xp`) runs the same
there and crashes only on a GPU. Used as the array module `xp`, this module behaves like CuPy
where host and device meet:

  - a StrictArray holds a NumPy array "on the device" and computes with NumPy, so its results are
    NumPy's bit for bit (it runs the core's NumPy-expression path: gpu.enabled is False for it);
  - a device array holds numbers: an object array (`zeros_like(None)`) is a TypeError;
  - a plain NumPy array as an operand of a ufunc, matmul or array function, an `out=` array, or a
    value written into a StrictArray is a TypeError, and so is an implicit conversion of a
    StrictArray to NumPy (`numpy.asarray(x)`, `host[...] = x`); Python and NumPy scalars mix
    freely, and NumPy integer arrays may index a StrictArray (CuPy copies them over);
  - `numpy.f(x)` of a StrictArray x runs on the device, as CuPy's `__array_function__` and
    `__array_ufunc__` dispatch does;
  - `asarray` is the way onto the device and `asnumpy` (or `x.get()`) the way off it.

Every other name of this module is NumPy's: its dtypes as they are, its functions taking and
returning StrictArrays. backend.array_module_of(x) finds this module by the array API's
`x.__array_namespace__()`.
"""
import sys

import numpy
from numpy.lib.mixins import NDArrayOperatorsMixin


def on_device(value):
    """The NumPy array(s) inside StrictArray operands (in lists, tuples and dicts too); a plain
    NumPy array among them is a TypeError, as CuPy's refusal of host arrays."""
    if isinstance(value, StrictArray):
        return value.value
    if isinstance(value, numpy.ndarray):
        raise TypeError(f"a NumPy array {value.shape} {value.dtype} met a device array: "
                        "move it with asarray first")
    if isinstance(value, (list, tuple)):
        return type(value)(on_device(item) for item in value)
    if isinstance(value, dict):
        return {key: on_device(item) for key, item in value.items()}
    return value


def strict(value):
    """Results back as StrictArrays: every NumPy array or scalar (tuples of them too)."""
    if isinstance(value, (numpy.ndarray, numpy.generic)):
        return StrictArray(numpy.asarray(value))
    if isinstance(value, tuple):
        return tuple(strict(item) for item in value)
    return value


def device_function(function):
    """`function` (NumPy's) on StrictArrays: refuses NumPy arrays, returns StrictArrays."""
    def run(*args, **kwargs):
        return strict(function(*on_device(args), **on_device(kwargs)))
    return run


def index(key):
    """An index into a StrictArray: StrictArrays unwrapped, NumPy arrays allowed (CuPy copies an
    index array over)."""
    keys = key if isinstance(key, tuple) else (key,)
    return tuple(k.value if isinstance(k, StrictArray) else k for k in keys)


class StrictArray(NDArrayOperatorsMixin):
    """A NumPy array `value` on the pretend device: operators, methods and attributes are
    NumPy's, their results StrictArrays (see the module's docstring for what it refuses)."""

    def __init__(self, value):
        if value.dtype == object:
            raise TypeError("a device array holds numbers, not Python objects (CuPy has no object dtype)")
        self.value = value

    def __array__(self, dtype=None, copy=None):
        raise TypeError("implicit conversion of a device array to a NumPy array: use .get() or asnumpy")

    def __array_namespace__(self, api_version=None):
        return sys.modules[__name__]

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        result = getattr(ufunc, method)(*on_device(inputs), **on_device(kwargs))
        out = kwargs.get("out")
        if out is not None:  # written in place: the StrictArray(s) given
            return out[0] if isinstance(out, tuple) and len(out) == 1 else out
        return strict(result)

    def __array_function__(self, function, types, args, kwargs):
        return device_function(function)(*args, **kwargs)

    def __getattr__(self, name):
        """NumPy's methods and attributes (reshape, astype, sum, T, shape, ...) on the device;
        special names are not forwarded (NumPy would find __array_interface__ and convert)."""
        if name.startswith("__") or name == "value":
            raise AttributeError(name)
        attribute = getattr(self.value, name)
        return device_function(attribute) if callable(attribute) else strict(attribute)

    def __getitem__(self, key):
        return strict(self.value[index(key)])

    def __setitem__(self, key, item):
        self.value[index(key)] = on_device(item)

    def get(self):
        """A NumPy copy on the host (CuPy's ndarray.get)."""
        return self.value.copy()

    def __float__(self):
        return float(self.value)

    def __int__(self):
        return int(self.value)

    def __bool__(self):
        return bool(self.value)

    def __repr__(self):
        return f"StrictArray({self.value!r})"


def asarray(value, dtype=None):
    """Onto the device: a StrictArray of value (a NumPy array, list, scalar or StrictArray)."""
    return StrictArray(numpy.asarray(value.value if isinstance(value, StrictArray) else value, dtype=dtype))


def asnumpy(array):
    """Off the device: a NumPy copy (cupy.asnumpy)."""
    return array.get()


def __getattr__(name):
    """numpy.<name> for the device: dtypes and constants as they are, functions on StrictArrays."""
    attribute = getattr(numpy, name)
    return attribute if isinstance(attribute, type) or not callable(attribute) else device_function(attribute)
