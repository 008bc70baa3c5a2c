#!/usr/bin/env python3
"""run_node_tests.py: the ONNX project's own backend node tests, run on
sinter's reference interpreter.

The onnx package defines its node tests in onnx/backend/test/case/node/*.py:
each case is a model (usually one node) with inputs and the expected
outputs, which the ONNX project computes with numpy independently of any
runtime (the data/node/ directory that older wheels ship, and that
`backend-test-tools generate-data` writes, is made from these). This script
collects the cases in memory (or reads such a directory with --data), and
runs every case whose op types are all claimed by sinter's importer:

  sinter run CASE/model.onnx --device ref --inputs in.safetensors -o out.safetensors

The inputs are written with the safetensors writer below (not sinter's),
named by their ONNX names (sinter keeps graph input and output names as
the model spells them); the outputs, found by their ONNX names, are
compared with the expected ones: same dtype and
shape; integers and bools equal; floats with numpy isclose (rtol 1e-4,
atol 1e-5, or the dtype's own resolution for f16, bf16 and fp8), NaN at
the same places. Cases run in parallel (os.cpu_count() workers).

Skipped, each with its reason in the summary: ops sinter does not claim,
other domains (ai.onnx.ml, preview), opsets outside what the importer
reads, dtypes sinter lacks (double, string, int16, uint16/32/64, complex,
4-bit, fp8 variants other than e4m3fn and e5m2), sequence/optional values,
and the cases listed in SKIP_CASES with a reason.

usage: run_node_tests.py SINTER [--jobs N] [-k REGEX] [--data DIR] [--keep DIR]
                         [--opset-max N] [--timeout S] [--device ref|cuda] [-v]
Exit 0 when every case run passed, 1 when one failed, 2 on bad usage.

The helpers (safetensors writer and reader, name sanitizing, error
measures) are imported by crosscheck_ort.py and scripts/onnx_gpu_check.py.
"""
import argparse
import collections
import concurrent.futures
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

try:
    import ml_dtypes
except ImportError:  # bf16 and fp8 tensors are then skipped
    ml_dtypes = None

# The ONNX ops sinter's importer claims (docs/ONNX.md, "Supported ops";
# frontend/onnx_ops.c holds the table). `sinter import --list-ops`, when the
# command has it, overrides this set. Keep the two in sync.
SUPPORTED = {
    "Abs", "Add", "And", "ArgMax", "ArgMin", "AveragePool", "BatchNormalization", "Cast",
    "CastLike", "Ceil", "Celu", "Clip", "Concat", "Constant", "ConstantOfShape", "Conv",
    "ConvTranspose", "Cos", "CumSum", "Div", "Dropout", "Einsum", "Elu", "Equal", "Erf",
    "Exp", "Expand", "Flatten", "Floor", "Gather", "GatherElements", "GatherND", "Gelu",
    "Gemm", "GlobalAveragePool", "GlobalMaxPool", "Greater", "GreaterOrEqual",
    "GridSample", "GroupNormalization", "GRU", "HardSigmoid", "HardSwish", "Identity",
    "InstanceNormalization",
    "IsInf", "IsNaN", "LayerNormalization", "LeakyRelu", "Less", "LessOrEqual", "Log", "LSTM",
    "LogSoftmax", "MatMul", "Max", "MaxPool", "Mean", "Min", "Mish", "Mod", "Mul", "Neg",
    "NonZero", "Not", "OneHot", "Or", "PRelu", "Pad", "Pow", "Range", "Reciprocal",
    "ReduceL1", "ReduceL2", "ReduceLogSum",
    "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceSum",
    "ReduceSumSquare", "Relu", "Reshape", "Resize", "RNN", "Round", "ScatterElements", "ScatterND",
    "Selu", "Shape", "Sigmoid", "Sign", "Sin", "Size", "Slice", "Softmax", "Softplus",
    "Softsign", "Split", "Sqrt", "Squeeze", "Sub", "Sum", "Tanh", "ThresholdedRelu", "Tile",
    "TopK", "Transpose", "Trilu", "Unsqueeze", "Where", "Xor",
}
# Claimed only for values known at import time (sinter has no such op): a
# case that applies them to a graph input runs as its "folded" variant, the
# inputs made initializers, so that the importer evaluates the whole graph.
# (Ceil, Cos, Floor and Sin were such ops until they became IR ops.)
FOLD_ONLY = set()
OPSET_MIN, OPSET_MAX = 11, 22  # the default-domain opsets the importer reads

