"""sinter: a graph compiler for neural networks, from Python.

    m = sinter.load("model.sir", shapes={"N": 2})     # .sir or .onnx (packages: load_package)
    m.init_random(0)                                  # or m.load_weights(path)
    outs = m.run(x)                                   # NumPy in and out; outs.device names the device
    c = sinter.compile_model(m)                       # compiled once, run many times
    fast = sinter.compile(module, (example,))         # torch tensors in and out
    y = fast(example)

One device rule on every entry point (Model.run, compile_model,
load_package's check, compile): device=None is the best device present,
default_device(): "cuda" when a GPU is usable, else "cpu" when the library
has the cpu device, else "ref" (the reference interpreter); device= names
one of them. Results name the device they ran on (Outputs.device,
Compiled.device, repr).

Pure Python over libsinter.so (ctypes); see _lib for how it is found."""
import contextlib
import ctypes
import enum
import os
import threading

import numpy as np

from ._lib import (SinterError, FreedError, check, lib, Tensor, Error, Options, ShapeBinding, StateBinding,
                   CompileOptions, CompileStats, ProfileEntry, DEVICE_DEFAULT, DEVICE_CUDA, DEVICE_CPU, DEVICE_REF)

__all__ = ["load", "load_package", "compile", "compile_model", "compile_package", "Model", "Compiled", "Outputs",
           "SinterError", "FreedError", "version", "default_device", "device_available", "cuda_available",
           "cpu_available", "read_tensors", "write_tensors", "Device", "DEVICES"]

# sinter_dtype order (sinter.h)
DTYPES = ["f32", "f16", "bf16", "f8e4m3", "f8e5m2", "i64", "i32", "i8", "u8", "bool"]
_FLOAT = ("f32", "f16", "bf16", "f8e4m3", "f8e5m2")
_NP = {"f32": np.float32, "f16": np.float16, "i64": np.int64, "i32": np.int32, "i8": np.int8, "u8": np.uint8,
       "bool": np.bool_}
try:  # NumPy has no bfloat16 or float8; ml_dtypes (onnx's dependency) has
    import ml_dtypes
    _NP.update({"bf16": ml_dtypes.bfloat16, "f8e4m3": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2})
except ImportError:
    pass

class Device(str, enum.Enum):
    """The devices (sinter.h's sinter_device). A Device is its name as a str: device="cpu" and
    device=sinter.Device.CPU are the same, and Compiled.device == "cpu"
    holds."""
    CUDA = "cuda"
    CPU = "cpu"
    REF = "ref"

    def __str__(self):
        return self.value


# the devices, best first: default_device() is the first one present
DEVICES = (Device.CUDA, Device.CPU, Device.REF)
_C_DEVICE = {Device.CUDA: DEVICE_CUDA, Device.CPU: DEVICE_CPU, Device.REF: DEVICE_REF}


def version():
    """The library's version (sinter_version)."""
    return lib().sinter_version().decode()


def __getattr__(name):  # module attribute, looked up on first use (PEP 562)
    if name == "__version__":
        try:
            return version()
        except SinterError:  # no library found: the package's own
            from importlib import metadata
            try:
                return metadata.version("sinter")
            except metadata.PackageNotFoundError:
                return "unknown"
    raise AttributeError("module 'sinter' has no attribute %r" % name)


def device_available(device):
    """(True, what it is) or (False, why not) for device "cuda" or "cpu"
    (sinter_device_available); "ref" is always present."""
    device = _device(device)
    if device == Device.REF:
        return True, "the reference interpreter"
    info = ctypes.create_string_buffer(512)
    st = lib().sinter_device_available(_C_DEVICE[device], info, len(info), None)
    return st == 0, info.value.decode()


def cuda_available():
    """(True, device name) or (False, why not)."""
    return device_available(Device.CUDA)


def cpu_available():
    """(True, what it runs on) or (False, why not): the cpu device (LLVM's
    JIT and OpenBLAS), absent from a library built without them."""
    return device_available(Device.CPU)


