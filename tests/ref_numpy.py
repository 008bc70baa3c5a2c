#!/usr/bin/env python3
"""ref_numpy.py: checks the reference interpreter against numpy.

For each small .sir program below, the script draws fresh random inputs and
params, writes them as .safetensors with its own writer (the params into the
weights file the program names, next to the .sir), runs
`sinter run PROG.sir --device ref --inputs IN.safetensors -o OUT.safetensors`,
reads OUT with its own reader, and compares every output with a float64
numpy implementation: relative L2 error < 1e-6 for floats, equality for
integers and bools.

usage: ref_numpy.py SINTER [--seed S] [--keep DIR]
The seed is random unless given (or set in SINTER_SEED) and is printed, so a
failure can be replayed.
"""
import json
import math
import os
import random
import struct
import subprocess
import sys
import tempfile

import numpy as np

# ---- safetensors, written and read here (not with sinter's C code) ----

ST_DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32,
             "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_, "F16": np.float16}
ST_NAMES = {np.dtype(v): k for k, v in ST_DTYPES.items()}


def st_write(path, tensors):
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        arr = np.ascontiguousarray(arr)
        raw = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": ST_NAMES[arr.dtype], "shape": list(arr.shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def st_read(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base, out = 8 + n, {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        dt = np.dtype(ST_DTYPES[info["dtype"]]).newbyteorder("<")
        out[name] = np.frombuffer(data[base + b:base + e], dtype=dt).reshape(info["shape"])
    return out


# ---- numpy reference implementations (float64) ----

