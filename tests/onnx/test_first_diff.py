#!/usr/bin/env python3
"""test_first_diff.py: first_diff.py (every intermediate of an import
against onnxruntime) on a small SegFormer-style graph built with
onnx.helper: an overlapping patch embedding (Conv 7x7 stride 4), a
LayerNormalization over channels, sequence-reduced attention (Conv stride
2, MatMul, Softmax), a Mix-FFN (depthwise Conv, Gelu), a bilinear Resize
to the first stage's size, Concat and a 1x1 Conv head; random weights
and inputs from a printed seed. Checks that
  1. sinter (ref, and cpu when the build has it) matches onnxruntime at
     every node (exit 0);
  2. --perturb VALUE reports VALUE's node, and no earlier one, as the first
     that differs (exit 1), with its op type, attributes and input shapes;
  3. --expected outputs that both runtimes miss are reported as an export
     difference, not a sinter one (exit 1, no differing node).
usage: test_first_diff.py SINTER [--seed S]
"""
import json
import os
import random
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from crosscheck_ort import Builder  # noqa: E402
from run_node_tests import write_st  # noqa: E402

from onnx import TensorProto, helper  # noqa: E402
import onnx  # noqa: E402


def segformer_like(rng):
    b = Builder(rng)
    C, H, W = 16, 8, 12                     # after the stride-4 embedding of 32x48
    y = b.op("Conv", ["pixel_values", b.w("pe.w", (C, 3, 7, 7), 0.1), b.w("pe.b", (C,), 0.1)],
             kernel_shape=[7, 7], strides=[4, 4], pads=[3, 3, 3, 3])
    t = b.op("Transpose", [b.op("Reshape", [y, b.init("s", np.array([0, C, -1], np.int64))])], perm=[0, 2, 1])
    t = b.op("LayerNormalization", [t, b.w("ln.g", (C,), 0.3), b.w("ln.b", (C,), 0.1)], axis=-1, epsilon=1e-6)
    q = b.op("MatMul", [t, b.w("q", (C, C), 0.25)])
    sr = b.op("Conv", [y, b.w("sr.w", (C, C, 2, 2), 0.15)], kernel_shape=[2, 2], strides=[2, 2])
    kv = b.op("Transpose", [b.op("Reshape", [sr, b.init("s", np.array([0, C, -1], np.int64))])], perm=[0, 2, 1])
    k = b.op("MatMul", [kv, b.w("k", (C, C), 0.25)])
    v = b.op("MatMul", [kv, b.w("v", (C, C), 0.25)])
    s = b.op("Mul", [b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 2, 1])]),
                     b.init("scale", np.array(C ** -0.5, np.float32))])
    a = b.op("MatMul", [b.op("Softmax", [s], axis=-1), v])
    t = b.op("Add", [t, a])
    f = b.op("MatMul", [t, b.w("fc1", (C, 2 * C), 0.25)])
    f = b.op("Reshape", [b.op("Transpose", [f], perm=[0, 2, 1]), b.init("s", np.array([0, 2 * C, H, W], np.int64))])
    f = b.op("Conv", [f, b.w("dw.w", (2 * C, 1, 3, 3), 0.3)], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=2 * C)
    f = b.op("Gelu", [f])
    f = b.op("Conv", [f, b.w("fc2", (C, 2 * C, 1, 1), 0.2)], kernel_shape=[1, 1])
    low = b.op("Resize", [f, "", "", b.init("sz", np.array([2, C, H // 2, W // 2], np.int64))], mode="linear",
               coordinate_transformation_mode="half_pixel")
    up = b.op("Resize", [low, "", "", b.init("sz", np.array([2, C, H, W], np.int64))], mode="linear",
              coordinate_transformation_mode="half_pixel")
    cat = b.op("Concat", [f, up], axis=1)
    b.op("Conv", [b.op("Relu", [cat]), b.w("cls", (5, 2 * C, 1, 1), 0.2)], kernel_shape=[1, 1])
    b.nodes[-1].output[0] = "logits"
    inputs = [helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, [2, 3, 32, 48])]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [2, 5, H, W])]
    return b.model("segformer_like", inputs, outputs, 20)


def first_diff(sinter, model, *args):
    cmd = [sys.executable, os.path.join(HERE, "first_diff.py"), sinter, model, "--json", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    try:
        return r.returncode, json.loads(r.stdout.strip().splitlines()[-1]), r.stderr
    except (ValueError, IndexError):
        return r.returncode, None, r.stdout + r.stderr


def main():
    sinter = sys.argv[1]
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else \
        int(os.environ.get("SINTER_SEED", random.randrange(1 << 31)))
    print(f"test_first_diff: seed {seed}")
    rng = np.random.default_rng(seed)
    bad = 0

    def expect(cond, what):
        nonlocal bad
        print(f"  {what}: {'ok' if cond else 'FAIL'}")
        bad += not cond

    with tempfile.TemporaryDirectory(prefix="sinter-first-diff-") as work:
        m = segformer_like(rng)
        path = os.path.join(work, "seg.onnx")
        onnx.save_model(m, path)
        x = rng.standard_normal((2, 3, 32, 48)).astype(np.float32)
        ipath = os.path.join(work, "x.safetensors")
        write_st(ipath, {"pixel_values": x})

        devices = ["ref"]
        probe = subprocess.run([sinter, "run", path, "--device", "cpu", "--inputs", ipath],
                               capture_output=True, text=True, timeout=600)
        if probe.returncode == 0:
            devices.append("cpu")
        else:
            print(f"  cpu: not run ({(probe.stderr.strip().splitlines() or ['?'])[-1][:120]})")
        for dev in devices:
            rc, rep, err = first_diff(sinter, path, "--inputs", ipath, "--device", dev)
            expect(rc == 0 and rep and rep["ok"] and rep["compared"] == len(m.graph.node),
                   f"{dev}: every one of {len(m.graph.node)} nodes matches onnxruntime"
                   + ("" if rep else f" ({err.strip()[:200]})"))

        # A value in the middle: the Softmax's output.
        node = next(n for n in m.graph.node if n.op_type == "Softmax")
        rc, rep, err = first_diff(sinter, path, "--inputs", ipath, "--perturb", node.output[0])
        f = rep and rep["first"]
        expect(rc == 1 and f and f["op"] == "Softmax" and f["name"] == node.name
               and f["attributes"] == "axis=-1" and len(f["inputs"]) == 1
               and f["inputs"][0]["type"] == "float32[2, 96, 24]" and not f["inputs"][0]["bad"],
               "--perturb: the Softmax named first, with its axis and input shape"
               + ("" if rep else f" ({err.strip()[:200]})"))

        # Expected outputs that neither runtime gives: an export difference.
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        y = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(["logits"], {"pixel_values": x})[0]
        epath = os.path.join(work, "expected.safetensors")
        write_st(epath, {"logits": y * 1.5 + 0.1})
        rc, rep, err = first_diff(sinter, path, "--inputs", ipath, "--expected", epath)
        e = rep and rep.get("expected")
        expect(rc == 1 and rep and rep["first"] is None and e and e[0]["ort_bad"] and e[0]["sinter_bad"],
               "--expected: both runtimes miss it, no node differs")
        write_st(epath, {"logits": y})
        rc, rep, err = first_diff(sinter, path, "--inputs", ipath, "--expected", epath)
        expect(rc == 0, "--expected: onnxruntime's own outputs pass")
    print(f"test_first_diff: {'all passed' if not bad else f'{bad} FAILED'} (seed {seed})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