# Cases of claimed ops that are skipped on purpose, each a deliberate limit
# of the importer or of sinter's ops (docs/ONNX.md, "Limits"): reason -> names.
_SKIPS = {
    "training-mode dropout draws a random mask (sinter compiles inference)": (
        "test_training_dropout", "test_training_dropout_default",
        "test_training_dropout_default_mask", "test_training_dropout_mask"),
    "3-d pooling: sinter pools are 2-d (1-d ones run as 2-d of height 1)": (
        "test_averagepool_3d_default", "test_averagepool_3d_dilations_small",
        "test_averagepool_3d_dilations_large_count_include_pad_is_0_ceil_mode_is_False",
        "test_averagepool_3d_dilations_large_count_include_pad_is_0_ceil_mode_is_True",
        "test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_False",
        "test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_True",
        "test_maxpool_3d_default", "test_maxpool_3d_dilations",
        "test_maxpool_3d_dilations_use_ref_impl", "test_maxpool_3d_dilations_use_ref_impl_large"),
    "AveragePool with dilations: sinter's avg_pool2d has no dilation": (
        "test_averagepool_2d_dilations",),
    "BatchNormalization in training mode (batch statistics, running-mean outputs)": (
        "test_batchnorm_epsilon_training_mode", "test_batchnorm_example_training_mode"),
    "MaxPool's Indices output (argmax): sinter's max_pool2d has none": (
        "test_maxpool_with_argmax_2d_precomputed_pads",
        "test_maxpool_with_argmax_2d_precomputed_strides"),
    "Resize with antialias when downsampling: no antialiasing filter yet": (
        "test_resize_downsample_scales_cubic_antialias",
        "test_resize_downsample_scales_linear_antialias",
        "test_resize_downsample_sizes_cubic_antialias",
        "test_resize_downsample_sizes_linear_antialias"),
    # onnxruntime (and PyTorch) map align_corners with the integer output
    # length, (in - 1) / (out - 1); the ONNX reference implementation that
    # computed these expectations uses the unrounded in * scale (2.4 for 4
    # at 0.6). sinter follows onnxruntime (crosscheck_ort.py, resize_edges).
    "Resize align_corners by a scale whose in * scale is not an integer (onnxruntime's integer length is followed)": (
        "test_resize_downsample_scales_cubic_align_corners",
        "test_resize_downsample_scales_linear_align_corners"),
    "Resize tf_crop_and_resize (TensorFlow's crop boxes; PyTorch never emits it)": (
        "test_resize_tf_crop_and_resize", "test_resize_tf_crop_and_resize_axes_2_3",
        "test_resize_tf_crop_and_resize_axes_3_2", "test_resize_tf_crop_and_resize_extrapolation_value"),
    "NonZero of a graph input: its output shape depends on the values (known inputs fold)": (
        "test_nonzero_example",),
    "Pow of an integer base: sinter's pow is float only": (
        "test_pow_types_int32_float32", "test_pow_types_int32_int32",
        "test_pow_types_int64_float32", "test_pow_types_int64_int64"),
}
SKIP_CASES = {name: reason for reason, names in _SKIPS.items() for name in names}

