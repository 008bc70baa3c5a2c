"""sinter: a graph compiler for neural networks, from Python.

    m = sinter.load("model.sir", shapes={"N": 2})     # .sir, .onnx or .sinterpkg
    m.init_random(0)                                  # or m.load_weights(path)
    outs = m.run({"x": x}, device="ref")              # NumPy arrays in and out
    fast = sinter.compile(module, (example,), mode="reduce-overhead", precision="bf16")
    y = fast(example)                                 # torch CUDA tensors, no host copy

Pure Python over libsinter.so (ctypes); see _lib for how it is found."""
import ctypes
import os

import numpy as np

from ._lib import SinterError, check, lib, Tensor, Error, Options, ShapeBinding, CompileOptions, CompileStats

__all__ = ["load", "compile", "Model", "Compiled", "SinterError", "version", "cuda_available", "read_tensors",
           "write_tensors"]

# sinter_dtype order (sinter.h)
DTYPES = ["f32", "f16", "bf16", "f8e4m3", "f8e5m2", "i64", "i32", "i8", "u8", "bool"]
_NP = {"f32": np.float32, "f16": np.float16, "i64": np.int64, "i32": np.int32, "i8": np.int8, "u8": np.uint8,
       "bool": np.bool_}
try:  # NumPy has no bfloat16 or float8; ml_dtypes (onnx's dependency) has
    import ml_dtypes
    _NP.update({"bf16": ml_dtypes.bfloat16, "f8e4m3": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2})
except ImportError:
    pass


def version():
    return lib().sinter_version().decode()


def cuda_available():
    """(True, device name) or (False, why not)."""
    why = ctypes.create_string_buffer(512)
    ok = lib().sinter_cuda_available(why, len(why))
    return bool(ok), why.value.decode()


def cpu_available():
    """(True, what it runs on) or (False, why not): the cpu device (LLVM's
    JIT and OpenBLAS), absent from a library built without them."""
    why = ctypes.create_string_buffer(512)
    ok = lib().sinter_cpu_available(why, len(why))
    return bool(ok), why.value.decode()


def _np_dtype(code):
    name = DTYPES[code]
    if name not in _NP:
        raise SinterError(2, "%s tensors need the ml_dtypes package for NumPy" % name)
    return np.dtype(_NP[name])


def _code(dtype):
    dtype = np.dtype(dtype)
    for name, t in _NP.items():
        if np.dtype(t) == dtype:
            return DTYPES.index(name)
    raise SinterError(1, "NumPy dtype %s has no sinter equivalent" % dtype)


def _desc(t):
    shape = tuple(int(t.shape[i]) for i in range(t.rank))
    return {"name": t.name.decode() if t.name else "", "dtype": DTYPES[t.dtype],
            "shape": tuple(d if d >= 0 else None for d in shape)}


class _Inputs:
    """Host arrays as a sinter_tensor array (keeps them alive)."""

    def __init__(self, inputs, names):
        if isinstance(inputs, dict):
            items = list(inputs.items())
        else:
            items = list(zip(names, inputs))
        self.keep = []
        self.arr = (Tensor * max(1, len(items)))()
        self.n = len(items)
        for i, (name, a) in enumerate(items):
            a = np.ascontiguousarray(a)
            if a.ndim > 8:
                raise SinterError(1, "input %s: rank %d, at most 8" % (name, a.ndim))
            bname = name.encode()
            self.keep += [a, bname]
            t = self.arr[i]
            t.name, t.dtype, t.rank = bname, _code(a.dtype), a.ndim
            for k, d in enumerate(a.shape):
                t.shape[k] = d
            t.data, t.nbytes = a.ctypes.data, a.nbytes


def _take_outputs(ptr, n):
    """Copies n sinter_tensors into NumPy arrays and frees them."""
    L = lib()
    try:
        outs = []
        for i in range(n):
            t = ptr[i]
            shape = tuple(int(t.shape[k]) for k in range(t.rank))
            buf = ctypes.string_at(t.data, t.nbytes) if t.nbytes else b""
            outs.append(np.frombuffer(buf, dtype=_np_dtype(t.dtype)).reshape(shape).copy())
        return outs
    finally:
        L.sinter_tensors_free(ptr, n)


