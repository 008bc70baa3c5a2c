"""_torch: sinter.compile for torch.nn.Module (needs torch and onnx)."""
import os
import shutil
import tempfile

import numpy as np
import torch

from . import DTYPES, SinterError, _device, _np_dtype, compile_model, cpu_available, default_device, load

_TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "i64": torch.int64,
          "i32": torch.int32, "i8": torch.int8, "u8": torch.uint8, "bool": torch.bool}
if hasattr(torch, "float8_e4m3fn"):
    _TORCH.update({"f8e4m3": torch.float8_e4m3fn, "f8e5m2": torch.float8_e5m2})
_CODE = {v: k for k, v in _TORCH.items()}
# dtypes NumPy lacks, moved through NumPy as the integers of their width
_BITS = {"bf16": (torch.int16, np.int16), "f8e4m3": (torch.uint8, np.uint8), "f8e5m2": (torch.uint8, np.uint8)}


def _to_numpy(t, dtype):
    t = t.detach().contiguous()
    if dtype in _BITS:
        return t.view(_BITS[dtype][0]).numpy().view(_np_dtype(DTYPES.index(dtype)))
    return t.numpy()


def _from_numpy(a, dtype):
    if dtype in _BITS:
        return torch.from_numpy(np.ascontiguousarray(a).view(_BITS[dtype][1])).view(_TORCH[dtype])
    return torch.from_numpy(a)


def torch_default_device():
    """The best device present that torch can feed: "cuda" when sinter and
    torch both see a GPU, else "cpu" when the library has the cpu device,
    else "ref"."""
    best = default_device()
    if best == "cuda" and not torch.cuda.is_available():
        best = "cpu" if cpu_available()[0] else "ref"
    return best


class CompiledModule:
    """Callable: torch tensors in (positional, in the exported order), torch
    tensors out (one tensor, or a tuple when the module returns several).
    Inputs must have the example inputs' dtypes and shapes, and be on the
    compiled device's side: CUDA tensors on cuda:0 for device "cuda" (no
    host copy, on the current torch stream), CPU tensors for "cpu" and
    "ref". .device names the device."""

    def __init__(self, compiled, onnx_path):
        self.compiled = compiled
        self.onnx_path = onnx_path
        self.device = compiled.device
        self.inputs = compiled.inputs
        self.outputs = compiled.outputs
        self.stats = compiled.stats

    def __repr__(self):
        return "<sinter.CompiledModule on %s, %d inputs, %d outputs>" % (self.device, len(self.inputs),
                                                                        len(self.outputs))

    _tmp = None  # device "ref": the export's folder, removed with the module

    def close(self):
        """Frees the compiled model now; further calls raise FreedError."""
        self.compiled.close()
        if self.compiled._model is not None:
            self.compiled._model.close()
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def _check(self, args):
        if len(args) != len(self.inputs):
            raise SinterError(2, "%d inputs given, the compiled module takes %d" % (len(args), len(self.inputs)))
        cuda = self.device == "cuda"
        for d, t in zip(self.inputs, args):
            if not isinstance(t, torch.Tensor):
                raise SinterError(1, "input %s: a torch tensor is needed, got %s" % (d["name"], type(t).__name__))
            if cuda and (t.device.type != "cuda" or t.device.index not in (0, None)):
                raise SinterError(1, "input %s: a torch CUDA tensor on cuda:0 is needed (compiled for cuda; "
                                  "sinter.compile(..., device='cpu') runs on CPU tensors)" % d["name"])
            if not cuda and t.device.type != "cpu":
                raise SinterError(1, "input %s: a torch CPU tensor is needed (compiled for %s), got one on %s"
                                  % (d["name"], self.device, t.device))
            if t.dtype not in _CODE:
                raise SinterError(1, "input %s: dtype %s has no sinter equivalent" % (d["name"], t.dtype))

    def __call__(self, *args):
        self._check(args)
        if self.device != "cuda":
            ins = [_to_numpy(t, _CODE[t.dtype]) for t in args]
            outs = self.compiled.run(ins)
            tensors = [_from_numpy(a, d["dtype"]) for a, d in zip(outs, self.outputs)]
            return tensors[0] if len(tensors) == 1 else tuple(tensors)
        ins, keep = [], []
        for d, t in zip(self.inputs, args):
            t = t.contiguous()  # on the device: no host copy
            keep.append(t)
            ins.append({"name": d["name"], "dtype": _CODE[t.dtype], "shape": tuple(t.shape), "ptr": t.data_ptr(),
                        "nbytes": t.numel() * t.element_size()})
        outs, tensors = [], []
        for d in self.outputs:
            o = torch.empty(d["shape"], dtype=_TORCH[d["dtype"]], device="cuda:0")
            tensors.append(o)
            outs.append({"name": d["name"], "dtype": d["dtype"], "shape": tuple(o.shape), "ptr": o.data_ptr(),
                         "nbytes": o.numel() * o.element_size()})
        stream = torch.cuda.current_stream(0).cuda_stream
        self.compiled.run_device(ins, outs, stream)
        return tensors[0] if len(tensors) == 1 else tuple(tensors)


def compile_module(module, example_inputs, mode=None, precision=None, cache_dir=None, keep_onnx=None, device=None,
                   threads=0):
    device = torch_default_device() if device is None else _device(device)
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    tmp = tempfile.mkdtemp(prefix="sinter-")
    onnx_path = keep_onnx or os.path.join(tmp, "module.onnx")
    module = module.eval()
    keep_tmp = False
    try:
        with torch.no_grad():  # the dynamo exporter, at opset 18 as scripts/coverage.py checks it
            torch.onnx.export(module, example_inputs, onnx_path, dynamo=True, opset_version=18,
                              external_data=True)
        model = load(onnx_path)
        if device == "ref":
            # the reference interpreter runs the model itself, whose weights
            # may be read from the export's files on first use: they stay
            compiled = compile_model(model, device="ref")
            keep_tmp = True
        else:
            try:
                compiled = compile_model(model, mode=mode, precision=precision, cache_dir=cache_dir, device=device,
                                         threads=threads)
            finally:
                model.close()
    finally:
        if not keep_tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    cm = CompiledModule(compiled, keep_onnx)
    cm._tmp = tmp if keep_tmp else None
    return cm