# Cases whose expected values are given to fewer digits than RTOL asks:
# name -> (rtol, why). Listed in the summary; every other check still holds.
CASE_RTOL = {
    # The expanded Attention function in bf16/fp16 rounds every intermediate
    # to the low dtype; the expected values are the fused op's, rounded once.
    "test_attention_4d_attn_mask_causal_bf16_expanded": (
        2e-2, "bf16 intermediates of the expanded function; expected values rounded once"),
    "test_attention_4d_causal_bf16_expanded": (
        2e-2, "bf16 intermediates of the expanded function; expected values rounded once"),
    "test_attention_4d_causal_fp16_expanded": (
        2e-3, "fp16 intermediates of the expanded function; expected values rounded once"),
    "test_averagepool_2d_ceil_last_window_starts_on_pad": (
        5e-4, "expected values typed to 4 digits (0.1511); the exact mean 1.3595/9 = 0.151056 is "
              "what sinter and onnx.reference give"),
    "test_gridsample_bicubic": (
        5e-4, "expected values typed to 4 digits (-0.1406); onnxruntime and sinter give -0.140625"),
}

RTOL, ATOL = 1e-4, 1e-5


# ---- helpers shared with crosscheck_ort.py and scripts/onnx_gpu_check.py ----

# numpy dtype name -> safetensors dtype, for the dtypes sinter has (ir/ir.h:
# f32 f16 bf16 f8e4m3 f8e5m2 i64 i32 i8 u8 bool).
ST_OF = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "float8_e4m3fn": "F8_E4M3",
         "float8_e5m2": "F8_E5M2", "int64": "I64", "int32": "I32", "int8": "I8",
         "uint8": "U8", "bool": "BOOL"}
NP_OF = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64,
         "I32": np.int32, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}
if ml_dtypes is not None:
    NP_OF.update({"BF16": ml_dtypes.bfloat16, "F8_E4M3": ml_dtypes.float8_e4m3fn,
                  "F8_E5M2": ml_dtypes.float8_e5m2})
else:
    for k in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        del ST_OF[k]
# Resolution (1 ulp at 1) of the low-precision float dtypes: the tolerance
# of a result that was rounded to one.
EPS_OF = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float8_e4m3fn": 2.0 ** -3,
          "float8_e5m2": 2.0 ** -2}


def sanitize(name):
    """An ONNX value name as sinter named graph inputs and outputs before it
    kept them verbatim (still accepted in inputs files): every character
    outside [A-Za-z0-9_.] becomes '_'."""
    return re.sub(r"[^A-Za-z0-9_.]", "_", name)


def st_dtype(a):
    """The safetensors dtype of a numpy array, or None if sinter lacks it."""
    return ST_OF.get(np.asarray(a).dtype.name)


def write_st(path, tensors):
    """Writes {name: numpy array} to a safetensors file (8-byte header
    length, JSON header, little-endian data aligned to 8 bytes)."""
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        a = np.asarray(a).copy(order="C")  # (ascontiguousarray makes 0-d arrays 1-d)
        dt = st_dtype(a)
        if dt is None:
            raise ValueError(f"{name}: dtype {a.dtype} has no sinter equivalent")
        data = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_st(path):
    """Reads a safetensors file into {name: numpy array of its own dtype}."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: truncated safetensors file")
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] not in NP_OF:
            raise ValueError(f"{path}: {name}: dtype {t['dtype']} not readable here")
        b, e = t["data_offsets"]
        a = np.frombuffer(data[b:e], dtype=np.dtype(NP_OF[t["dtype"]]).newbyteorder("<"))
        out[name] = a.reshape(t["shape"])
    return out


def run_cmd(cmd, timeout):
    """Runs a command; returns (exit code, stdout and stderr). A time-out
    is exit code 124 with a message, as timeout(1) reports it."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        return p.returncode, p.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout} s"


def first_line(text, limit=240):
    """The first line of sinter's message that says something, cut to limit."""
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line[:limit]
    return "(no output)"