erf = np.vectorize(math.erf)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def layer_norm(x, w, b, axis, eps):
    axes = tuple(range(axis % x.ndim, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * w


def conv2d(x, w, b, stride, pad, dil, groups, nhwc=False):
    """Cross-correlation, NCHW x / OIHW w (NHWC / OHWI when nhwc)."""
    if nhwc:
        x, w = x.transpose(0, 3, 1, 2), w.transpose(0, 3, 1, 2)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    oh = (h + pad[0] + pad[2] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + pad[1] + pad[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    y = np.zeros((n, groups, o // groups, oh, ow))
    wg = w.reshape(groups, o // groups, cg, kh, kw)
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dil[0], j * dil[1]
            patch = xp[:, :, r0:r0 + stride[0] * (oh - 1) + 1:stride[0], c0:c0 + stride[1] * (ow - 1) + 1:stride[1]]
            patch = patch.reshape(n, groups, cg, oh, ow)
            y += np.einsum("ngchw,goc->ngohw", patch, wg[:, :, :, i, j])
    y = y.reshape(n, o, oh, ow)
    if b is not None:
        y += b.reshape(1, o, 1, 1)
    return y.transpose(0, 2, 3, 1) if nhwc else y


def pool_out(size, k, s, p0, p1, dil, ceil):
    num = size + p0 + p1 - dil * (k - 1) - 1
    out = (num + (s - 1 if ceil else 0)) // s + 1
    if ceil and (out - 1) * s >= size + p0:
        out -= 1
    return out


def pool2d(x, kind, k, s, pad, dil=(1, 1), ceil=False, cip=False, nhwc=False):
    """max or avg pooling, window by window (PyTorch's rules)."""
    if nhwc:
        x = x.transpose(0, 3, 1, 2)
    n, c, h, w = x.shape
    oh = pool_out(h, k[0], s[0], pad[0], pad[2], dil[0], ceil)
    ow = pool_out(w, k[1], s[1], pad[1], pad[3], dil[1], ceil)
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * s[0] - pad[0], j * s[1] - pad[1]
            if kind == "max":
                rows = [h0 + a * dil[0] for a in range(k[0]) if 0 <= h0 + a * dil[0] < h]
                cols = [w0 + b * dil[1] for b in range(k[1]) if 0 <= w0 + b * dil[1] < w]
                y[:, :, i, j] = x[:, :, rows][:, :, :, cols].max(axis=(2, 3))
            else:
                h1, w1 = min(h0 + k[0], h + pad[2]), min(w0 + k[1], w + pad[3])
                full = (h1 - h0) * (w1 - w0)
                ha, hb, wa, wb = max(h0, 0), min(h1, h), max(w0, 0), min(w1, w)
                div = full if cip else (hb - ha) * (wb - wa)
                y[:, :, i, j] = x[:, :, ha:hb, wa:wb].sum(axis=(2, 3)) / div
    return y.transpose(0, 2, 3, 1) if nhwc else y


def attention(q, k, v, causal=False, mask=None, scale=None):
    scale = 1 / math.sqrt(q.shape[-1]) if not scale else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        L, S = s.shape[-2:]
        s = np.where(np.triu(np.ones((L, S), bool), 1), -np.inf, s)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == np.bool_ else s + mask
    return softmax(s) @ v


# ---- the programs ----

SIR_TYPES = {np.dtype(np.float32): "f32", np.dtype(np.int64): "i64", np.dtype(np.int32): "i32",
             np.dtype(np.bool_): "bool"}


def ty(arr):
    return "%s[%s]" % (SIR_TYPES[np.dtype(arr.dtype)], ",".join(str(d) for d in arr.shape))


class Case:
    def __init__(self, name):
        self.name, self.inputs, self.params, self.body, self.outs = name, {}, {}, [], []

    def input(self, name, arr):
        self.inputs[name] = arr
        return arr.astype(np.float64) if arr.dtype == np.float32 else arr

    def param(self, name, arr):
        self.params[name] = arr
        self.body.append("  %%%s = param %s \"%s\"" % (name, ty(arr), name))
        return arr.astype(np.float64)

    def line(self, text):
        self.body.append("  " + text)

    def out(self, name, want, dtype=np.float32):
        self.outs.append((name, np.asarray(want), np.dtype(dtype)))

    def sir(self):
        sig = ", ".join("%%%s: %s" % (n, ty(a)) for n, a in self.inputs.items())
        rets = ", ".join("%s[%s]" % (SIR_TYPES[d], ",".join(str(x) for x in w.shape)) for _, w, d in self.outs)
        return "sinter 1\nweights \"%s.safetensors\"\n\nfunc @main(%s) -> (%s) {\n%s\n  return %s\n}\n" % (
            self.name, sig, rets, "\n".join(self.body), ", ".join("%" + n for n, _, _ in self.outs))


def cases(rng):
    def f32(*shape, lo=-2.0, hi=2.0):
        return rng.uniform(lo, hi, size=shape).astype(np.float32)

    c = Case("elementwise")
    x, y, z = c.input("x", f32(2, 3, 4)), c.input("y", f32(3, 1)), c.input("z", f32(4, lo=0.5, hi=2))
    cond = c.input("cond", rng.random((3, 4)) < 0.5)
    c.line("%a = add(%x, %y)")
    c.line("%m = mul(%a, %z)")
    c.line("%d = div(%m, %z)")
    c.line("%s = sub(%d, %y)")
    c.line("%e = exp(%s)")
    c.line("%t = tanh(%x)")
    c.line("%g = gelu(%x)")
    c.line("%gt = gelu(%x) approximate=tanh")
    c.line("%sg = sigmoid(%x)")
    c.line("%sl = silu(%x)")
    c.line("%hs = hardswish(%x)")
    c.line("%hg = hardsigmoid(%x)")
    c.line("%cl = clamp(%x) min=-0.5 max=0.75")
    c.line("%pw = pow(%z, %y)")
    c.line("%mx = max(%x, %y)")
    c.line("%w = where(%cond, %x, %y)")
    c.line("%lt = less(%x, %y)")
    c.line("%sq = sqrt(%z)")
    c.line("%lg = log(%z)")
    c.line("%rs = rsqrt(%z)")
    c.line("%er = erf(%x)")
    c.out("e", np.exp((x + y) * z / z - y))
    c.out("t", np.tanh(x))
    c.out("g", x * 0.5 * (1 + erf(x / math.sqrt(2))))
    c.out("gt", 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))))
    c.out("sg", 1 / (1 + np.exp(-x)))
    c.out("sl", x / (1 + np.exp(-x)))
    c.out("hs", x * np.clip(x + 3, 0, 6) / 6)
    c.out("hg", np.clip(x + 3, 0, 6) / 6)
    c.out("cl", np.clip(x, -0.5, 0.75))
    c.out("pw", z ** y)
    c.out("mx", np.maximum(x, y))
    c.out("w", np.where(cond, x, y))
    c.out("lt", x < y, np.bool_)
    c.out("sq", np.sqrt(z))
    c.out("lg", np.log(z))
    c.out("rs", 1 / np.sqrt(z))
    c.out("er", erf(x))
    yield c

    c = Case("reductions")
    x = c.input("x", f32(3, 4, 5))
    c.line("%s = reduce_sum(%x) axes=[1]")
    c.line("%m = reduce_mean(%x) axes=[0,2] keepdims=true")
    c.line("%mx = reduce_max(%x) axes=[-1]")
    c.line("%mn = reduce_min(%x)")
    c.line("%sm = softmax(%x)")
    c.line("%sm1 = softmax(%x) axis=1")
    c.line("%ls = log_softmax(%x) axis=0")
    c.out("s", x.sum(axis=1))
    c.out("m", x.mean(axis=(0, 2), keepdims=True))
    c.out("mx", x.max(axis=-1))
    c.out("mn", x.min())
    c.out("sm", softmax(x))
    c.out("sm1", softmax(x, 1))
    c.out("ls", log_softmax(x, 0))
    yield c

    c = Case("norms")
    x = c.input("x", f32(2, 3, 8))
    xi = c.input("xi", f32(2, 4, 3, 3))
    xh = c.input("xh", f32(2, 3, 3, 4))
    w, b = c.param("ln.weight", f32(8)), c.param("ln.bias", f32(8))
    w2, b2 = c.param("ln2.weight", f32(3, 8)), c.param("ln2.bias", f32(3, 8))
    rw = c.param("rms.weight", f32(8))
    bw, bb = c.param("bn.weight", f32(4)), c.param("bn.bias", f32(4))
    bm, bv = c.param("bn.running_mean", f32(4)), c.param("bn.running_var", f32(4, lo=0.5, hi=2))
    c.line("%ln = layer_norm(%x, %ln.weight, %ln.bias)")
    c.line("%ln2 = layer_norm(%x, %ln2.weight, %ln2.bias) axis=1 eps=0.001")
    c.line("%rms = rms_norm(%x, %rms.weight) eps=1e-06")
    c.line("%bn = batch_norm(%xi, %bn.weight, %bn.bias, %bn.running_mean, %bn.running_var)")
    c.line("%bnh = batch_norm(%xh, %bn.weight, %bn.bias, %bn.running_mean, %bn.running_var) layout=NHWC")
    c.out("ln", layer_norm(x, w, b, -1, 1e-5))
    c.out("ln2", layer_norm(x, w2, b2, 1, 1e-3))
    c.out("rms", rms_norm(x, rw, 1e-6))
    bshape = (1, 4, 1, 1)
    c.out("bn", (xi - bm.reshape(bshape)) / np.sqrt(bv.reshape(bshape) + 1e-5) * bw.reshape(bshape) + bb.reshape(bshape))
    c.out("bnh", (xh - bm) / np.sqrt(bv + 1e-5) * bw + bb)
    yield c

    c = Case("contractions")
    a, b, v = c.input("a", f32(2, 1, 3, 5)), c.input("b", f32(4, 5, 6)), c.input("v", f32(5))
    v6, x = c.input("v6", f32(6)), c.input("x", f32(2, 3, 5))
    w, bias = c.param("fc.weight", f32(7, 5)), c.param("fc.bias", f32(7))
    c.line("%mm = matmul(%a, %b)")
    c.line("%mv = matmul(%b, %v6)")
    c.line("%vm = matmul(%v, %b)")
    c.line("%fc = linear(%x, %fc.weight, %fc.bias)")
    c.out("mm", a @ b)
    c.out("mv", b @ v6)
    c.out("vm", v @ b)
    c.out("fc", x @ w.T + bias)
    yield c

    c = Case("conv")
    x = c.input("x", f32(2, 4, 9, 8))
    xh = c.input("xh", f32(2, 9, 8, 4))
    w1, b1 = c.param("c1.weight", f32(6, 2, 3, 3)), c.param("c1.bias", f32(6))
    w2 = c.param("c2.weight", f32(4, 1, 3, 2))
    w3, b3 = c.param("c3.weight", f32(6, 3, 3, 2)), c.param("c3.bias", f32(6))
    w4 = c.param("c4.weight", f32(5, 1, 1, 4))
    c.line("%c1 = conv2d(%x, %c1.weight, %c1.bias) stride=[2,1] pad=[1,0,2,1] dilation=[1,2] groups=2")
    c.line("%c2 = conv2d(%x, %c2.weight) stride=[2,2] pad=[1,1,1,1] groups=4")
    c.line("%c3 = conv2d(%xh, %c3.weight, %c3.bias) stride=[1,2] pad=[0,1,1,0] dilation=[2,1] groups=2 layout=NHWC")
    c.line("%c4 = conv2d(%xh, %c4.weight) layout=NHWC")
    c.out("c1", conv2d(x, w1, b1, (2, 1), (1, 0, 2, 1), (1, 2), 2))
    c.out("c2", conv2d(x, w2, None, (2, 2), (1, 1, 1, 1), (1, 1), 4))
    c.out("c3", conv2d(xh, w3, b3, (1, 2), (0, 1, 1, 0), (2, 1), 2, nhwc=True))
    c.out("c4", conv2d(xh, w4, None, (1, 1), (0, 0, 0, 0), (1, 1), 1, nhwc=True))
    yield c

    c = Case("pools")
    x = c.input("x", f32(2, 3, 7, 6))
    xh = c.input("xh", f32(1, 6, 7, 3))
    c.line("%mp = max_pool2d(%x) kernel=[3,3] stride=[2,2] pad=[1,1,1,1] ceil_mode=true")
    c.line("%mpd = max_pool2d(%x) kernel=[2,2] stride=[1,2] dilation=[2,2]")
    c.line("%ap = avg_pool2d(%x) kernel=[3,2] stride=[2,2] pad=[1,1,1,0] ceil_mode=true count_include_pad=true")
    c.line("%ape = avg_pool2d(%x) kernel=[3,3] stride=[2,2] pad=[1,1,1,1] ceil_mode=true")
    c.line("%aph = avg_pool2d(%xh) kernel=[2,2] layout=NHWC")
    c.line("%mph = max_pool2d(%xh) kernel=[3,3] stride=[2,2] pad=[1,1,1,1] layout=NHWC")
    c.line("%gp = global_avg_pool(%x)")
    c.line("%gph = global_avg_pool(%xh) layout=NHWC")
    c.out("mp", pool2d(x, "max", (3, 3), (2, 2), (1, 1, 1, 1), ceil=True))
    c.out("mpd", pool2d(x, "max", (2, 2), (1, 2), (0, 0, 0, 0), dil=(2, 2)))
    c.out("ap", pool2d(x, "avg", (3, 2), (2, 2), (1, 1, 1, 0), ceil=True, cip=True))
    c.out("ape", pool2d(x, "avg", (3, 3), (2, 2), (1, 1, 1, 1), ceil=True, cip=False))
    c.out("aph", pool2d(xh, "avg", (2, 2), (2, 2), (0, 0, 0, 0), nhwc=True))
    c.out("mph", pool2d(xh, "max", (3, 3), (2, 2), (1, 1, 1, 1), nhwc=True))
    c.out("gp", x.mean(axis=(2, 3), keepdims=True))
    c.out("gph", xh.mean(axis=(1, 2), keepdims=True))
    yield c

    c = Case("movement")
    x, y = c.input("x", f32(2, 3, 4)), c.input("y", f32(2, 2, 4))
    tab = c.param("emb.weight", f32(10, 3))
    idx = c.input("idx", rng.integers(-10, 10, size=(2, 5)).astype(np.int64))
    idx2 = c.input("idx2", rng.integers(-4, 4, size=(3,)).astype(np.int32))
    col = c.input("col", f32(3, 1))
    c.line("%t = transpose(%x) perm=[2,0,1]")
    c.line("%cat = concat(%x, %y) axis=1")
    c.line("%sl = slice(%x) axes=[2,1] starts=[-1,0] ends=[-100,3] steps=[-2,2]")
    c.line("%g = gather(%emb.weight, %idx)")
    c.line("%g1 = gather(%x, %idx2) axis=2")
    c.line("%pc = pad(%x) pad=[0,1,2,1,0,1] value=0.5")
    c.line("%pr = pad(%x) pad=[1,2,3,1,0,3] mode=reflect")
    c.line("%pe = pad(%x) pad=[0,3,1,2,2,0] mode=edge")
    c.line("%ex = expand(%col) shape=[2,3,5]")
    c.line("%r = reshape(%t) shape=[4,-1]")
    c.line("%sp = split(%x) axis=2 sizes=[1,3] index=1")
    c.out("t", x.transpose(2, 0, 1))
    c.out("cat", np.concatenate([x, y], axis=1))
    c.out("sl", x[:, 0:3:2, ::-2])
    c.out("g", np.take(tab, idx, axis=0))
    c.out("g1", np.take(x, idx2, axis=2))
    c.out("pc", np.pad(x, ((0, 1), (1, 0), (2, 1)), constant_values=0.5))
    c.out("pr", np.pad(x, ((1, 1), (2, 0), (3, 3)), mode="reflect"))
    c.out("pe", np.pad(x, ((0, 2), (3, 2), (1, 0)), mode="edge"))
    c.out("ex", np.broadcast_to(col, (2, 3, 5)))
    c.out("r", x.transpose(2, 0, 1).reshape(4, -1))
    c.out("sp", x[:, :, 1:4])
    yield c

    # the ops of issue 13: elementwise tests and activations, mod, cumsum,
    # arg reductions, topk, group_norm, element indexing and scatters
    c = Case("ops13")
    x = c.input("x", f32(2, 6, 5, lo=-3, hi=3))
    yv = c.input("yv", f32(5, lo=0.5, hi=2) * np.where(rng.random(5) < 0.5, -1, 1).astype(np.float32))
    c.line("%fl = floor(%x)")
    c.line("%ce = ceil(%x)")
    c.line("%rd = round(%x)")
    c.line("%sn = sin(%x)")
    c.line("%cs = cos(%x)")
    c.line("%sp = softplus(%x)")
    c.line("%mi = mish(%x)")
    c.line("%el = elu(%x) alpha=0.7")
    c.line("%lr = leaky_relu(%x) alpha=0.2")
    c.line("%md = mod(%x, %yv)")
    c.line("%mf = mod(%x, %yv) fmod=true")
    c.line("%lg = log(%x)")
    c.line("%nan = isnan(%lg)")
    c.out("fl", np.floor(x))
    c.out("ce", np.ceil(x))
    c.out("rd", np.round(x))  # numpy rounds half to even, as the IR
    c.out("sn", np.sin(x))
    c.out("cs", np.cos(x))
    c.out("sp", np.log1p(np.exp(x)))
    c.out("mi", x * np.tanh(np.log1p(np.exp(x))))
    c.out("el", np.where(x > 0, x, 0.7 * np.expm1(x)))
    c.out("lr", np.where(x < 0, 0.2 * x, x))
    c.out("md", np.mod(x, yv))
    c.out("mf", np.fmod(x, yv))
    c.out("nan", x < 0, np.bool_)
    for ax, ex, rv in ((1, False, False), (2, True, False), (1, True, True), (0, False, True)):
        nm = "cs%d%d%d" % (ax, ex, rv)
        c.line("%%%s = cumsum(%%x) axis=%d exclusive=%s reverse=%s" % (nm, ax, str(ex).lower(), str(rv).lower()))
        v = np.flip(x, ax) if rv else x
        cs = np.cumsum(v, axis=ax) - (v if ex else 0)
        c.out(nm, np.flip(cs, ax) if rv else cs)
    c.line("%amx = argmax(%x) axis=1")
    c.line("%amn = argmin(%x) axis=2 keepdims=true")
    c.out("amx", np.argmax(x, axis=1), np.int64)
    c.out("amn", np.argmin(x, axis=2)[:, :, None], np.int64)
    c.line("%tv = topk(%x) axis=1 k=3")
    c.line("%ti = topk(%x) k=2 smallest=true index=1")
    c.out("tv", -np.sort(-x, axis=1)[:, :3])
    c.out("ti", np.argsort(x, axis=2, kind="stable")[:, :, :2], np.int64)
    gx = c.input("gx", f32(2, 6, 3, 4))
    gw, gb = c.param("gw", f32(6)), c.param("gb", f32(6))
    c.line("%gn = group_norm(%gx, %gw, %gb) groups=3 eps=0.001")
    r = gx.reshape(2, 3, -1)
    nrm = ((r - r.mean(-1, keepdims=True)) / np.sqrt(r.var(-1, keepdims=True) + 1e-3)).reshape(gx.shape)
    c.out("gn", nrm * gw[None, :, None, None] + gb[None, :, None, None])
    idx = c.input("idx", rng.integers(-6, 6, size=(2, 4, 5)).astype(np.int64))
    upd = c.input("upd", f32(2, 4, 5))
    c.line("%ge = gather_elements(%x, %idx) axis=1")
    c.out("ge", np.take_along_axis(x, np.where(idx < 0, idx + 6, idx), axis=1))
    for red in ("none", "add", "mul", "max", "min"):
        c.line("%%se_%s = scatter_elements(%%x, %%idx, %%upd) axis=1 reduction=%s" % (red, red))
        want = x.copy()
        pos = np.where(idx < 0, idx + 6, idx)
        for i in range(2):
            for j in range(4):
                for k in range(5):
                    t, u = (i, pos[i, j, k], k), upd[i, j, k]
                    want[t] = {"none": u, "add": want[t] + u, "mul": want[t] * u,
                               "max": max(want[t], u), "min": min(want[t], u)}[red]
        c.out("se_" + red, want)
    ndi = c.input("ndi", rng.integers(-2, 2, size=(3, 2)).astype(np.int64))
    ndu = c.input("ndu", f32(3, 5))
    c.line("%snd = scatter_nd(%x, %ndi, %ndu) reduction=add")
    want = x.copy()
    for t in range(3):
        want[ndi[t, 0] % 2, ndi[t, 1] % 6] += ndu[t]
    c.out("snd", want)
    yield c

    c = Case("attention")
    q, k, v = c.input("q", f32(2, 3, 5, 4)), c.input("k", f32(2, 3, 6, 4)), c.input("v", f32(2, 3, 6, 3))
    mb = rng.random((5, 6)) < 0.7
    mb[:, 0] = True  # no row fully masked (that would be NaN in both)
    c.input("mb", mb)
    mf = c.input("mf", f32(3, 5, 6))
    qs = c.input("qs", f32(2, 3, 6, 4))
    c.line("%causal = scaled_dot_product_attention(%qs, %k, %v) causal=true")
    c.line("%bm = scaled_dot_product_attention(%q, %k, %v, %mb)")
    c.line("%fm = scaled_dot_product_attention(%q, %k, %v, %mf) scale=0.3")
    c.out("causal", attention(qs, k, v, causal=True))
    c.out("bm", attention(q, k, v, mask=mb))
    c.out("fm", attention(q, k, v, mask=mf, scale=0.3))
    yield c


def compare(got, want, dtype):
    """(what, failed): floats by relative L2 error, the rest exactly."""
    if got.shape != want.shape:
        return ("shape %s, expected %s" % (got.shape, want.shape), True)
    if dtype != np.float32:
        bad = np.count_nonzero(got != want.astype(dtype))
        return ("%d of %d elements differ" % (bad, want.size), bad > 0)
    g, w = got.astype(np.float64), want.astype(np.float64)
    if not np.all(np.isfinite(g)):
        return ("non-finite values", True)
    err = np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30)
    return ("relative L2 error %.3g" % err, err >= 1e-6)


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    sinter = args[0]
    seed = int(os.environ.get("SINTER_SEED", random.randrange(1 << 31)))
    keep = None
    if "--seed" in args:
        seed = int(args[args.index("--seed") + 1])
    if "--keep" in args:
        keep = args[args.index("--keep") + 1]
    print("ref_numpy: seed %d (replay with --seed %d)" % (seed, seed))
    rng = np.random.default_rng(seed)
    failures = 0
    tmp = tempfile.TemporaryDirectory()
    work = keep or tmp.name
    os.makedirs(work, exist_ok=True)
    for c in cases(rng):
        sir = os.path.join(work, c.name + ".sir")
        with open(sir, "w") as f:
            f.write(c.sir())
        st_write(os.path.join(work, c.name + ".safetensors"), c.params)
        inp, out = os.path.join(work, c.name + ".in.safetensors"), os.path.join(work, c.name + ".out.safetensors")
        st_write(inp, c.inputs)
        if os.path.exists(out):
            os.remove(out)
        p = subprocess.run([sinter, "run", sir, "--device", "ref", "--inputs", inp, "-o", out],
                           capture_output=True, text=True)
        if p.returncode != 0:
            print("FAIL %s: sinter exited %d\n%s%s" % (c.name, p.returncode, p.stdout, p.stderr))
            failures += 1
            continue
        got = st_read(out)
        for name, want, dtype in c.outs:
            what, bad = compare(got[name], want, dtype) if name in got else ("missing from the output", True)
            print("%s %s.%s: %s" % ("FAIL" if bad else "ok  ", c.name, name, what))
            failures += bad
    print("ref_numpy: %d failure(s), seed %d" % (failures, seed))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