_default = None


def default_device():
    """The device used where none is named: "cuda" when a GPU is usable,
    else "cpu" when the library has the cpu device, else "ref" (the
    reference interpreter, always present). Found once per process, as the
    CLI's `sinter run` finds it."""
    global _default
    if _default is None:
        _default = Device.CUDA if cuda_available()[0] else Device.CPU if cpu_available()[0] else Device.REF
    return _default


def _device(device, allowed=DEVICES):
    """device as a Device (None: the best present)."""
    if device is None:
        return default_device()
    if device not in allowed:
        raise SinterError(2, "device takes %s (or None: the best present, %r), got %r"
                          % (", ".join(repr(str(d)) for d in allowed), str(default_device()), device))
    return Device(device)


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


def _fmt(descs):
    return ", ".join("%s: %s[%s]" % (d["name"], d["dtype"], ",".join("?" if s is None else str(s) for s in d["shape"]))
                     for d in descs)


def _convert(name, a, desc):
    """a as an array for input `name` (desc: its description, or None for
    a name the model lacks). float64 (NumPy's and Python's default) becomes
    the input's float dtype, correctly rounded, as the CLI reads a float64
    .npy or .npz (float32 where the input is unknown: the library then names
    the bad input); float64 for an integer or bool input is refused."""
    a = np.asarray(a)
    if a.dtype == np.float64:
        want = desc["dtype"] if desc else "f32"
        if want not in _FLOAT:
            raise SinterError(1, "input %s: float64 values for a %s input; convert them explicitly (astype)"
                              % (name, want))
        a = a.astype(_np_dtype(DTYPES.index(want)))
    return np.ascontiguousarray(a)


class _Inputs:
    """Host arrays as a sinter_tensor array (keeps them alive). inputs: a
    dict by input name, a list or tuple in the inputs' order, or one array
    (anything np.asarray takes) for a model of one input."""

    def __init__(self, inputs, descs, convert=True):
        names = [d["name"] for d in descs]
        if isinstance(inputs, dict):
            items = list(inputs.items())
        elif isinstance(inputs, (list, tuple)):
            if len(inputs) != len(names):
                hint = "; a list or tuple holds one array per input: pass one array alone" if len(names) == 1 else ""
                raise SinterError(1, "%d inputs given, the model takes %d (%s)%s"
                                  % (len(inputs), len(names), _fmt(descs), hint))
            items = list(zip(names, inputs))
        elif len(names) == 1:
            items = [(names[0], inputs)]
        else:
            raise SinterError(2, "one array given, the model takes %d inputs (%s): pass a list in this order or "
                              "a dict by name" % (len(names), _fmt(descs)))
        by_name = {d["name"]: d for d in descs}
        self.keep = []
        self.arr = (Tensor * max(1, len(items)))()
        self.n = len(items)
        for i, (name, a) in enumerate(items):
            a = _convert(name, a, by_name.get(name)) if convert else np.ascontiguousarray(a)
            if a.ndim > 8:
                raise SinterError(1, "input %s: rank %d, at most 8" % (name, a.ndim))
            bname = name.encode()
            self.keep += [a, bname]
            t = self.arr[i]
            t.name, t.dtype, t.rank = bname, _code(a.dtype), a.ndim
            for k, d in enumerate(a.shape):
                t.shape[k] = d
            t.data, t.nbytes = a.ctypes.data, a.nbytes


class Outputs(list):
    """A run's outputs: a list of NumPy arrays, in the model's output order,
    with .device, the device they were computed on."""

    def __init__(self, arrays, device):
        super().__init__(arrays)
        self.device = device


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