def rel_l2(ref, got):
    """Relative L2 error of got against ref, in float64; a NaN or inf in
    got where ref is finite is an infinite error."""
    r = np.asarray(ref, dtype=np.float64)
    g = np.asarray(got, dtype=np.float64)
    if r.shape != g.shape:
        return float("inf")
    if not np.isfinite(g[np.isfinite(r)]).all():
        return float("inf")
    den = np.linalg.norm(r)
    return float(np.linalg.norm(g - r) / (den if den > 0 else 1.0))


def compare(name, want, got, rtol=RTOL):
    """None if got matches the expected array want (dtype, shape, values),
    else what differs. rtol: the relative tolerance of f32 values."""
    want, got = np.asarray(want), np.asarray(got)
    if got.dtype != want.dtype:
        return f"{name}: dtype {got.dtype}, expected {want.dtype}"
    if got.shape != want.shape:
        return f"{name}: shape {list(got.shape)}, expected {list(want.shape)}"
    kind = want.dtype.name
    if kind in ("float32", "float16") or kind in EPS_OF:
        w, g = want.astype(np.float64), got.astype(np.float64)
        eps = EPS_OF.get(kind, 0.0)
        rtol, atol = max(rtol, eps), max(ATOL, eps * 1e-3)
        bad = ~np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    else:
        w, g = want, got
        bad = g != w
    if not bad.any():
        return None
    i = np.argwhere(bad)[0]
    idx = tuple(int(k) for k in i)
    return (f"{name}: {int(bad.sum())} of {bad.size} elements differ, first at {list(idx)}: "
            f"got {g[idx]!r}, expected {w[idx]!r}")


# ---- the cases ----

class Case:
    """One node test: name, model (ModelProto), inputs and expected outputs
    (lists of numpy arrays, or None for a value that is not a tensor)."""

    def __init__(self, name, model, inputs, outputs):
        self.name, self.model, self.inputs, self.outputs = name, model, inputs, outputs
        self.label = ""  # the op it tests, for the table
        self.retargeted = None  # the opset it was generated at, if run at another
        self.static = 0  # inputs made initializers (STATIC_SLOTS)


def to_array(x):
    """A test value as a numpy array; None for a sequence, map or optional."""
    from onnx import TensorProto, numpy_helper
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, TensorProto):
        return numpy_helper.to_array(x)
    if isinstance(x, (np.generic, bool, int, float)):
        return np.asarray(x)
    return None


def collect_generated():
    """Every node case of the installed onnx package, generated in memory."""
    import onnx.backend.test.case.node as node
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cases = node.collect_testcases(None)
    out = []
    for c in cases:
        if c.kind != "node" or c.model is None:
            continue
        ins, outs = c.data_sets[0]
        out.append(Case(c.name, c.model, [to_array(x) for x in ins], [to_array(x) for x in outs]))
    return out


def collect_dir(root):
    """Cases from a directory laid out as onnx/backend/test/data/node."""
    import onnx
    out = []
    for name in sorted(os.listdir(root)):
        d = os.path.join(root, name)
        mpath = os.path.join(d, "model.onnx")
        dpath = os.path.join(d, "test_data_set_0")
        if not os.path.isfile(mpath) or not os.path.isdir(dpath):
            continue
        model = onnx.load(mpath, load_external_data=False)

        def load(prefix, n):
            vals = []
            for j in range(n):
                p = os.path.join(dpath, f"{prefix}_{j}.pb")
                t = onnx.TensorProto()
                try:
                    with open(p, "rb") as f:
                        t.ParseFromString(f.read())
                    vals.append(to_array(t))
                except Exception:  # a sequence or optional: not a TensorProto
                    vals.append(None)
            return vals
        out.append(Case(name, model, load("input", len(model.graph.input)),
                        load("output", len(model.graph.output))))
    return out


