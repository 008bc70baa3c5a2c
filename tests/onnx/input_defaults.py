#!/usr/bin/env python3
"""input_defaults.py SINTER [DEVICE...]: ONNX graph inputs that have an
initializer (issue 31, item 15). From IR version 4 ONNX says such an input
takes its initializer as a default that a feed overrides, and onnxruntime
does so; sinter imported it as a constant and ignored the value given.

A tiny model, y = Reshape(x @ w + b, s), with w, b and s initializers
listed among the graph inputs, against onnxruntime on random values:
- x alone: w and b take their initializers (ref, cpu, and cuda where there
  is a GPU: the devices given, default ref and cpu);
- x, w and b given: theirs, on every device; and w alone given;
- s (Reshape's shape, needed at import) stays the initializer: not an input;
- sinter check --json lists x, w and b as inputs; --init random leaves w
  and b to their defaults (x @ w + b with them: in the row space of w);
  a wrong shape for w is refused;
- the same model at IR version 3 (where every initializer is listed as an
  input): w and b are weights, x the only input."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sinter = os.path.abspath(sys.argv[1])
devices = sys.argv[2:] or ["ref", "cpu"]
tmp = tempfile.mkdtemp()
os.chdir(tmp)
fails = 0
rng = np.random.default_rng(int(os.environ.get("SINTER_TEST_SEED", "31")))


def ok(cond, what):
    global fails
    if not cond:
        fails += 1
        print("FAIL:", what)


def model(ir_version):
    w = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    s = np.array([4, 2], dtype=np.int64)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["h"]),
             helper.make_node("Reshape", ["h", "s"], ["y"])]
    g = helper.make_graph(
        nodes, "defaults",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [3, 4]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 2])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"), numpy_helper.from_array(s, "s")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = ir_version
    return m


def run(*args, code=0):
    p = subprocess.run([sinter, *args], capture_output=True, text=True)
    ok(p.returncode == code, "%s: exit %d (want %d): %s" % (" ".join(args), p.returncode, code, p.stderr[-600:]))
    return p


def sinter_y(path, feeds, device, extra=()):
    np.savez("in.npz", **feeds)
    if os.path.exists("out.npz"):
        os.remove("out.npz")
    p = run("run", path, "--device", device, "--inputs", "in.npz", "-o", "out.npz", "--cache-dir", "cache", *extra)
    if p.returncode:
        return None
    return np.load("out.npz")["y"]


def close(a, b):
    return a is not None and a.shape == b.shape and np.allclose(a, b, rtol=1e-5, atol=1e-5)


onnx.save(model(8), "ir8.onnx")
sess = ort.InferenceSession("ir8.onnx", providers=["CPUExecutionProvider"])
x = rng.standard_normal((2, 3)).astype(np.float32)
w2 = rng.standard_normal((3, 4)).astype(np.float32)
b2 = rng.standard_normal(4).astype(np.float32)
want_default = sess.run(["y"], {"x": x})[0]
init8 = {t.name: numpy_helper.to_array(t) for t in onnx.load("ir8.onnx").graph.initializer}
w0, b0 = init8["w"].astype(np.float64), init8["b"].astype(np.float64)
want_over = sess.run(["y"], {"x": x, "w": w2, "b": b2})[0]
want_w = sess.run(["y"], {"x": x, "w": w2})[0]
ok(not np.allclose(want_default, want_over), "onnxruntime: the override changes y")

c = json.loads(run("check", "ir8.onnx", "--json").stdout or "{}")
names = [i["name"] for i in c.get("inputs", [])]
ok(names == ["x", "w", "b"], "IR 8: inputs %r (want x, w, b: s fixes a shape, it stays the initializer)" % names)

for dev in devices:
    y = sinter_y("ir8.onnx", {"x": x}, dev)
    ok(close(y, want_default), "%s, x alone: defaults (%r, want %r)" % (dev, y, want_default))
    y = sinter_y("ir8.onnx", {"x": x, "w": w2, "b": b2}, dev)
    ok(close(y, want_over), "%s, x, w, b: the overrides (%r, want %r)" % (dev, y, want_over))
    y = sinter_y("ir8.onnx", {"x": x, "w": w2}, dev)
    ok(close(y, want_w), "%s, x, w: w overridden, b its default (%r, want %r)" % (dev, y, want_w))
    # a wrong shape for an input with a default is refused as any input's
    np.savez("in.npz", x=x, w=np.zeros((4, 3), np.float32))
    p = run("run", "ir8.onnx", "--device", dev, "--inputs", "in.npz", "--cache-dir", "cache", code=1)
    ok("input %w" in p.stderr, "%s: wrong shape for w: %r" % (dev, p.stderr))
    # --init random draws x only: w and b keep their defaults. The drawn x
    # is not shown, but h = x @ w + b with the default w and b puts h - b
    # in the row space of w (3 of 4 dimensions): a w or b drawn at random
    # would not (and x comes back through w's pseudo-inverse)
    p = run("run", "ir8.onnx", "--device", dev, "--init", "random", "--seed", "5", "-o", "out.npz",
            "--cache-dir", "cache")
    if p.returncode == 0:
        h = np.load("out.npz")["y"].reshape(2, 4).astype(np.float64)
        xs = (h - b0) @ np.linalg.pinv(w0)
        ok(np.abs(xs @ w0 + b0 - h).max() < 1e-4 and np.abs(xs).max() > 1e-3,
           "%s: --init random: h - b not in the row space of the default w: %r" % (dev, h))

onnx.save(model(3), "ir3.onnx")
c = json.loads(run("check", "ir3.onnx", "--json").stdout or "{}")
names = [i["name"] for i in c.get("inputs", [])]
ok(names == ["x"], "IR 3: inputs %r (want x: the initializers listed as inputs are weights)" % names)
m3 = onnx.load("ir3.onnx")
init3 = {t.name: numpy_helper.to_array(t) for t in m3.graph.initializer}
want3 = ((x @ init3["w"]) + init3["b"]).reshape(4, 2)
for dev in devices:
    y = sinter_y("ir3.onnx", {"x": x}, dev)
    ok(close(y, want3), "%s, IR 3: the initializers (%r, want %r)" % (dev, y, want3))

shutil.rmtree(tmp)
print("input_defaults: %s" % ("all checks passed" if not fails else "%d failures" % fails))
sys.exit(1 if fails else 0)