class _Handle:
    """A library handle that several threads may use (shared) or one alone
    (exclusive), as include/sinter.h's thread rules say; close() waits for
    its users, then frees it once. A use after close() raises FreedError
    (a segfault in the library otherwise). Uses do not nest."""

    def __init__(self, value, free, what):
        self.value, self.free, self.what = value, free, what
        self.cv = threading.Condition()
        self.users = 0
        self.alone = False

    @contextlib.contextmanager
    def use(self, exclusive=False):
        with self.cv:
            while self.value and (self.alone or (exclusive and self.users)):
                self.cv.wait()
            if not self.value:
                raise FreedError(self.what)
            self.users += 1
            self.alone = exclusive
        try:
            yield ctypes.c_void_p(self.value)
        finally:
            with self.cv:
                self.users -= 1
                self.alone = False
                self.cv.notify_all()

    def close(self):
        with self.cv:
            while self.users:
                self.cv.wait()
            value, self.value = self.value, None
            self.cv.notify_all()
        if value:
            self.free(ctypes.c_void_p(value))


def _model_descs(h, n_fn, fn):
    t, out, err = Tensor(), [], Error()
    for i in range(n_fn(h)):
        check(fn(h, i, ctypes.byref(t), ctypes.byref(err)), err)
        out.append(_desc(t))
    return out


class Model:
    """A model loaded from .sir or .onnx (sinter_model). close() (or a with
    block) frees it now; any use after that raises FreedError."""

    def __init__(self, handle, path):
        self._h = _Handle(handle, lib().sinter_model_free, "model")
        self.path = path

    def close(self):
        """Frees the model now (sinter_model_free), after the runs of other
        threads in progress. Further calls raise FreedError; a second close
        does nothing."""
        h = getattr(self, "_h", None)
        if h is not None:
            h.close()

    free = close

    @property
    def closed(self):
        return not self._h.value

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone
            pass

    def __repr__(self):
        if self.closed:
            return "<sinter.Model %r (freed)>" % (self.path,)
        return "<sinter.Model %r (%s) -> (%s)>" % (self.path, _fmt(self.inputs), _fmt(self.outputs))

    @property
    def inputs(self):
        L = lib()
        with self._h.use() as h:
            return _model_descs(h, L.sinter_model_num_inputs, L.sinter_model_input)

    @property
    def outputs(self):
        L = lib()
        with self._h.use() as h:
            return _model_descs(h, L.sinter_model_num_outputs, L.sinter_model_output)

    def text(self):
        """The canonical IR text."""
        L, err, p = lib(), Error(), ctypes.c_void_p()
        with self._h.use() as h:
            check(L.sinter_model_print(h, ctypes.byref(p), ctypes.byref(err)), err)
        try:
            return ctypes.string_at(p).decode()
        finally:
            L.sinter_free(p)

    def hash(self):
        buf = ctypes.create_string_buffer(33)
        with self._h.use() as h:
            lib().sinter_model_hash(h, buf)
        return buf.value.decode()

    def load_weights(self, paths=None, prefix=None):
        """Params from safetensors files (sinter_model_load_weights): a path,
        or a list of them read as one set of keys (a sharded checkpoint's
        index .json among them); None: the model's weights line. prefix: a
        key prefix one side carries ("model."); None guesses it, "" takes
        keys as they are."""
        if paths is None:
            paths = []
        elif isinstance(paths, (str, bytes, os.PathLike)):
            paths = [paths]
        arr = (ctypes.c_char_p * max(1, len(paths)))(*[os.fsencode(p) for p in paths])
        err = Error()
        with self._h.use(exclusive=True) as h:
            check(lib().sinter_model_load_weights(h, arr, len(paths), None if prefix is None else prefix.encode(),
                                                  ctypes.byref(err)), err)
        return self

    def init_random(self, seed=0):
        """Deterministic PyTorch-like random params."""
        err = Error()
        with self._h.use(exclusive=True) as h:
            check(lib().sinter_model_init_random(h, seed, ctypes.byref(err)), err)
        return self

    def random_inputs(self, seed=0):
        """{name: array}: floats N(0, 1), gather indices in range."""
        L, err = lib(), Error()
        ptr, n = ctypes.POINTER(Tensor)(), ctypes.c_size_t()
        with self._h.use() as h:
            check(L.sinter_model_random_inputs(h, seed, ctypes.byref(ptr), ctypes.byref(n), ctypes.byref(err)), err)
        names = [ptr[i].name.decode() for i in range(n.value)]
        return dict(zip(names, _take_outputs(ptr, n.value)))

    def run(self, inputs, device=None):
        """Runs on NumPy arrays and returns the outputs (Outputs: a list of
        arrays with .device). inputs: a dict by input name, a list or tuple
        in order, or one array for a model of one input; float64 becomes the
        input's float dtype. device: None (the best present,
        default_device()), "cuda", "cpu" (compiled with the default options
        for this call: compile_model keeps one for many runs) or "ref" (the
        reference interpreter, in float64)."""
        device = _device(device)
        if device != "ref":
            c = compile_model(self, device=device)
            try:
                return c.run(inputs)
            finally:
                c.close()
        with self._h.use() as h:
            descs = _model_descs(h, lib().sinter_model_num_inputs, lib().sinter_model_input)
            ins = _Inputs(inputs, descs)
            L, err = lib(), Error()
            ptr = ctypes.POINTER(Tensor)()
            check(L.sinter_model_run_ref(h, ins.arr, ins.n, ctypes.byref(ptr), ctypes.byref(err)), err)
            return Outputs(_take_outputs(ptr, L.sinter_model_num_outputs(h)), Device.REF)


