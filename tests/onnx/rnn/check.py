#!/usr/bin/env python3
"""check.py: the models of tests/onnx/rnn/ (gen.py writes them: LSTM, GRU,
RNN, GridSample, 3-d Conv and ConvTranspose, which sinter builds at import
from its IR's ops, so every device runs them) run in onnxruntime (CPU) and
in sinter on each device given (ref, cpu; cuda on a GPU machine) on random
inputs (a batch-first LSTM or GRU, layout 1, through Transposes around the
layout-0 op in onnxruntime, which refuses layout 1); every output must
agree within a relative L2 error of 1e-5 (ref) or 1e-4 (other devices,
fp32; 3e-3 for an f16 model, whose reference is onnxruntime's f32 result on
the same values). Then the messages: an unsupported op names itself and its node and
points to docs/ONNX.md; GridSample's cubic mode in 5-d, an LSTM over a
symbolic sequence length, an unsupported activation, a 3-d Conv with too
deep a kernel, and a 3-d ConvTranspose whose pads crop everything are
refused with a reason. And an imported LSTM, GRU or RNN holds its weights
once (the weights file of `sinter import` is no larger than the
initializers).

usage: check.py SINTER [--devices ref,cpu] [--seed S] [--keep DIR]
The seed is random unless given (or set in SINTER_SEED) and is printed.
Exit 0 if every check passes, else 1.
"""
import argparse
import glob
import os
import random
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from run_node_tests import first_line, read_st, rel_l2, run_cmd, write_st  # noqa: E402

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

SYM = {"N": 2}  # symbolic dims, as run


def inputs_for(m, rng):
    """Random inputs of the graph: normal floats, a grid in [-1.7, 1.7]
    (some points outside the image), sequence lengths in 1..T with one short
    and one full."""
    init = {t.name for t in m.graph.initializer}
    out = {}
    for v in m.graph.input:
        if v.name in init:
            continue
        shape = [d.dim_value if d.HasField("dim_value") else SYM[d.dim_param]
                 for d in v.type.tensor_type.shape.dim]
        f16 = v.type.tensor_type.elem_type == TensorProto.FLOAT16
        if v.name == "lens":
            x = [d for d in m.graph.input if d.name == "X"][0].type.tensor_type.shape.dim
            layout1 = any(a.name == "layout" and a.i == 1 for a in m.graph.node[0].attribute)
            T = x[1 if layout1 else 0].dim_value
            lens = rng.integers(1, T + 1, shape[0])
            lens[0], lens[-1] = T, max(1, T - 2)
            out[v.name] = lens.astype(np.int32)
        elif v.name == "grid":
            out[v.name] = rng.uniform(-1.7, 1.7, shape).astype(np.float16 if f16 else np.float32)
        else:
            out[v.name] = rng.standard_normal(shape).astype(np.float16 if f16 else np.float32)
    return out


def is_f16(m):
    return any(v.type.tensor_type.elem_type == TensorProto.FLOAT16 for v in m.graph.input)


def ort_form(m):
    """m with every batch-first (layout 1) LSTM or GRU written as layout 0
    between Transposes, which onnxruntime's CPU kernels need (they refuse
    layout 1); an f16 model (no initializers) in f32, which onnxruntime's
    GridSample takes (its inputs are then the f16 ones widened)."""
    m = onnx.ModelProto.FromString(m.SerializeToString())
    for v in list(m.graph.input) + list(m.graph.output):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT16:
            v.type.tensor_type.elem_type = TensorProto.FLOAT
    nodes = []
    for nd in m.graph.node:
        lay = [a for a in nd.attribute if a.name == "layout"]
        if nd.op_type not in ("LSTM", "GRU") or not lay or lay[0].i == 0:
            nodes.append(nd)
            continue
        lay[0].i = 0
        for k in (0, 5, 6):  # X, initial_h, initial_c: [B, T|D, .] -> [T|D, B, .]
            if k < len(nd.input) and nd.input[k]:
                t = nd.input[k] + "_l0"
                nodes.append(helper.make_node("Transpose", [nd.input[k]], [t], perm=[1, 0, 2]))
                nd.input[k] = t
        post = []
        for k, perm in ((0, [2, 0, 1, 3]), (1, [1, 0, 2]), (2, [1, 0, 2])):
            if k < len(nd.output) and nd.output[k]:
                t = nd.output[k] + "_l0"
                post.append(helper.make_node("Transpose", [t], [nd.output[k]], perm=perm))
                nd.output[k] = t
        nodes += [nd] + post
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    return m.SerializeToString()