def label_cases(cases):
    """Each case's label: the op type of its one-node base case; an
    expanded function body ("_expanded") is labelled "Op (expanded)"."""
    base_op = {}
    for c in cases:
        nodes = c.model.graph.node
        if "_expanded" not in c.name and len(nodes) == 1:
            base_op[c.name] = nodes[0].op_type
    for c in cases:
        if "_expanded" in c.name:
            op = base_op.get(c.name.split("_expanded")[0])
            c.label = f"{op} (expanded)" if op else "(expanded)"
        else:
            c.label = base_op.get(c.name) or (c.model.graph.node[0].op_type if c.model.graph.node else "?")


def all_nodes(graph):
    """Every node of graph and of its subgraphs (If, Loop, Scan bodies)."""
    for nd in graph.node:
        yield nd
        for a in nd.attribute:
            if a.HasField("g"):
                yield from all_nodes(a.g)
            for g in a.graphs:
                yield from all_nodes(g)


_HISTORY = {}


def _signature(s):
    """What an op version means apart from its types: attributes (with
    defaults), inputs and outputs (with their optionality)."""
    attrs = sorted((k, int(a.type), a.required, a.default_value.SerializeToString())
                   for k, a in s.attributes.items())
    return (attrs, [(i.name, int(i.option)) for i in s.inputs],
            [(o.name, int(o.option)) for o in s.outputs])


def same_meaning(op, v, t):
    """True if op means the same at opsets v and t: the same op version, or
    versions between them that only change the type constraints (the ONNX
    changelog's "added types" bumps, e.g. Reshape 21 -> 25)."""
    import onnx.defs
    if not _HISTORY:
        for s in onnx.defs.get_all_schemas_with_history():
            if s.domain == "":
                _HISTORY.setdefault(s.name, []).append(s)
        for h in _HISTORY.values():
            h.sort(key=lambda s: s.since_version)
    h = _HISTORY.get(op)
    if not h:
        return False
    lo, hi = min(v, t), max(v, t)
    at = [s for s in h if s.since_version <= lo]
    if not at:
        return False
    chain = [at[-1]] + [s for s in h if lo < s.since_version <= hi]
    sig = _signature(chain[0])
    return all(_signature(s) == sig for s in chain[1:])


def retarget(c, ops, opset_max):
    """A case generated at an opset outside OPSET_MIN..opset_max is run at
    the nearest opset inside when every op of it means the same there and
    onnx's checker accepts the model at that opset (so its dtypes are
    allowed by that op version). Returns None (c.model updated) or why not."""
    import onnx
    m = c.model
    opset = [o for o in m.opset_import if o.domain in ("", "ai.onnx")]
    if not opset:
        return "no opset of the default domain"
    v = opset[0].version
    t = min(max(v, OPSET_MIN), opset_max)
    if v == t:
        return None
    why = f"opset {v}, not expressible at opset {t}"
    changed = sorted(op for op in ops if not same_meaning(op, v, t))
    if changed:
        return why + " (" + ", ".join(changed) + " changed)"
    m2 = onnx.ModelProto()
    m2.CopyFrom(m)
    for o in m2.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = t
    try:
        onnx.checker.check_model(m2, full_check=True)
    except Exception:
        return why + " (types not allowed there)"
    c.model = m2
    c.retargeted = v
    return None


# Operands that sinter needs known at import time (shapes, axes, pads, ...):
# op type -> input indices. The node tests feed them as graph inputs; a
# compiler takes them as constants, so the runner makes every graph input
# that reaches one of these (through any nodes) an initializer.
STATIC_SLOTS = {
    "Reshape": {1}, "Expand": {1}, "ConstantOfShape": {0}, "Tile": {1},
    "Slice": {1, 2, 3, 4}, "Pad": {1, 2, 3}, "Split": {1}, "Squeeze": {1}, "Unsqueeze": {1},
    "Trilu": {1}, "Range": {0, 1, 2}, "Dropout": {1, 2}, "Resize": {1, 2, 3}, "TopK": {1},
    "OneHot": {1}, "CumSum": {1}, "ReduceSum": {1}, "ReduceMean": {1}, "ReduceMax": {1},
    "ReduceMin": {1}, "ReduceProd": {1}, "ReduceL1": {1}, "ReduceL2": {1},
    "ReduceLogSum": {1}, "ReduceLogSumExp": {1}, "ReduceSumSquare": {1},
}