def _options(shapes, states=None):
    binds = (ShapeBinding * max(1, len(shapes or {})))()
    keep = []
    for i, (k, v) in enumerate((shapes or {}).items()):
        keep.append(k.encode())
        binds[i].name, binds[i].value = keep[-1], int(v)
    sts = (StateBinding * max(1, len(states or {})))()
    for i, (out, inp) in enumerate((states or {}).items()):
        keep += [out.encode(), inp.encode()]
        sts[i].output, sts[i].input = keep[-2], keep[-1]
    return (Options(shapes=binds, nshapes=len(shapes or {}), states=sts, nstates=len(states or {})),
            (binds, sts, keep))


def _compile_options(mode=None, precision=None, cache_dir=None, target_sm=0, device=None, threads=0):
    o = CompileOptions()  # size set, the rest zero: the defaults
    keep = []
    o.device = DEVICE_DEFAULT if device is None else _C_DEVICE[Device(device)]
    o.threads = int(threads)
    if mode:
        keep.append(mode.encode())
        o.mode = keep[-1]
    if precision:
        p = ctypes.c_int()
        if lib().sinter_precision_parse(precision.encode(), ctypes.byref(p), None):
            raise SinterError(2, "precision takes fp32, tf32, bf16, fp16 or fp8, got %r" % (precision,))
        o.precision = p.value
    if cache_dir is not None:
        keep.append(os.fsencode(cache_dir))
        o.cache_dir = keep[-1]
    o.target_sm = target_sm
    return o, keep


