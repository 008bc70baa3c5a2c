"""_torch: sinter.compile for torch.nn.Module (needs torch and onnx)."""
import os
import shutil
import tempfile

import torch

from . import DTYPES, SinterError, compile_model, load

_TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "i64": torch.int64,
          "i32": torch.int32, "i8": torch.int8, "u8": torch.uint8, "bool": torch.bool}
if hasattr(torch, "float8_e4m3fn"):
    _TORCH.update({"f8e4m3": torch.float8_e4m3fn, "f8e5m2": torch.float8_e5m2})
_CODE = {v: k for k, v in _TORCH.items()}


class CompiledModule:
    """Callable: torch CUDA tensors in (positional, in the exported order),
    torch CUDA tensors out (one tensor, or a tuple when the module returns
    several). Inputs must have the example inputs' dtypes and shapes."""

    def __init__(self, compiled, onnx_path):
        self.compiled = compiled
        self.onnx_path = onnx_path
        self.inputs = compiled.inputs
        self.outputs = compiled.outputs
        self.stats = compiled.stats

    def __call__(self, *args):
        if len(args) != len(self.inputs):
            raise SinterError(2, "%d inputs given, the compiled module takes %d" % (len(args), len(self.inputs)))
        ins, keep = [], []
        for d, t in zip(self.inputs, args):
            if not isinstance(t, torch.Tensor) or t.device.type != "cuda" or t.device.index not in (0, None):
                raise SinterError(1, "input %s: a torch CUDA tensor on cuda:0 is needed" % d["name"])
            t = t.contiguous()  # on the device: no host copy
            keep.append(t)
            if t.dtype not in _CODE:
                raise SinterError(1, "input %s: dtype %s has no sinter equivalent" % (d["name"], t.dtype))
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


def compile_module(module, example_inputs, mode=None, precision=None, cache_dir=None, keep_onnx=None):
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    tmp = tempfile.mkdtemp(prefix="sinter-")
    onnx_path = keep_onnx or os.path.join(tmp, "module.onnx")
    module = module.eval()
    try:
        with torch.no_grad():  # the dynamo exporter, at opset 18 as scripts/coverage.py checks it
            torch.onnx.export(module, example_inputs, onnx_path, dynamo=True, opset_version=18,
                              external_data=True)
        model = load(onnx_path)
        compiled = compile_model(model, mode=mode, precision=precision, cache_dir=cache_dir)
        del model
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return CompiledModule(compiled, keep_onnx)
