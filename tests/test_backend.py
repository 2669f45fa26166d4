"""Tests of backend.py: device choice, its errors, and the NumPy helpers."""
import sys
import types

import numpy as np
import pytest

import backend


def test_cpu_is_numpy():
    """device 'cpu' is always NumPy, whatever is installed."""
    assert backend.array_module("cpu") is np


@pytest.mark.parametrize("device", ["cuda", "GPU", "", None, "tpu"])
def test_unknown_device_is_refused(device):
    """Anything but cpu/gpu/auto raises ValueError naming the bad value and the choices."""
    with pytest.raises(ValueError, match=r"unknown device .*use one of cpu, gpu, auto"):
        backend.array_module(device)


def fake_cupy(available=True, count=1, raises=False):
    """A stand-in `cupy` module whose CUDA runtime reports `count` devices (or raises)."""
    def device_count():
        if raises:
            raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")
        return count
    cuda = types.SimpleNamespace(is_available=lambda: available and not raises,
                                 runtime=types.SimpleNamespace(getDeviceCount=device_count))
    module = types.ModuleType("cupy")
    module.cuda = cuda
    return module


@pytest.mark.parametrize("cupy", [None, fake_cupy(available=False), fake_cupy(count=0), fake_cupy(raises=True)],
                         ids=["not-installed", "not-available", "no-device", "driver-error"])
def test_gpu_without_usable_gpu_is_a_clear_runtime_error(monkeypatch, cupy):
    """Without CuPy, or with CuPy but no usable CUDA device: 'gpu' raises RuntimeError saying CuPy
    and a CUDA GPU are needed and how to proceed; 'auto' quietly falls back to NumPy.
    (sys.modules['cupy'] = None makes `import cupy` raise ImportError, as when it is not installed.)"""
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    assert backend._usable_cupy() is None
    with pytest.raises(RuntimeError, match=r"device 'gpu' needs CuPy and a CUDA GPU.*--device cpu"):
        backend.array_module("gpu")
    assert backend.array_module("auto") is np


def test_usable_cupy_is_chosen_for_gpu_and_auto(monkeypatch):
    """With a CuPy that reports a device, 'gpu' and 'auto' both return that module and 'cpu' NumPy."""
    cupy = fake_cupy()
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    assert backend.array_module("gpu") is cupy
    assert backend.array_module("auto") is cupy
    assert backend.array_module("cpu") is np


def test_gpu_on_this_machine():
    """On a machine without a usable GPU (this test is skipped where one works), 'gpu' is a
    RuntimeError, not an ImportError or a crash inside CuPy."""
    if backend._usable_cupy() is not None:
        pytest.skip("a GPU is usable here")
    with pytest.raises(RuntimeError, match="needs CuPy and a CUDA GPU"):
        backend.array_module("gpu")


@pytest.mark.parametrize("value", [np.zeros((2, 3), np.float32), np.arange(4), np.float64(1.5)])
def test_array_module_of_numpy_is_numpy(value):
    """NumPy arrays and scalars belong to NumPy (and CuPy is not imported to find that out)."""
    assert backend.array_module_of(value) is np


def test_array_module_of_recognises_cupy_arrays_by_their_type(monkeypatch):
    """An array whose type lives in a `cupy.*` module is CuPy's; the test inserts a fake `cupy`."""
    cupy = fake_cupy()
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    fake_array_type = type("ndarray", (), {"__module__": "cupy._core.core"})
    assert backend.array_module_of(fake_array_type()) is cupy


def test_to_numpy():
    """to_numpy returns NumPy arrays with equal values and dtype; a device array (anything with
    .get() that is not a NumPy array) is copied to the host through .get()."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = backend.to_numpy(x)
    assert isinstance(y, np.ndarray) and y.dtype == np.float32 and np.array_equal(y, x)
    assert np.array_equal(backend.to_numpy([1, 2, 3]), np.array([1, 2, 3]))

    class DeviceArray:
        def get(self):
            return np.array([7.0, 8.0])
    assert np.array_equal(backend.to_numpy(DeviceArray()), [7.0, 8.0])


def test_device_name_of_numpy():
    """NumPy's device is reported as the CPU."""
    assert backend.device_name(np).startswith("cpu (")