class Compiled:
    """A model compiled for a device (sinter_compiled: cuda or cpu; or, for
    device "ref", the model itself run by the reference interpreter).
    .device names it. One thread runs it at a time (runs from several
    threads take turns). close() (or a with block) frees it now; any use
    after that raises FreedError."""

    def __init__(self, handle, stats, keep=None, model=None):
        self._model = model  # device "ref": the Model it runs
        self._h = _Handle(handle, lib().sinter_compiled_free, "compiled model") if model is None else None
        if self._h is not None:
            with self._h.use() as h:
                self.device = Device(lib().sinter_device_name(lib().sinter_compiled_device(h)).decode())
        else:
            self.device = Device.REF
        self.stats = {k: getattr(stats, k) for k, _ in CompileStats._fields_ if k != "size"} if stats else {}
        self._keep = keep
        self._closed = False

    def close(self):
        """Frees it now (sinter_compiled_free), after a run in progress.
        Further calls raise FreedError; a second close does nothing."""
        self._closed = True
        h = getattr(self, "_h", None)
        if h is not None:
            h.close()

    free = close

    @property
    def closed(self):
        return self._closed or (self._h is not None and not self._h.value)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone
            pass

    def __repr__(self):
        if self.closed:
            return "<sinter.Compiled on %s (freed)>" % self.device
        return "<sinter.Compiled on %s (%s) -> (%s)>" % (self.device, _fmt(self.inputs), _fmt(self.outputs))

    @contextlib.contextmanager
    def _use(self, exclusive=False):
        if self._closed:
            raise FreedError("compiled model")
        with self._h.use(exclusive) as h:
            yield h

    @property
    def inputs(self):
        if self._h is None:
            return self._ref().inputs
        L = lib()
        with self._use() as h:
            return _model_descs(h, L.sinter_compiled_num_inputs, L.sinter_compiled_input)

    @property
    def outputs(self):
        if self._h is None:
            return self._ref().outputs
        L = lib()
        with self._use() as h:
            return _model_descs(h, L.sinter_compiled_num_outputs, L.sinter_compiled_output)

    def _ref(self):
        if self._closed:
            raise FreedError("compiled model")
        return self._model

    def run(self, inputs):
        """NumPy arrays in (as for Model.run) and out (through host memory):
        Outputs, a list with .device."""
        if self._h is None:
            return self._ref().run(inputs, device="ref")
        L, err = lib(), Error()
        with self._use(exclusive=True) as h:
            ins = _Inputs(inputs, _model_descs(h, L.sinter_compiled_num_inputs, L.sinter_compiled_input))
            ptr = ctypes.POINTER(Tensor)()
            check(L.sinter_compiled_run(h, ins.arr, ins.n, ctypes.byref(ptr), ctypes.byref(err)), err)
            return Outputs(_take_outputs(ptr, L.sinter_compiled_num_outputs(h)), self.device)

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
        if self._h is None:
            raise SinterError(2, "run_device needs a model compiled for cuda; this one runs on ref")
        ia, ik = arr(inputs)
        oa, ok = arr(outputs)
        err = Error()
        with self._use(exclusive=True) as h:
            check(lib().sinter_compiled_run_device(h, ia, len(inputs), oa, len(outputs),
                                                   ctypes.c_void_p(stream or 0), ctypes.byref(err)), err)

    def _state_handle(self):
        if self._h is None:
            raise SinterError(2, "state needs a model compiled for cpu or cuda here (device \"ref\" runs the "
                                 "model once per call, from zeroed state)")
        return self._h

    def state(self):
        """The model's states (docs/DESIGN.md, State: what runs accumulate,
        a KV cache) as a dict of name -> NumPy array, copies."""
        L, err = lib(), Error()
        with self._state_handle().use(exclusive=True) as h:
            ptr, n = ctypes.POINTER(Tensor)(), ctypes.c_size_t()
            check(L.sinter_compiled_state_read(h, ctypes.byref(ptr), ctypes.byref(n), ctypes.byref(err)), err)
            names = [ptr[i].name.decode() for i in range(n.value)]
            return dict(zip(names, _take_outputs(ptr, n.value)))

    def set_state(self, states):
        """Replaces the states named in the dict (name -> array of the
        state's dtype and shape); the others stay."""
        arrays = [(name.encode(), np.ascontiguousarray(a)) for name, a in states.items()]
        arr = (Tensor * max(1, len(arrays)))()
        for i, (name, a) in enumerate(arrays):
            arr[i].name, arr[i].dtype, arr[i].rank = name, _code(a.dtype), a.ndim
            for k, s in enumerate(a.shape):
                arr[i].shape[k] = s
            arr[i].data, arr[i].nbytes = a.ctypes.data, a.nbytes
        err = Error()
        with self._state_handle().use(exclusive=True) as h:
            check(lib().sinter_compiled_state_write(h, arr, len(arrays), ctypes.byref(err)), err)

    def reset_state(self):
        """Zeroes every state."""
        err = Error()
        with self._state_handle().use(exclusive=True) as h:
            check(lib().sinter_compiled_state_reset(h, ctypes.byref(err)), err)

    def bench(self, warmup=10, iters=50):
        """Device ms of each of `iters` calls after the last run's inputs."""
        if self._h is None:
            raise SinterError(2, "bench needs a model compiled for cuda or cpu; this one runs on ref")
        ms = (ctypes.c_double * iters)()
        err = Error()
        with self._use(exclusive=True) as h:
            check(lib().sinter_compiled_bench(h, warmup, iters, ms, ctypes.byref(err)), err)
        return list(ms)

    def profile(self, iters=20):
        """Each step of the plan timed over `iters` calls with the last run's
        inputs (cuda: launched alone, CUDA events; cpu: where it runs, the
        steps running one after another): a list, in plan order, of dicts
        with kernel, op, ms (per call), bytes and flops."""
        if self._h is None:
            raise SinterError(2, "profile needs a model compiled for cuda or cpu; this one runs on ref")
        p = ctypes.POINTER(ProfileEntry)()
        n = ctypes.c_size_t()
        err = Error()
        with self._use(exclusive=True) as h:
            check(lib().sinter_compiled_profile(h, iters, ctypes.byref(p), ctypes.byref(n), ctypes.byref(err)), err)
        try:
            return [{"kernel": p[i].kernel.decode(), "op": p[i].op.decode(), "ms": p[i].ms, "bytes": p[i].bytes,
                     "flops": p[i].flops} for i in range(n.value)]
        finally:
            lib().sinter_free(p)