class Model:
    """A model loaded from .sir or .onnx (sinter_model)."""

    def __init__(self, handle, path):
        self._h = ctypes.c_void_p(handle)
        self.path = path

    def __del__(self):
        h = getattr(self, "_h", None)
        if h and h.value:
            lib().sinter_model_free(h)
            self._h = None

    @property
    def inputs(self):
        L, t = lib(), Tensor()
        out = []
        for i in range(L.sinter_model_num_inputs(self._h)):
            check(L.sinter_model_input(self._h, i, ctypes.byref(t)), Error(1, b"bad input index"))
            out.append(_desc(t))
        return out

    @property
    def outputs(self):
        L, t = lib(), Tensor()
        out = []
        for i in range(L.sinter_model_num_outputs(self._h)):
            check(L.sinter_model_output(self._h, i, ctypes.byref(t)), Error(1, b"bad output index"))
            out.append(_desc(t))
        return out

    def text(self):
        """The canonical IR text."""
        L = lib()
        p = L.sinter_model_print(self._h)
        if not p:
            raise SinterError(4, "out of memory")
        try:
            return ctypes.string_at(p).decode()
        finally:
            L.sinter_free(p)

    def hash(self):
        buf = ctypes.create_string_buffer(33)
        lib().sinter_model_hash(self._h, buf)
        return buf.value.decode()

    def load_weights(self, path=None):
        """Params from a .safetensors file (None: the model's weights line)."""
        err = Error()
        check(lib().sinter_model_load_weights(self._h, path.encode() if path else None, ctypes.byref(err)), err)
        return self

    def init_random(self, seed=0):
        """Deterministic PyTorch-like random params."""
        err = Error()
        check(lib().sinter_model_init_random(self._h, seed, ctypes.byref(err)), err)
        return self

    def random_inputs(self, seed=0):
        """{name: array}: floats N(0, 1), gather indices in range."""
        L, err = lib(), Error()
        ptr, n = ctypes.POINTER(Tensor)(), ctypes.c_size_t()
        check(L.sinter_random_inputs(self._h, seed, ctypes.byref(ptr), ctypes.byref(n), ctypes.byref(err)), err)
        names = [ptr[i].name.decode() for i in range(n.value)]
        return dict(zip(names, _take_outputs(ptr, n.value)))

    def run(self, inputs, device="ref"):
        """Runs on NumPy arrays (a dict by input name, or a list in order) and
        returns the outputs as a list of arrays. device: "ref" (the reference
        interpreter), "cpu" or "cuda" (compiled with the default options;
        compile_model keeps the compiled model for many runs)."""
        if device in ("cpu", "cuda"):
            return compile_model(self, device=device).run(inputs)
        if device != "ref":
            raise SinterError(2, "device takes 'ref', 'cpu' or 'cuda', got %r" % (device,))
        ins = _Inputs(inputs, [d["name"] for d in self.inputs])
        L, err = lib(), Error()
        ptr = ctypes.POINTER(Tensor)()
        check(L.sinter_run_ref(self._h, ins.arr, ins.n, ctypes.byref(ptr), ctypes.byref(err)), err)
        return _take_outputs(ptr, L.sinter_model_num_outputs(self._h))


def _options(shapes):
    binds = (ShapeBinding * max(1, len(shapes or {})))()
    keep = []
    for i, (k, v) in enumerate((shapes or {}).items()):
        keep.append(k.encode())
        binds[i].name, binds[i].value = keep[-1], int(v)
    return Options(binds, len(shapes or {})), (binds, keep)


def _compile_options(mode=None, precision=None, cache_dir=None, target_sm=0, device=None, threads=0):
    o = CompileOptions()
    lib().sinter_compile_options_init(ctypes.byref(o))
    keep = []
    if device is not None:
        if device not in ("cpu", "cuda"):
            raise SinterError(2, "device takes 'cpu' or 'cuda', got %r" % (device,))
        keep.append(device.encode())
        o.device = keep[-1]
    o.threads = int(threads)
    if mode:
        keep.append(mode.encode())
        o.mode = keep[-1]
    if precision:
        p = lib().sinter_precision_parse(precision.encode())
        if p < 0:
            raise SinterError(2, "precision takes fp32, tf32, bf16, fp16 or fp8, got %r" % (precision,))
        o.precision = p
    if cache_dir is not None:
        keep.append(cache_dir.encode())
        o.cache_dir = keep[-1]
    o.target_sm = target_sm
    return o, keep


