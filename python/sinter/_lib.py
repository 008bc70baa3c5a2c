"""_lib: finds libsinter.so and declares the C API of include/sinter.h
and include/sinter_tools.h through ctypes. Every struct here mirrors one of
sinter.h; the ctest python.numpy compares the offsets with the C
compiler's. The option and stats structs start with their size: a mirror
sets it to its own ctypes.sizeof (Sized), and the library reads (or fills)
the fields that size covers, so a newer library needs no padding here."""
import ctypes
import ctypes.util
import glob
import os
import re
import shutil

MAX_RANK = 8


class SinterError(Exception):
    """A sinter call failed. status: 1 bad input, 2 usage, 3 environment,
    4 internal (the CLI's exit codes)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class FreedError(SinterError, ValueError):
    """A method of a Model or Compiled called after close() (status 2:
    usage). A ValueError too, as for a closed Python file."""

    def __init__(self, what):
        super().__init__(2, "%s was freed (close() was called): it can no longer be used" % what)


def _py_value(v):
    return v if re.fullmatch(r"-?[0-9.]+", v) else repr(v)


# The library's messages name the CLI's flags; from Python they name the
# arguments that do the same (python/README.md, Errors).
_PYTHONIC = [
    (re.compile(r"sinter compile without --device cpu"), lambda m: "compiled for cuda"),
    (re.compile(r"sinter compile --device cpu"), lambda m: "compiled with device='cpu'"),
    (re.compile(r"\(e\.g\. (\w+)=(\w+)\) when loading the model"),
     lambda m: "when loading the model (e.g. sinter.load(..., shapes={'%s': %s}))" % (m[1], m[2])),
    (re.compile(r"--shape (\w+)=(\w+)"),
     lambda m: "shapes={'%s': %s}" % (m[1], m[2] if m[2].isdigit() else "...")),
    (re.compile(r"--([a-z][a-z-]*)[ =]([\w.]+)"), lambda m: "%s=%s" % (m[1].replace("-", "_"), _py_value(m[2]))),
]


def pythonic(message):
    """message with the CLI's flags rewritten as Python arguments."""
    for rx, fn in _PYTHONIC:
        message = rx.sub(fn, message)
    return message


class Tensor(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_RANK), ("data", ctypes.c_void_p), ("nbytes", ctypes.c_size_t)]


class Error(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("message", ctypes.c_char * 4096)]


class ShapeBinding(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_int64)]


class StateBinding(ctypes.Structure):
    _fields_ = [("output", ctypes.c_char_p), ("input", ctypes.c_char_p)]


