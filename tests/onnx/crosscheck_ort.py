#!/usr/bin/env python3
"""crosscheck_ort.py: small models built with onnx.helper run in
onnxruntime (CPU) and in sinter's reference interpreter; the outputs must
agree within 1e-5 relative L2 error.

The models, with weights drawn at random as initializers:
  convnet        Conv + BatchNormalization + Relu, MaxPool, a residual block
                 (Add), a depthwise Conv (group), a strided Conv,
                 GlobalAveragePool, Flatten, a Gemm head; batch dim symbolic
                 (run at two batch sizes); opset 17
  convnet_ext    the same model saved with its weights as external data
                 (convnet_ext.onnx.data beside it)
  block_where    a pre-norm transformer block: LayerNormalization, fused QKV
                 MatMul, Split, Reshape/Transpose into heads, attention via
                 MatMul/Softmax with a causal mask made at import time from
                 Shape -> Gather -> Concat -> ConstantOfShape -> Trilu and
                 applied with Where, GELU in the Erf form; opset 17
  block_gelu     the same block with an additive causal mask (Trilu of a
                 constant) and the Gelu op (exact); opset 20
  block_gelu_tanh  as block_gelu with Gelu approximate="tanh"; opset 20
  unet           a diffusion-style UNet block: GroupNormalization, SiLU,
                 Conv, ConvTranspose (stride 2, output_padding, groups),
                 Resize (nearest asymmetric floor, linear
                 pytorch_half_pixel, cubic align_corners, linear
                 half_pixel by sizes), InstanceNormalization, LeakyRelu,
                 PRelu, Elu, Mish, Softplus, a 1-d ConvTranspose; opset 21
  lm_ops         the ops of language-model exports: CumSum (exclusive,
                 reverse), IsNaN/IsInf with Where, GatherElements,
                 ScatterElements (add), ScatterND, Einsum (attention
                 scores, batched matmul, outer product, a sum), ArgMax,
                 ReduceLogSumExp, ReduceL2, Tile, Mod, Round, Floor, Ceil,
                 Sin, Cos, TopK, GatherND (batch_dims 1), Sum, Sign,
                 Selu, Softsign; opset 18
  opset11        (input `x:0` and outputs `sm:0`, `ga/out`: names kept as
                 ONNX spells them; the .sir path is fed `x_0`, the old
                 sanitized spelling, which binds too) opset 11's forms:
                 Softmax and LogSoftmax over the 2-d view
                 (axis 1 of a rank-4 input), ReduceSum/Unsqueeze/Squeeze/
                 Split with axes and sizes as attributes, Resize with an
                 empty roi, Clip with tensor bounds, ArgMax, Gather
  resize_edges   Resize where onnxruntime's float arithmetic decides: an
                 output length from a float scale (12 * float(7/12) -> 7),
                 a round_prefer_ceil tie, pytorch_half_pixel resized to 1,
                 align_corners by a scale, a cubic scale that keeps the
                 length (a copy); opset 18
Each model runs as `sinter run M.onnx --device ref` and, through
`sinter import M.onnx -o M.sir`, as `sinter run M.sir --device ref` (the
import path of a user who keeps the IR).

usage: crosscheck_ort.py SINTER [--seed S] [--keep DIR] [--tol T]
The seed is random unless given (or set in SINTER_SEED) and is printed, so a
failure can be replayed. Exit 0 if every comparison passes, else 1.
"""
import argparse
import os
import random
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_node_tests import first_line, read_st, rel_l2, run_cmd, sanitize, write_st  # noqa: E402

import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

F = TensorProto.FLOAT


class Builder:
    """Nodes and initializers of one graph, with fresh value names."""

    def __init__(self, rng):
        self.rng, self.nodes, self.inits, self.n = rng, [], [], 0

    def name(self, base):
        self.n += 1
        return f"{base}_{self.n}"

    def init(self, base, a):
        n = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(a), n))
        return n

    def w(self, base, shape, scale):
        return self.init(base, (self.rng.standard_normal(shape) * scale).astype(np.float32))

    def op(self, op_type, inputs, nout=1, **attrs):
        outs = [self.name(op_type.lower()) for _ in range(nout)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=self.name("n_" + op_type),
                                           **attrs))
        return outs[0] if nout == 1 else outs

    def model(self, name, inputs, outputs, opset):
        g = helper.make_graph(self.nodes, name, inputs, outputs, initializer=self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="sinter-crosscheck")
        m.ir_version = 8
        onnx.checker.check_model(m, full_check=True)
        return m