def run_sinter(sinter, path, ins, device, work):
    base = os.path.join(work, os.path.basename(path)[:-5] + "." + device)
    ipath, opath = base + ".in.safetensors", base + ".out.safetensors"
    write_st(ipath, ins)
    cmd = [sinter, "run", path, "--device", device, "--inputs", ipath, "-o", opath]
    if device != "ref":
        cmd += ["--precision", "fp32"]
    rc, text = run_cmd(cmd, 600)
    if rc != 0:
        return None, f"exit {rc}: {first_line(text)}"
    return read_st(opath), None


def check_models(sinter, devices, rng, work):
    npass, fails = 0, []
    for path in sorted(glob.glob(os.path.join(HERE, "*.onnx"))):
        m = onnx.load(path)
        ins = inputs_for(m, rng)
        sess = ort.InferenceSession(ort_form(m), providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        f16 = is_f16(m)
        wide = {k: v.astype(np.float32) if v.dtype == np.float16 else v for k, v in ins.items()}
        want = dict(zip(names, sess.run(None, wide)))
        for dev in devices:
            got, err = run_sinter(sinter, path, ins, dev, work)
            tol = 3e-3 if f16 else 1e-5 if dev == "ref" else 1e-4  # f16: the output rounded once
            label = f"{os.path.basename(path)} --device {dev}"
            if err:
                fails.append(f"{label}: {err}")
                continue
            bad = []
            for n in names:
                if n not in got:
                    bad.append(f"{n} missing")
                    continue
                e = rel_l2(want[n], got[n])
                if not e <= tol:
                    bad.append(f"{n}: rel L2 {e:.3g} > {tol:g}")
            if bad:
                fails.append(f"{label}: " + "; ".join(bad))
            else:
                npass += 1
                print(f"ok   {label} ({len(names)} output{'s' * (len(names) > 1)})")
    return npass, fails


def refused(sinter, work, name, m, want):
    """sinter refuses model m (exit 1) with a message holding every string
    of want."""
    path = os.path.join(work, name + ".onnx")
    onnx.save(m, path)
    rc, text = run_cmd([sinter, "import", path, "-o", os.path.join(work, name + ".sir")], 120)
    missing = [w for w in want if w not in text]
    if rc != 1 or missing:
        return f"{name}: exit {rc}, message {first_line(text)!r} lacks {missing}"
    print(f"ok   {name}: {first_line(text)}")
    return None


def check_weights(sinter, work):
    """An imported LSTM, GRU or RNN keeps its weights once: the weights file of
    `sinter import` is no larger than the model's initializers (a weight
    transposed in every step was once folded into a param per step)."""
    npass, fails = 0, []
    for path in sorted(glob.glob(os.path.join(HERE, "*.onnx"))):
        m = onnx.load(path)
        if not any(n.op_type in ("LSTM", "GRU", "RNN") for n in m.graph.node):
            continue
        name = os.path.basename(path)[:-5]
        sir = os.path.join(work, name + ".sir")
        rc, text = run_cmd([sinter, "import", path, "-o", sir], 120)
        st = os.path.join(work, name + ".safetensors")
        init = sum(numpy_helper.to_array(t).nbytes for t in m.graph.initializer)
        got = os.path.getsize(st) if os.path.exists(st) else 0
        if rc != 0 or got > init:
            fails.append(f"{name}: import exit {rc}, weights {got} bytes for {init} bytes of initializers")
        else:
            npass += 1
            print(f"ok   {name}: weights {got} bytes, initializers {init}")
    return npass, fails


def check_messages(sinter, work):
    F = TensorProto.FLOAT

    def mk(nodes, inputs, outputs, opset=17):
        g = helper.make_graph(nodes, "m", inputs, outputs)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])

    vi = helper.make_tensor_value_info
    cases = [
        ("unsupported", mk([helper.make_node("Hardmax", ["x"], ["y"], name="hm")], [vi("x", F, [2, 3])],
                           [vi("y", F, [2, 3])]),
         ["unsupported op", "Hardmax", "'hm'", "docs/ONNX.md"]),
        ("grid_cubic_5d", mk([helper.make_node("GridSample", ["x", "g"], ["y"], name="gs", mode="cubic")],
                             [vi("x", F, [1, 1, 2, 4, 4]), vi("g", F, [1, 2, 2, 2, 3])],
                             [vi("y", F, [1, 1, 2, 2, 2])], 20),
         ["'gs'", "cubic", "4-d inputs only"]),
        ("lstm_symbolic_t", mk([helper.make_node("LSTM", ["x", "w", "r"], ["y"], name="l", hidden_size=2)],
                               [vi("x", F, ["T", 1, 3]), vi("w", F, [1, 8, 3]), vi("r", F, [1, 8, 2])],
                               [vi("y", F, ["T", 1, 1, 2])]),
         ["'l'", "sequence length", "symbolic dim T", "bind it"]),
        ("lstm_activation", mk([helper.make_node("LSTM", ["x", "w", "r"], ["y"], name="l2", hidden_size=2,
                                                 activations=["Sigmoid", "HardSigmoid", "Tanh"])],
                               [vi("x", F, [2, 1, 3]), vi("w", F, [1, 8, 3]), vi("r", F, [1, 8, 2])],
                               [vi("y", F, [2, 1, 1, 2])]),
         ["'l2'", "HardSigmoid", "not supported"]),
        ("conv3d_kernel_too_deep", mk([helper.make_node("Conv", ["x", "w"], ["y"], name="c3k")],
                                      [vi("x", F, [1, 1, 2, 4, 4]), vi("w", F, [1, 1, 3, 1, 1])],
                                      [vi("y", F, [1, 1, 0, 4, 4])]),
         ["'c3k'", "smaller than the kernel"]),
        ("conv_transpose3d_cropped_away", mk([helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="ct3",
                                                               pads=[9, 0, 0, 9, 0, 0])],
                                             [vi("x", F, [1, 1, 2, 2, 2]), vi("w", F, [1, 1, 2, 2, 2])],
                                             [vi("y", F, None)]),
         ["'ct3'", "pads leave no output"]),
    ]
    fails = []
    for name, m, want in cases:
        err = refused(sinter, work, name, m, want)
        if err:
            fails.append(err)
    return len(cases) - len(fails), fails


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sinter")
    ap.add_argument("--devices", default="ref,cpu")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--keep", help="keep the work files in this directory")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else int(os.environ.get("SINTER_SEED", random.randrange(1 << 31)))
    print(f"seed {seed} (replay: --seed {seed} or SINTER_SEED={seed})")
    rng = np.random.default_rng(seed)
    work = a.keep or tempfile.mkdtemp(prefix="sinter-rnn-")
    os.makedirs(work, exist_ok=True)
    os.environ["SINTER_CACHE_DIR"] = os.path.join(work, "cache")  # not the user's plan cache
    try:
        p1, f1 = check_models(a.sinter, [d for d in a.devices.split(",") if d], rng, work)
        p2, f2 = check_messages(a.sinter, work)
        p3, f3 = check_weights(a.sinter, work)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    fails = f1 + f2 + f3
    for f in fails:
        print("FAIL " + f)
    print(f"{p1 + p2 + p3} passed, {len(fails)} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