def static_inputs(c):
    """Makes the graph inputs that feed a STATIC_SLOTS operand
    initializers; returns how many."""
    from onnx import numpy_helper
    m = c.model
    need = set()
    for nd in m.graph.node:
        for i in STATIC_SLOTS.get(nd.op_type, ()):
            if i < len(nd.input) and nd.input[i]:
                need.add(nd.input[i])
    grew = True
    while grew:  # whatever computes a static value must be static too
        grew = False
        for nd in m.graph.node:
            if any(o in need for o in nd.output):
                for x in nd.input:
                    if x and x not in need:
                        need.add(x)
                        grew = True
    init = {t.name for t in m.graph.initializer}
    real = [vi for vi in m.graph.input if vi.name not in init]
    moved, keep_vi, keep_vals = 0, [], []
    for vi, v in zip(real, c.inputs):
        if vi.name in need:
            m.graph.initializer.append(numpy_helper.from_array(np.asarray(v), vi.name))
            moved += 1
        else:
            keep_vi.append(vi)
            keep_vals.append(v)
    if moved:
        rest = [vi for vi in m.graph.input if vi.name in init]
        del m.graph.input[:]
        m.graph.input.extend(keep_vi + rest)
        c.inputs = keep_vals
        c.static = moved
    return moved


def fold(c):
    """Makes c's inputs initializers: the importer then evaluates the whole
    graph and the model has no inputs."""
    from onnx import numpy_helper
    m = c.model
    init = {t.name for t in m.graph.initializer}
    names = [vi.name for vi in m.graph.input if vi.name not in init]
    for n, v in zip(names, c.inputs):
        m.graph.initializer.append(numpy_helper.from_array(np.asarray(v), n))
    keep = [vi for vi in m.graph.input if vi.name in init]
    del m.graph.input[:]
    m.graph.input.extend(keep)
    c.inputs = []
    c.label += " (folded)"


def skip_reason(c, supported, opset_max):
    """Why case c is not run, or None."""
    m = c.model
    if c.name in SKIP_CASES:
        return SKIP_CASES[c.name]
    ops, doms = set(), set()
    for nd in all_nodes(m.graph):
        if nd.domain not in ("", "ai.onnx"):
            doms.add(nd.domain)
        ops.add(nd.op_type)
    if doms:
        return "domain " + ", ".join(sorted(doms))
    if m.functions:
        return "model-local functions"
    missing = sorted(ops - supported)
    if missing:
        return "op not claimed: " + ", ".join(missing)
    why = retarget(c, ops, opset_max)
    if why:
        return why
    if ops & FOLD_ONLY:
        fold(c)
    else:
        static_inputs(c)
    m = c.model  # retarget may have replaced it
    for vi in list(m.graph.input) + list(m.graph.output):
        if not vi.type.HasField("tensor_type"):
            return "sequence, map or optional value"
    for kind, vals in (("input", c.inputs), ("output", c.outputs)):
        for v in vals:
            if v is None:
                return "sequence, map or optional value"
            if st_dtype(v) is None:
                dt = np.asarray(v).dtype
                return "dtype " + ("string" if dt.kind in "OUS" else dt.name)
    init = {t.name for t in m.graph.initializer}
    if len([vi for vi in m.graph.input if vi.name not in init]) != len(c.inputs):
        return "inputs in the data set do not match the graph's"
    return None