class Sized(ctypes.Structure):
    """A struct whose first field, size, is its size (sinter.h's options
    and stats): set when made, as the C API's static inline _init does."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.size = ctypes.sizeof(self)


class Options(Sized):
    _fields_ = [("size", ctypes.c_size_t), ("shapes", ctypes.POINTER(ShapeBinding)), ("nshapes", ctypes.c_size_t),
                ("states", ctypes.POINTER(StateBinding)), ("nstates", ctypes.c_size_t)]


WARN_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)


# sinter_device
DEVICE_DEFAULT, DEVICE_CUDA, DEVICE_CPU, DEVICE_REF = 0, 1, 2, 3


class CompileOptions(Sized):
    _fields_ = [("size", ctypes.c_size_t), ("device", ctypes.c_int), ("mode", ctypes.c_char_p), ("precision", ctypes.c_int), ("passes", ctypes.c_char_p),
                ("target_sm", ctypes.c_int), ("dump_dir", ctypes.c_char_p), ("cache_dir", ctypes.c_char_p),
                ("no_plan_cache", ctypes.c_bool), ("poison", ctypes.c_bool), ("no_fusion", ctypes.c_bool),
                ("max_plans", ctypes.c_int), ("warn", ctypes.c_void_p), ("warn_ctx", ctypes.c_void_p),
                ("tune_budget_s", ctypes.c_double), ("tune_kernel_s", ctypes.c_double),
                ("cache_remote", ctypes.c_char_p), ("tune_progress", ctypes.c_int), ("threads", ctypes.c_int)]


class ProfileEntry(ctypes.Structure):
    _fields_ = [("kernel", ctypes.c_char_p), ("op", ctypes.c_char_p), ("ms", ctypes.c_double),
                ("bytes", ctypes.c_double), ("flops", ctypes.c_double)]


class CompileStats(Sized):
    _fields_ = [("size", ctypes.c_size_t), ("passes_s", ctypes.c_double), ("codegen_s", ctypes.c_double),
                ("nvrtc_s", ctypes.c_double), ("load_s", ctypes.c_double), ("upload_s", ctypes.c_double), ("plan_s", ctypes.c_double),
                ("kernels", ctypes.c_size_t), ("unique_kernels", ctypes.c_size_t), ("cache_hits", ctypes.c_size_t),
                ("steps", ctypes.c_size_t), ("arena_bytes", ctypes.c_size_t), ("weight_bytes", ctypes.c_size_t),
                ("context_s", ctypes.c_double), ("key_s", ctypes.c_double), ("blas_s", ctypes.c_double),
                ("capture_s", ctypes.c_double), ("plan_hit", ctypes.c_bool), ("tune_kernels", ctypes.c_size_t),
                ("tune_from_records", ctypes.c_size_t), ("tune_tuned", ctypes.c_size_t),
                ("tune_candidates", ctypes.c_size_t), ("tune_timings", ctypes.c_size_t),
                ("tune_failed", ctypes.c_size_t), ("tune_rejected", ctypes.c_size_t), ("tune_s", ctypes.c_double),
                ("tune_speedup", ctypes.c_double), ("ref_steps", ctypes.c_size_t)]


def _candidates():
    env = os.environ.get("SINTER_LIBRARY")
    if env:
        yield env
        return
    exe = shutil.which("sinter")
    if exe:
        prefix = os.path.dirname(os.path.dirname(os.path.realpath(exe)))
        for sub in ("lib", "lib64", "lib/*-linux-gnu"):
            yield from sorted(glob.glob(os.path.join(prefix, sub, "libsinter.so.0")))
            # the build folder holds the command beside the library
        yield os.path.join(os.path.dirname(os.path.realpath(exe)), "libsinter.so.0")
    found = ctypes.util.find_library("sinter")
    if found:
        yield found
    yield "libsinter.so.0"  # LD_LIBRARY_PATH and the loader's cache
    build = os.environ.get("SINTER_BUILD_DIR")
    if build:
        yield os.path.join(build, "libsinter.so.0")
    try:
        from ._where import SOURCE_DIR
    except ImportError:  # not installed: running from the source tree
        SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    yield os.path.join(SOURCE_DIR, "build", "libsinter.so.0")


def _open():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise SinterError(3, "libsinter.so not found; set SINTER_LIBRARY to its path or install sinter "
                      "(cmake --install). Tried: " + "; ".join(tried))


_lib = None
path = None

P = ctypes.POINTER
c_status = ctypes.c_int
_PROTOS = {
    "sinter_version": (ctypes.c_char_p, []),
    "sinter_dtype_name": (ctypes.c_char_p, [ctypes.c_int]),
    "sinter_dtype_size": (ctypes.c_size_t, [ctypes.c_int]),
    "sinter_model_load": (c_status, [ctypes.c_char_p, P(Options), P(ctypes.c_void_p), P(Error)]),
    "sinter_model_parse": (c_status, [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, P(Options),
                                      P(ctypes.c_void_p), P(Error)]),
    "sinter_model_free": (None, [ctypes.c_void_p]),
    "sinter_model_print": (c_status, [ctypes.c_void_p, P(ctypes.c_void_p), P(Error)]),
    "sinter_model_hash": (None, [ctypes.c_void_p, ctypes.c_char_p]),
    "sinter_model_num_inputs": (ctypes.c_size_t, [ctypes.c_void_p]),
    "sinter_model_num_outputs": (ctypes.c_size_t, [ctypes.c_void_p]),
    "sinter_model_num_symbols": (ctypes.c_size_t, [ctypes.c_void_p]),
    "sinter_model_input": (c_status, [ctypes.c_void_p, ctypes.c_size_t, P(Tensor), P(Error)]),
    "sinter_model_output": (c_status, [ctypes.c_void_p, ctypes.c_size_t, P(Tensor), P(Error)]),
    "sinter_model_load_weights": (c_status, [ctypes.c_void_p, P(ctypes.c_char_p), ctypes.c_size_t, ctypes.c_char_p,
                                             P(Error)]),
    "sinter_model_init_random": (c_status, [ctypes.c_void_p, ctypes.c_uint64, P(Error)]),
    "sinter_model_optimize": (c_status, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                         ctypes.c_int, ctypes.c_char_p, P(Error)]),
    "sinter_precision_parse": (c_status, [ctypes.c_char_p, P(ctypes.c_int), P(Error)]),
    "sinter_model_random_inputs": (c_status, [ctypes.c_void_p, ctypes.c_uint64, P(P(Tensor)), P(ctypes.c_size_t),
                                        P(Error)]),
    "sinter_model_run_ref": (c_status, [ctypes.c_void_p, P(Tensor), ctypes.c_size_t, P(P(Tensor)), P(Error)]),
    "sinter_device_name": (ctypes.c_char_p, [ctypes.c_int]),
    "sinter_device_available": (c_status, [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, P(Error)]),
    "sinter_model_compile": (c_status, [ctypes.c_void_p, P(CompileOptions), P(ctypes.c_void_p), P(CompileStats),
                                  P(Error)]),
    "sinter_model_compile_kernels": (c_status, [ctypes.c_void_p, P(CompileOptions), ctypes.c_char_p, P(CompileStats),
                                          P(Error)]),
    "sinter_package_load": (c_status, [ctypes.c_char_p, P(CompileOptions), P(ctypes.c_void_p),
                                       P(CompileStats), P(Error)]),
    "sinter_compiled_num_inputs": (ctypes.c_size_t, [ctypes.c_void_p]),
    "sinter_compiled_num_outputs": (ctypes.c_size_t, [ctypes.c_void_p]),
    "sinter_compiled_input": (c_status, [ctypes.c_void_p, ctypes.c_size_t, P(Tensor), P(Error)]),
    "sinter_compiled_output": (c_status, [ctypes.c_void_p, ctypes.c_size_t, P(Tensor), P(Error)]),
    "sinter_compiled_free": (None, [ctypes.c_void_p]),
    "sinter_compiled_device": (ctypes.c_int, [ctypes.c_void_p]),
    "sinter_compiled_run": (c_status, [ctypes.c_void_p, P(Tensor), ctypes.c_size_t, P(P(Tensor)), P(Error)]),
    "sinter_compiled_run_device": (c_status, [ctypes.c_void_p, P(Tensor), ctypes.c_size_t, P(Tensor),
                                              ctypes.c_size_t, ctypes.c_void_p, P(Error)]),
    "sinter_compiled_state_read": (c_status, [ctypes.c_void_p, P(P(Tensor)), P(ctypes.c_size_t), P(Error)]),
    "sinter_compiled_state_write": (c_status, [ctypes.c_void_p, P(Tensor), ctypes.c_size_t, P(Error)]),
    "sinter_compiled_state_reset": (c_status, [ctypes.c_void_p, P(Error)]),
    "sinter_compiled_bench": (c_status, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, P(ctypes.c_double),
                                         P(Error)]),
    "sinter_compiled_profile": (c_status, [ctypes.c_void_p, ctypes.c_int, P(P(ProfileEntry)), P(ctypes.c_size_t),
                                           P(Error)]),
    "sinter_tensors_read": (c_status, [ctypes.c_char_p, P(P(Tensor)), P(ctypes.c_size_t), P(Error)]),
    "sinter_tensors_write": (c_status, [ctypes.c_char_p, P(Tensor), ctypes.c_size_t, P(Error)]),
    "sinter_tensors_free": (None, [P(Tensor), ctypes.c_size_t]),
    "sinter_free": (None, [ctypes.c_void_p]),
}


def lib():
    """The loaded library, its functions declared (loaded on first use)."""
    global _lib, path
    if _lib is None:
        so, where = _open()
        for name, (res, args) in _PROTOS.items():
            fn = getattr(so, name)
            fn.restype = res
            fn.argtypes = args
        _lib, path = so, where
    return _lib


def check(status, err):
    if status != 0:
        raise SinterError(status, pythonic(err.message.decode("utf-8", "replace")))