def _package_kind(path):
    """"cpu" or "cuda" for a sinter package (by its first bytes), else None."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError:
        return None
    return {b"SINTCPUP": "cpu", b"SINTPLAN": "cuda"}.get(head)


def load(path, shapes=None, weights=None, states=None):
    """A .sir or .onnx file as a Model (shapes: {symbol: value}; weights: a
    .safetensors path to read now; states: {output: input}, each input kept
    as state across runs of a compiled model and updated by that output, as
    the CLI's --state OUT=IN). A compiled package (.sinterpkg) is refused:
    load_package loads it."""
    path = os.fspath(path)
    if path.endswith(".sinterpkg") or _package_kind(path):
        raise SinterError(2, "%s is a compiled package, not a model: sinter.load_package(%r) loads it"
                          % (path, path))
    err = Error()
    opt, keep = _options(shapes, states)
    h = ctypes.c_void_p()
    check(lib().sinter_model_load(os.fsencode(path), ctypes.byref(opt), ctypes.byref(h), ctypes.byref(err)), err)
    m = Model(h.value, path)
    if weights:
        m.load_weights(weights)
    return m


def load_package(path, device=None, mode=None, threads=0):
    """An AOT package (sinter compile -o FILE.sinterpkg) as a Compiled, on
    the device it was compiled for (a CUDA package on the GPU, a cpu
    package on this CPU; Compiled.device names it). device: None (the
    package's), or "cuda"/"cpu" to insist (the other kind is refused).
    threads: the cpu device's worker threads (0: the cores this process may
    use)."""
    path = os.fspath(path)
    if device is not None:
        _device(device, ("cuda", "cpu"))
    o, keep = _compile_options(mode=mode, device=device, threads=threads)
    h, st, err = ctypes.c_void_p(), CompileStats(), Error()
    check(lib().sinter_package_load(os.fsencode(path), ctypes.byref(o), ctypes.byref(h), ctypes.byref(st),
                                    ctypes.byref(err)), err)
    return Compiled(h.value, st, keep)


def compile_model(model, mode=None, precision=None, cache_dir=None, device=None, threads=0):
    """A Model compiled (sinter_model_compile) for device: None (the best present,
    default_device()), "cuda" (the present GPU), "cpu" (this CPU; threads:
    its worker threads, 0: the cores this process may use) or "ref" (no
    compilation: runs use the reference interpreter on the model, which
    must then stay open). The Compiled is independent of the model on cuda
    and cpu: the model may be closed after."""
    if not isinstance(model, Model):
        raise TypeError("compile_model takes a sinter.Model (sinter.load), got %s" % type(model).__name__)
    device = _device(device)
    if device == "ref":
        with model._h.use():  # refuses a freed model now
            pass
        return Compiled(None, None, model=model)
    o, keep = _compile_options(mode=mode, precision=precision, cache_dir=cache_dir, device=device, threads=threads)
    h, st, err = ctypes.c_void_p(), CompileStats(), Error()
    with model._h.use() as mh:
        check(lib().sinter_model_compile(mh, ctypes.byref(o), ctypes.byref(h), ctypes.byref(st), ctypes.byref(err)), err)
    return Compiled(h.value, st, keep)


def compile_package(model, path, device=None, mode=None, precision=None, cache_dir=None, target_sm=0):
    """Writes an AOT package of model (its weights loaded) to path, to run
    later with load_package where no compiler is present
    (sinter_model_compile_kernels): for device "cpu" (this CPU's features) or
    "cuda" (sm target_sm, 90 when 0; no GPU needed to write one); None: the
    best present, default_device(), which must then not be "ref". Returns
    the compile stats."""
    if not isinstance(model, Model):
        raise TypeError("compile_package takes a sinter.Model (sinter.load), got %s" % type(model).__name__)
    device = _device(device)
    if device == "ref":
        raise SinterError(2, "a package is compiled for device 'cuda' or 'cpu'; the reference interpreter runs the "
                          "model itself (no cuda or cpu device here: name one with device=)")
    o, keep = _compile_options(mode=mode, precision=precision, cache_dir=cache_dir, target_sm=target_sm,
                               device=device)
    st, err = CompileStats(), Error()
    with model._h.use() as mh:
        check(lib().sinter_model_compile_kernels(mh, ctypes.byref(o), os.fsencode(os.fspath(path)), ctypes.byref(st),
                                           ctypes.byref(err)), err)
    return {k: getattr(st, k) for k, _ in CompileStats._fields_ if k != "size"}


def read_tensors(path):
    """{name: array} from a .safetensors, .npz or .npy file."""
    L, err = lib(), Error()
    ptr, n = ctypes.POINTER(Tensor)(), ctypes.c_size_t()
    check(L.sinter_tensors_read(os.fsencode(os.fspath(path)), ctypes.byref(ptr), ctypes.byref(n),
                                ctypes.byref(err)), err)
    names = [ptr[i].name.decode() for i in range(n.value)]
    return dict(zip(names, _take_outputs(ptr, n.value)))


def write_tensors(path, tensors):
    """Writes {name: array} to a .safetensors, .npz or .npy file (atomically)."""
    ins = _Inputs(tensors, [{"name": k} for k in tensors], convert=False)
    err = Error()
    check(lib().sinter_tensors_write(os.fsencode(os.fspath(path)), ins.arr, ins.n, ctypes.byref(err)), err)


def compile(module, example_inputs, mode=None, precision=None, cache_dir=None, device=None,  # noqa: A001
            threads=0):
    """Compiles a torch.nn.Module (torch.compile's analogue): exported with
    torch.onnx.export (the dynamo exporter) at the example inputs' shapes,
    then compiled by sinter for device: None (the best present that torch
    can feed: "cuda" when both sinter and torch see a GPU, else "cpu", else
    "ref"), "cuda", "cpu" or "ref". Returns a callable taking and returning
    torch tensors on that device's side: CUDA tensors with no host copy on
    the current torch stream (cuda), CPU tensors (cpu, ref). Its .device
    names the device."""
    from ._torch import compile_module
    return compile_module(module, example_inputs, mode=mode, precision=precision, cache_dir=cache_dir,
                          device=device, threads=threads)