def run_case(c, sinter, work, timeout, device="ref"):
    """Runs one case; returns (name, failure message or None, seconds)."""
    t0 = time.monotonic()
    d = os.path.join(work, c.name)
    os.makedirs(d, exist_ok=True)
    mpath = os.path.join(d, "model.onnx")
    with open(mpath, "wb") as f:
        f.write(c.model.SerializeToString())
    init = {t.name for t in c.model.graph.initializer}
    names = [vi.name for vi in c.model.graph.input if vi.name not in init]
    ins = dict(zip(names, c.inputs))  # named as the model names them
    ipath, opath = os.path.join(d, "in.safetensors"), os.path.join(d, "out.safetensors")
    write_st(ipath, ins)  # empty for a model without inputs
    cmd = [sinter, "run", mpath, "--device", device, "--inputs", ipath, "-o", opath]
    if device != "ref":
        cmd += ["--precision", "fp32"]
    rc, text = run_cmd(cmd, timeout)
    if rc != 0:
        kind = "refused" if rc == 1 else "crashed"
        return c.name, (kind, f"exit {rc}: {first_line(text)}"), time.monotonic() - t0
    try:
        got = read_st(opath)
    except (OSError, ValueError) as ex:
        return c.name, ("wrong", f"output file: {ex}"), time.monotonic() - t0
    errs = []
    for vi, want in zip(c.model.graph.output, c.outputs):
        n = vi.name
        if n not in got:
            errs.append(f"{n}: missing from the outputs ({', '.join(sorted(got)) or 'none'})")
            continue
        msg = compare(n, want, got[n], CASE_RTOL.get(c.name, (RTOL,))[0])
        if msg:
            errs.append(msg)
    return c.name, (("wrong", "; ".join(errs)) if errs else None), time.monotonic() - t0