# ---- the conv net ----

def conv_bn(b, x, cin, cout, k, stride=1, group=1, relu=True):
    fan = cin // group * k * k
    w = b.w("conv.w", (cout, cin // group, k, k), 1.0 / np.sqrt(fan))
    y = b.op("Conv", [x, w], kernel_shape=[k, k], strides=[stride, stride],
             pads=[k // 2] * 4, group=group)
    rng = b.rng
    scale = b.init("bn.scale", rng.uniform(0.5, 1.5, cout).astype(np.float32))
    bias = b.init("bn.bias", (rng.standard_normal(cout) * 0.1).astype(np.float32))
    mean = b.init("bn.mean", (rng.standard_normal(cout) * 0.1).astype(np.float32))
    var = b.init("bn.var", rng.uniform(0.5, 2.0, cout).astype(np.float32))
    y = b.op("BatchNormalization", [y, scale, bias, mean, var], epsilon=1e-5)
    return b.op("Relu", [y]) if relu else y


def convnet(rng):
    b = Builder(rng)
    x = "image"
    y = conv_bn(b, x, 3, 16, 3)
    y = b.op("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    skip = y
    y = conv_bn(b, y, 16, 16, 3)
    y = conv_bn(b, y, 16, 16, 3, group=16)          # depthwise
    y = conv_bn(b, y, 16, 16, 1, relu=False)
    y = b.op("Relu", [b.op("Add", [y, skip])])       # residual
    y = conv_bn(b, y, 16, 32, 3, stride=2)
    y = b.op("Flatten", [b.op("GlobalAveragePool", [y])], axis=1)
    w = b.w("fc.w", (10, 32), 1.0 / np.sqrt(32))
    bias = b.w("fc.b", (10,), 0.1)
    out = b.op("Gemm", [y, w, bias], transB=1, alpha=1.0, beta=1.0)
    b.nodes[-1].output[0] = "logits"
    inputs = [helper.make_tensor_value_info(x, F, ["N", 3, 32, 32])]
    outputs = [helper.make_tensor_value_info("logits", F, ["N", 10])]
    del out
    return b.model("convnet", inputs, outputs, 17)


# ---- the transformer block ----

def block(rng, mask, gelu, opset, T=16, D=64, H=4, FF=256):
    b = Builder(rng)
    x = "hidden_states"
    dh = D // H

    def ln(v):
        g = b.init("ln.g", rng.uniform(0.5, 1.5, D).astype(np.float32))
        be = b.init("ln.b", (rng.standard_normal(D) * 0.1).astype(np.float32))
        return b.op("LayerNormalization", [v, g, be], axis=-1, epsilon=1e-5)

    def linear(v, din, dout):
        y = b.op("MatMul", [v, b.w("lin.w", (din, dout), 1.0 / np.sqrt(din))])
        return b.op("Add", [y, b.w("lin.b", (dout,), 0.1)])

    h = ln(x)
    qkv = linear(h, D, 3 * D)
    q, k, v = b.op("Split", [qkv, b.init("split", np.array([D, D, D], np.int64))], nout=3, axis=-1)
    heads = b.init("heads", np.array([0, 0, H, dh], np.int64))   # 0: copy the dim
    q = b.op("Transpose", [b.op("Reshape", [q, heads])], perm=[0, 2, 1, 3])
    k = b.op("Transpose", [b.op("Reshape", [k, heads])], perm=[0, 2, 3, 1])
    v = b.op("Transpose", [b.op("Reshape", [v, heads])], perm=[0, 2, 1, 3])
    s = b.op("Mul", [b.op("MatMul", [q, k]), b.init("scale", np.array(1 / np.sqrt(dh), np.float32))])
    if mask == "where":
        # [T, T] of true from the input's shape, lower triangle kept.
        t = b.op("Gather", [b.op("Shape", [x]), b.init("i1", np.array([1], np.int64))], axis=0)
        tt = b.op("Concat", [t, t], axis=0)
        ones = b.op("ConstantOfShape", [tt], value=helper.make_tensor("one", TensorProto.BOOL, [1], [True]))
        keep = b.op("Trilu", [ones], upper=0)
        s = b.op("Where", [keep, s, b.init("neg", np.array(-np.inf, np.float32))])
    else:
        # -1e9 strictly above the diagonal, 0 elsewhere.
        big = b.init("big", np.full((T, T), -1e9, np.float32))
        s = b.op("Add", [s, b.op("Trilu", [big, b.init("k1", np.array(1, np.int64))], upper=1)])
    p = b.op("Softmax", [s], axis=-1)
    a = b.op("Transpose", [b.op("MatMul", [p, v])], perm=[0, 2, 1, 3])
    a = b.op("Reshape", [a, b.init("merge", np.array([0, 0, D], np.int64))])
    x2 = b.op("Add", [x, linear(a, D, D)])
    f = linear(ln(x2), D, FF)
    if gelu == "erf":
        e = b.op("Erf", [b.op("Div", [f, b.init("sqrt2", np.array(np.sqrt(2), np.float32))])])
        e = b.op("Add", [e, b.init("one", np.array(1, np.float32))])
        f = b.op("Mul", [b.op("Mul", [f, e]), b.init("half", np.array(0.5, np.float32))])
    else:
        f = b.op("Gelu", [f], approximate=gelu)
    b.op("Add", [x2, linear(f, FF, D)])
    b.nodes[-1].output[0] = "out"
    inputs = [helper.make_tensor_value_info(x, F, ["batch", T, D])]
    outputs = [helper.make_tensor_value_info("out", F, ["batch", T, D])]
    return b.model(f"block_{mask}_{gelu}", inputs, outputs, opset)


# ---- the ops of current exports (issue 13) ----

def unet(rng):
    b = Builder(rng)
    x = "latent"
    C = 8

    def per_c(base, lo, hi):
        return b.init(base, rng.uniform(lo, hi, C).astype(np.float32))

    y = b.op("GroupNormalization", [x, per_c("gn.scale", 0.5, 1.5), per_c("gn.bias", -0.2, 0.2)],
             num_groups=4, epsilon=1e-5)
    y = b.op("Mul", [y, b.op("Sigmoid", [y])])                          # SiLU
    y = b.op("Conv", [y, b.w("conv.w", (C, C, 3, 3), 0.2)], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    up = b.op("ConvTranspose", [y, b.w("up.w", (C, C // 2, 3, 3), 0.2), b.w("up.b", (C,), 0.1)],
              strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1], group=2)   # 8x8 -> 16x16
    near = b.op("Resize", [y, "", b.init("scales", np.array([1, 1, 2, 2], np.float32))], mode="nearest",
                coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    lin = b.op("Resize", [y, "", b.init("scales", np.array([1, 1, 2, 2], np.float32))], mode="linear",
               coordinate_transformation_mode="pytorch_half_pixel")
    cub = b.op("Resize", [y, "", "", b.init("sizes", np.array([2, C, 16, 16], np.int64))], mode="cubic",
               coordinate_transformation_mode="align_corners")
    down = b.op("Resize", [up, "", "", b.init("sizes", np.array([2, C, 5, 7], np.int64))], mode="linear")
    y = b.op("Add", [b.op("Add", [up, near]), b.op("Add", [lin, cub])])
    y = b.op("InstanceNormalization", [y, per_c("in.scale", 0.5, 1.5), per_c("in.bias", -0.2, 0.2)],
             epsilon=1e-5)
    y = b.op("LeakyRelu", [y], alpha=0.2)
    y = b.op("PRelu", [y, b.init("slope", rng.uniform(0, 0.5, (C, 1, 1)).astype(np.float32))])
    y = b.op("Add", [b.op("Elu", [y], alpha=0.7), b.op("Mish", [y])])
    y = b.op("Softplus", [y])
    b.nodes[-1].output[0] = "features"
    d = b.op("Reshape", [down, b.init("shape", np.array([2, C, 35], np.int64))])
    d = b.op("ConvTranspose", [d, b.w("up1.w", (C, 3, 4), 0.3)], strides=[3], pads=[1, 2])
    b.nodes[-1].output[0] = "signal"
    inputs = [helper.make_tensor_value_info(x, F, [2, C, 8, 8])]
    outputs = [helper.make_tensor_value_info("features", F, [2, C, 16, 16]),
               helper.make_tensor_value_info("signal", F, [2, 3, 103])]
    return b.model("unet", inputs, outputs, 21)


def lm_ops(rng):
    b = Builder(rng)
    x = "scores"
    B, H, T, D = 2, 3, 6, 4
    mask = b.op("Greater", [b.op("ReduceMean", [x, b.init("ax", np.array([1, 3], np.int64))], keepdims=0),
                            b.init("zero", np.float32(0))])                # [B, T] bool
    pos = b.op("CumSum", [b.op("Cast", [mask], to=TensorProto.INT64), b.init("axis", np.int64(1))])
    pos_rev = b.op("CumSum", [b.op("Cast", [mask], to=TensorProto.FLOAT), b.init("axis", np.int64(-1))],
                   exclusive=1, reverse=1)
    lg = b.op("Log", [x])                                                  # NaN below 0, -inf at 0
    clean = b.op("Where", [b.op("Or", [b.op("IsNaN", [lg]), b.op("IsInf", [lg])]),
                           b.init("fill", np.float32(-1)), lg])
    q = b.op("Slice", [x, b.init("s", np.array([0], np.int64)), b.init("e", np.array([2], np.int64)),
                       b.init("a", np.array([1], np.int64))])             # [B, 2, T, D]
    att = b.op("Einsum", [q, x], equation="bhid,bgjd->bhgij")
    bmm = b.op("Einsum", [b.op("Reshape", [x, b.init("sh", np.array([B * H, T, D], np.int64))]),
                          b.w("ein.w", (D, 5), 0.5)], equation="bij,jk->bik")
    outer = b.op("Einsum", [b.w("u", (3,), 1.0), b.w("v", (4,), 1.0)], equation="i,j->ij")
    red = b.op("Einsum", [x], equation="bhtd->bd")
    idx = b.init("idx", rng.integers(-T, T, (B, H, 4, D)).astype(np.int64))
    ge = b.op("GatherElements", [x, idx], axis=2)
    se = b.op("ScatterElements", [x, idx, b.w("upd", (B, H, 4, D), 1.0)], axis=2, reduction="add")
    nd_idx = b.init("nd_idx", np.array([[[1, 2]], [[0, 0]]], np.int64))  # [2, 1, 2]
    snd = b.op("ScatterND", [x, nd_idx, b.w("nd_upd", (2, 1, T, D), 1.0)])
    am = b.op("ArgMax", [x], axis=2, keepdims=0)
    lse = b.op("ReduceLogSumExp", [x, b.init("ax3", np.array([3], np.int64))], keepdims=1)
    l2 = b.op("ReduceL2", [x, b.init("ax2", np.array([2], np.int64))], keepdims=0)
    tile = b.op("Tile", [l2, b.init("rep", np.array([1, 2, 3], np.int64))])
    md = b.op("Mod", [b.op("Mul", [x, b.init("seven", np.float32(7))]), b.init("m", np.float32(1.5))], fmod=1)
    rnd = b.op("Add", [b.op("Round", [b.op("Mul", [x, b.init("k", np.float32(3))])]),
                       b.op("Add", [b.op("Floor", [x]), b.op("Ceil", [x])])])
    trig = b.op("Add", [b.op("Sin", [x]), b.op("Cos", [x])])
    tv, ti = b.op("TopK", [x, b.init("k", np.array([2], np.int64))], nout=2, axis=2)
    gnd = b.op("GatherND", [x, b.init("gnd_idx", rng.integers(-H, H, (B, 5, 1)).astype(np.int64))],
               batch_dims=1)                                               # [B, 5, T, D]: rows of H
    act = b.op("Sum", [b.op("Sign", [x]), b.op("Selu", [x]), b.op("Softsign", [x])])
    outs = [pos, pos_rev, clean, att, bmm, outer, red, ge, se, snd, am, lse, tile, md, rnd, trig, tv, ti, gnd, act]
    names = ["pos", "pos_rev", "clean", "att", "bmm", "outer", "red", "gathered", "scattered",
             "scattered_nd", "argmax", "lse", "tiled", "mod", "rounded", "trig", "topk_values", "topk_indices",
             "gathered_nd", "acts"]
    for o, n in zip(outs, names):
        for nd in b.nodes:
            for k, out in enumerate(nd.output):
                if out == o:
                    nd.output[k] = n
    inputs = [helper.make_tensor_value_info(x, F, [B, H, T, D])]
    outputs = [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in names]
    g = helper.make_graph(b.nodes, "lm_ops", inputs, outputs, initializer=b.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], producer_name="sinter-crosscheck")
    m.ir_version = 8
    m = onnx.shape_inference.infer_shapes(m)
    onnx.checker.check_model(m, full_check=True)
    return m


def opset11(rng):
    b = Builder(rng)
    x = "x:0"                                               # a TensorFlow-style name
    sm = b.op("Softmax", [x], axis=1)                       # over dims 1..3 together
    lsm = b.op("LogSoftmax", [x])                           # default axis 1
    rs = b.op("ReduceSum", [x], axes=[2], keepdims=0)
    us = b.op("Unsqueeze", [rs], axes=[0])
    sq = b.op("Squeeze", [us], axes=[0])
    p1, p2 = b.op("Split", [x], nout=2, axis=3, split=[2, 3])
    rz = b.op("Resize", [x, b.init("roi", np.array([], np.float32)), b.init("sc", np.array([1, 1, 2, 1], np.float32))],
              mode="nearest")
    cl = b.op("Clip", [p2, b.init("lo", np.float32(-0.5)), b.init("hi", np.float32(0.5))])
    am = b.op("ArgMax", [p1], axis=1, keepdims=1)
    ga = b.op("Gather", [x, b.init("gi", np.array([2, 0], np.int64))], axis=1)
    outs = [sm, lsm, sq, rz, cl, am, ga]
    names = ["sm:0", "lsm", "sq", "rz", "cl", "am", "ga/out"]
    for o, n in zip(outs, names):
        for nd in b.nodes:
            for k, out in enumerate(nd.output):
                if out == o:
                    nd.output[k] = n
    inputs = [helper.make_tensor_value_info(x, F, [2, 3, 4, 5])]
    outputs = [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in names]
    g = helper.make_graph(b.nodes, "opset11", inputs, outputs, initializer=b.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)], producer_name="sinter-crosscheck")
    m.ir_version = 6
    m = onnx.shape_inference.infer_shapes(m)
    onnx.checker.check_model(m, full_check=True)
    return m


def resize_edges(rng):
    """Resize where onnxruntime computes in float: the output length
    (int64)(scale * in) in float (12 * float(7/12) is 7, not 6), coordinates
    in float (a round_prefer_ceil tie at 2.5 that double arithmetic puts at
    2.4999999), the integer output length in pytorch_half_pixel (resized to
    1) and align_corners, and no resizing at all when no length changes."""
    b = Builder(rng)
    x = "x"

    def rows(n):
        return b.op("Slice", [x, b.init("st", np.array([0], np.int64)), b.init("en", np.array([n], np.int64)),
                              b.init("ax", np.array([2], np.int64))])

    def resize(v, sh, **attrs):
        sc = b.init("sc", np.array([1, 1, sh, 1], np.float32))
        return b.op("Resize", [v, "", sc], **attrs)

    outs = [resize(x, 7 / 12, mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
            resize(rows(3), 0.5, mode="linear", coordinate_transformation_mode="pytorch_half_pixel"),
            resize(rows(4), 11 / 6, mode="nearest", coordinate_transformation_mode="half_pixel",
                   nearest_mode="round_prefer_ceil"),
            resize(rows(3), 1.1538461446762085, mode="cubic"),
            resize(rows(4), 1.7, mode="linear", coordinate_transformation_mode="align_corners")]
    return b.model("resize_edges", [helper.make_tensor_value_info(x, F, [1, 2, 12, 12])],
                   [helper.make_tensor_value_info(o, F, [None] * 4) for o in outs], 18)


# ---- running ----

def ort_run(path, feeds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def sinter_run(sinter, model, feeds, work, tag, sanitized=False):
    """Runs model (.onnx or .sir) on ref; returns ({name: array}, None) or
    (None, what went wrong). The inputs file names the tensors as the ONNX
    model does (e.g. `x:0`), or, with sanitized, as sinter named them before
    it kept names verbatim (`x_0`), which must bind too."""
    ipath = os.path.join(work, f"{tag}.in.safetensors")
    opath = os.path.join(work, f"{tag}.out.safetensors")
    write_st(ipath, {(sanitize(k) if sanitized else k): v for k, v in feeds.items()})
    rc, text = run_cmd([sinter, "run", model, "--device", "ref", "--inputs", ipath, "-o", opath], 600)
    if rc != 0:
        return None, f"sinter run exit {rc}: {first_line(text)}"
    return read_st(opath), None


def check(name, ref, got, tol):
    """Prints one line per output; returns the number of failures."""
    bad = 0
    for k, r in ref.items():
        g = got.get(k)  # output names are kept as ONNX spells them
        if g is None:
            print(f"  {name}: output {k}: missing (sinter wrote {sorted(got)})  FAIL")
            bad += 1
            continue
        if g.shape != r.shape or g.dtype != r.dtype:
            print(f"  {name}: output {k}: {g.dtype}{list(g.shape)}, onnxruntime "
                  f"{r.dtype}{list(r.shape)}  FAIL")
            bad += 1
            continue
        err = rel_l2(r, g)
        ok = err < tol
        bad += not ok
        print(f"  {name}: {k} {r.dtype}{list(r.shape)} rel L2 {err:.3g}  {'ok' if ok else 'FAIL'}")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sinter")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--keep", help="keep models, inputs and outputs in this directory")
    ap.add_argument("--tol", type=float, default=1e-5)
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else int(os.environ.get("SINTER_SEED", random.randrange(1 << 31)))
    print(f"crosscheck_ort: seed {seed}")
    rng = np.random.default_rng(seed)
    import onnxruntime
    print(f"onnx {onnx.__version__}, onnxruntime {onnxruntime.__version__}")

    work = a.keep or tempfile.mkdtemp(prefix="sinter-ort-")
    os.makedirs(work, exist_ok=True)
    models = [("convnet", convnet(rng), [(2, 3, 32, 32), (3, 3, 32, 32)]),
              ("block_where", block(rng, "where", "erf", 17), [(2, 16, 64)]),
              ("block_gelu", block(rng, "add", "none", 20), [(2, 16, 64)]),
              ("block_gelu_tanh", block(rng, "add", "tanh", 20), [(1, 16, 64)]),
              ("unet", unet(rng), [(2, 8, 8, 8)]),
              ("lm_ops", lm_ops(rng), [(2, 3, 6, 4)]),
              ("opset11", opset11(rng), [(2, 3, 4, 5)]),
              ("resize_edges", resize_edges(rng), [(1, 2, 12, 12)])]
    bad = 0
    try:
        for name, m, shapes in models:
            paths = [(name, os.path.join(work, name + ".onnx"))]
            onnx.save_model(m, paths[0][1])
            if name == "convnet":
                ext = os.path.join(work, "convnet_ext.onnx")
                onnx.save_model(m, ext, save_as_external_data=True, all_tensors_to_one_file=True,
                                location="convnet_ext.onnx.data", size_threshold=0)
                paths.append(("convnet_ext", ext))
            # The import path: .onnx -> .sir + .safetensors, then run the .sir.
            sir = os.path.join(work, name + ".sir")
            rc, text = run_cmd([a.sinter, "import", paths[0][1], "-o", sir], 600)
            if rc != 0:
                print(f"  {name}: sinter import exit {rc}: {first_line(text)}  FAIL")
                bad += 1
            else:
                paths.append((name + ".sir", sir))
            xname = m.graph.input[0].name
            for shape in shapes:
                x = rng.standard_normal(shape).astype(np.float32)
                ref = ort_run(paths[0][1], {xname: x})
                for tag, path in paths:
                    label = f"{tag} {list(shape)}"
                    got, err = sinter_run(a.sinter, path, {xname: x}, work,
                                          f"{tag}.{'x'.join(map(str, shape))}", sanitized=tag.endswith(".sir"))
                    if err:
                        print(f"  {label}: {err}  FAIL")
                        bad += 1
                        continue
                    bad += check(label, ref, got, a.tol)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"crosscheck_ort: {'all passed' if not bad else f'{bad} FAILED'} (seed {seed}, tol {a.tol:g})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