class Compiled:
    """A model compiled and loaded on the GPU or the CPU (sinter_compiled)."""

    def __init__(self, handle, stats, keep=None):
        self._h = ctypes.c_void_p(handle)
        self.stats = {k: getattr(stats, k) for k, _ in CompileStats._fields_ if not k.startswith("_")}
        self._keep = keep

    def __del__(self):
        h = getattr(self, "_h", None)
        if h and h.value:
            lib().sinter_compiled_free(h)
            self._h = None

    def _descs(self, n_fn, fn):
        L, t = lib(), Tensor()
        out = []
        for i in range(n_fn(self._h)):
            check(fn(self._h, i, ctypes.byref(t)), Error(2, b"no such tensor"))
            out.append(_desc(t))
        return out

    @property
    def inputs(self):
        L = lib()
        return self._descs(L.sinter_compiled_num_inputs, L.sinter_compiled_input)

    @property
    def outputs(self):
        L = lib()
        return self._descs(L.sinter_compiled_num_outputs, L.sinter_compiled_output)

    def run(self, inputs):
        """NumPy arrays in and out (through host memory)."""
        ins = _Inputs(inputs, [d["name"] for d in self.inputs])
        L, err = lib(), Error()
        ptr = ctypes.POINTER(Tensor)()
        check(L.sinter_compiled_run(self._h, ins.arr, ins.n, ctypes.byref(ptr), ctypes.byref(err)), err)
        return _take_outputs(ptr, L.sinter_compiled_num_outputs(self._h))

    def run_device(self, inputs, outputs, stream=None):
        """Low level: sinter_tensor-like dicts {name, dtype, shape, ptr, nbytes}
        for inputs and outputs (device addresses); stream: a CUstream as int."""
        def arr(ts):
            a = (Tensor * max(1, len(ts)))()
            keep = []
            for i, d in enumerate(ts):
                keep.append(d.get("name", "").encode())
                a[i].name, a[i].dtype, a[i].rank = keep[-1], DTYPES.index(d["dtype"]), len(d["shape"])
                for k, s in enumerate(d["shape"]):
                    a[i].shape[k] = s
                a[i].data, a[i].nbytes = d["ptr"], d["nbytes"]
            return a, keep
        ia, ik = arr(inputs)
        oa, ok = arr(outputs)
        err = Error()
        check(lib().sinter_compiled_run_device(self._h, ia, len(inputs), oa, len(outputs),
                                               ctypes.c_void_p(stream or 0), ctypes.byref(err)), err)

    def bench(self, warmup=10, iters=50):
        """Device ms of each of `iters` calls after the last run's inputs."""
        ms = (ctypes.c_double * iters)()
        err = Error()
        check(lib().sinter_compiled_bench(self._h, warmup, iters, ms, ctypes.byref(err)), err)
        return list(ms)


def load(path, shapes=None, weights=None, mode=None, cache_dir=None):
    """A .sir or .onnx file as a Model (shapes: {symbol: value}; weights: a
    .safetensors path to read now), or an AOT package (.sinterpkg) loaded as
    a Compiled on the device it was compiled for (the GPU, or the CPU for a
    package of sinter compile --device cpu)."""
    path = os.fspath(path)
    err = Error()
    if path.endswith(".sinterpkg"):
        o, keep = _compile_options(mode=mode, cache_dir=cache_dir)
        h, st = ctypes.c_void_p(), CompileStats()
        check(lib().sinter_load_package(path.encode(), ctypes.byref(o), ctypes.byref(h), ctypes.byref(st),
                                        ctypes.byref(err)), err)
        return Compiled(h.value, st, keep)
    opt, keep = _options(shapes)
    h = ctypes.c_void_p()
    check(lib().sinter_model_load(path.encode(), ctypes.byref(opt), ctypes.byref(h), ctypes.byref(err)), err)
    m = Model(h.value, path)
    if weights:
        m.load_weights(weights)
    return m


def compile_model(model, mode=None, precision=None, cache_dir=None, device=None, threads=0):
    """A Model compiled (sinter_compile) for the present GPU (device None or
    "cuda") or for this CPU (device "cpu"; threads: its worker threads, 0:
    the cores this process may use)."""
    o, keep = _compile_options(mode=mode, precision=precision, cache_dir=cache_dir, device=device, threads=threads)
    h, st, err = ctypes.c_void_p(), CompileStats(), Error()
    check(lib().sinter_compile(model._h, ctypes.byref(o), ctypes.byref(h), ctypes.byref(st), ctypes.byref(err)), err)
    return Compiled(h.value, st, keep)


def read_tensors(path):
    """{name: array} from a .safetensors file."""
    L, err = lib(), Error()
    ptr, n = ctypes.POINTER(Tensor)(), ctypes.c_size_t()
    check(L.sinter_tensors_read(os.fspath(path).encode(), ctypes.byref(ptr), ctypes.byref(n), ctypes.byref(err)),
          err)
    names = [ptr[i].name.decode() for i in range(n.value)]
    return dict(zip(names, _take_outputs(ptr, n.value)))


def write_tensors(path, tensors):
    """Writes {name: array} to a .safetensors file (atomically)."""
    ins = _Inputs(tensors, list(tensors))
    err = Error()
    check(lib().sinter_tensors_write(os.fspath(path).encode(), ins.arr, ins.n, ctypes.byref(err)), err)


def compile(module, example_inputs, mode=None, precision=None, cache_dir=None):  # noqa: A001 (torch.compile's name)
    """Compiles a torch.nn.Module for the GPU: exported with torch.onnx.export
    (the dynamo exporter) at the example inputs' shapes, then compiled by
    sinter. Returns a callable taking and returning torch CUDA tensors,
    with no host copy, on the current torch stream."""
    from ._torch import compile_module
    return compile_module(module, example_inputs, mode=mode, precision=precision, cache_dir=cache_dir)