def claimed_ops(sinter):
    """`sinter import --list-ops` if the command has it (op types separated
    by white space or commas), else SUPPORTED. Says where SUPPORTED and the
    importer's table (frontend/onnx_ops.c, when this runs from the source
    tree) differ."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "frontend",
                       "onnx_ops.c")
    if os.path.isfile(src):
        with open(src, encoding="utf-8") as f:
            table = set(re.findall(r'^\s*\{"([A-Z][A-Za-z0-9]*)",\s*(?:ox_)?tr_', f.read(), re.M))
        if table and table != SUPPORTED:
            print("note: SUPPORTED here and frontend/onnx_ops.c differ: only in the table: "
                  f"{sorted(table - SUPPORTED)}; only here: {sorted(SUPPORTED - table)}")
    rc, text = run_cmd([sinter, "import", "--list-ops"], 60)
    ops = set(re.findall(r"\b[A-Z][A-Za-z0-9]*\b", text)) if rc == 0 else set()
    if ops:
        if ops != SUPPORTED:
            print(f"note: sinter claims {len(ops)} ops; SUPPORTED here differs by "
                  f"{sorted(ops ^ SUPPORTED)}")
        return ops, "sinter import --list-ops"
    return set(SUPPORTED), "SUPPORTED in this script"


def wrap(words, width=100, indent="    "):
    lines, line = [], indent
    for w in words:
        if len(line) + len(w) + 2 > width and line.strip():
            lines.append(line.rstrip(", "))
            line = indent
        line += w + ", "
    lines.append(line.rstrip(", "))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sinter", help="the sinter command")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    ap.add_argument("-k", dest="pattern", help="only cases whose name matches this regex")
    ap.add_argument("--data", help="a directory of cases (onnx/backend/test/data/node layout)")
    ap.add_argument("--keep", help="keep the work files in this directory")
    ap.add_argument("--opset-max", type=int, default=OPSET_MAX)
    ap.add_argument("--timeout", type=float, default=300, help="seconds per case")
    ap.add_argument("--device", default="ref",
                    help="ref (default) or cuda (run with --precision fp32; same tolerances)")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every skipped case")
    a = ap.parse_args()
    if not os.access(a.sinter, os.X_OK):
        print(f"run_node_tests: {a.sinter}: not an executable", file=sys.stderr)
        return 2

    import onnx
    t0 = time.monotonic()
    cases = collect_dir(a.data) if a.data else collect_generated()
    label_cases(cases)
    if a.pattern:
        cases = [c for c in cases if re.search(a.pattern, c.name)]
    supported, source = claimed_ops(a.sinter)
    print(f"onnx {onnx.__version__}: {len(cases)} node cases "
          f"({'from ' + a.data if a.data else 'generated'}); {len(supported)} ops claimed ({source})")

    skips, todo = {}, []
    for c in cases:
        r = skip_reason(c, supported, a.opset_max)
        if r:
            skips[c.name] = r
        else:
            todo.append(c)

    work = a.keep or tempfile.mkdtemp(prefix="sinter-onnx-node-")
    os.makedirs(work, exist_ok=True)
    fails = {}
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
            futs = [ex.submit(run_case, c, a.sinter, work, a.timeout, a.device) for c in todo]
            for f in concurrent.futures.as_completed(futs):
                name, err, _ = f.result()
                if err:
                    fails[name] = err
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)

    # Counts by op: the claimed ops, and the expanded bodies that ran.
    rows = collections.defaultdict(lambda: [0, 0, 0])
    by_label = {c.name: c.label for c in cases}
    for c in cases:
        op = c.label.split(" ")[0]
        if op not in supported and c.name in skips:
            continue
        r = rows[c.label]
        if c.name in skips:
            r[2] += 1
        elif c.name in fails:
            r[1] += 1
        else:
            r[0] += 1
    print(f"\n{'op':34} {'pass':>5} {'fail':>5} {'skip':>5}")
    for label in sorted(rows):
        p, f, s = rows[label]
        print(f"{label:34} {p:5} {f:5} {s:5}{'  FAIL' if f else ''}")

    # Skips by reason: ops not claimed are listed by op, others by case.
    unclaimed = collections.Counter()
    reasons = collections.defaultdict(list)
    for name, r in skips.items():
        if r.startswith("op not claimed: "):
            for op in r[len("op not claimed: "):].split(", "):
                unclaimed[op] += 1
        else:
            reasons[r].append(name)
    print(f"\nskipped: {len(skips)} cases")
    if unclaimed:
        print(f"  ops not claimed ({sum(1 for r in skips.values() if r.startswith('op not'))} cases):")
        print(wrap([f"{op} ({n})" for op, n in sorted(unclaimed.items())]))
    for r in sorted(reasons, key=lambda r: (-len(reasons[r]), r)):
        names = sorted(reasons[r])
        shown = names if a.verbose or len(names) <= 8 else names[:8] + [f"... {len(names) - 8} more"]
        print(f"  {r} ({len(names)} cases):")
        print(wrap(shown))

    titles = {"wrong": "wrong results (values, dtype, shape or output names)",
              "refused": "refused by sinter (exit 1: an unsupported feature or a bad model)",
              "crashed": "crashed, timed out or internal error"}
    for kind, title in titles.items():
        names = sorted(n for n, (k, _) in fails.items() if k == kind)
        if names:
            print(f"\nfailing cases, {title} ({len(names)}):")
            for name in names:
                print(f"  {name} [{by_label[name]}]: {fails[name][1]}")
    moved = collections.Counter(c.retargeted for c in todo if c.retargeted)
    if moved:
        print(f"\nrun at an opset other than generated (same op versions up to added types): "
              + ", ".join(f"{n} from opset {v}" for v, n in sorted(moved.items())))
    loose = sorted(c.name for c in todo if c.name in CASE_RTOL)
    for name in loose:
        print(f"compared at rtol {CASE_RTOL[name][0]:g}: {name} ({CASE_RTOL[name][1]})")
    nstatic = sum(1 for c in todo if c.static)
    if nstatic:
        print(f"shape-like operands (STATIC_SLOTS) made initializers in {nstatic} cases")
    npass = len(todo) - len(fails)
    print(f"\n{len(cases)} node cases in {time.monotonic() - t0:.1f} s")
    print(f"onnx-node: {npass} passed, {len(fails)} failed, {len(skips)} skipped")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
