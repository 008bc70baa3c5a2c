"""test_numpy.py LAYOUT_EXE SOURCE_DIR: the Python package (python/) on the
reference interpreter with NumPy, as installed by pip (run_python.sh).
Every output is compared with the same computation done here in NumPy on
fresh random inputs; errors must carry sinter's status codes."""
import ctypes
import os
import subprocess
import sys
import tempfile

import numpy as np

import sinter
from sinter import _lib

fails = 0


def ok(cond, what):
    global fails
    if not cond:
        fails += 1
        print("FAIL:", what)


def raises(status, fn, what, needle=""):
    try:
        fn()
    except sinter.SinterError as e:
        ok(e.status == status and needle in str(e), "%s: status %d (want %d): %s" % (what, e.status, status, e))
        return
    ok(False, what + ": no error")


layout_exe, src = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))
v = sinter.version()
print("sinter", v, "from", _lib.path)

# 1. the ctypes structs have the C layout (a field added to sinter.h in the
# middle would shift every later one), no padding: the sized structs
# (options, stats) carry their size, and the library reads what it covers
want = dict(line.split() for line in subprocess.check_output([layout_exe], text=True).splitlines())
classes = {"sinter_tensor": _lib.Tensor, "sinter_error": _lib.Error, "sinter_load_options": _lib.Options,
           "sinter_shape_binding": _lib.ShapeBinding, "sinter_compile_options": _lib.CompileOptions,
           "sinter_compile_stats": _lib.CompileStats, "sinter_state_binding": _lib.StateBinding}
for key, off in want.items():
    s, f = key.split(".")
    cls = classes[s]
    if f == "_size":
        got = ctypes.sizeof(cls)
        ok(got == int(off), "%s: %d bytes, C says %s" % (key, got, off))
    else:
        ok(getattr(cls, f).offset == int(off), "%s at %d, C says %s" % (key, getattr(cls, f).offset, off))

# 2. a model from text with weights from NumPy: y = relu(x @ w.T + b) * 2
tmp = tempfile.mkdtemp()
w = rng.standard_normal((5, 7)).astype(np.float32)
b = rng.standard_normal(5).astype(np.float32)
sinter.write_tensors(os.path.join(tmp, "w.safetensors"), {"fc.weight": w, "fc.bias": b})
back = sinter.read_tensors(os.path.join(tmp, "w.safetensors"))
ok(np.array_equal(back["fc.weight"], w) and np.array_equal(back["fc.bias"], b), "safetensors round trip")
with open(os.path.join(tmp, "m.sir"), "w") as f:
    f.write('sinter 1\nweights "w.safetensors"\n\nfunc @main(%x: f32[N,7]) -> (f32[N,5]) {\n'
            '  %w = param f32[5,7] "fc.weight"\n  %b = param f32[5] "fc.bias"\n  %two = const f32[] 2\n'
            '  %h = linear(%x, %w, %b)\n  %r = relu(%h)\n  %y = mul(%r, %two)\n  return %y\n}\n')
m = sinter.load(os.path.join(tmp, "m.sir"), shapes={"N": 3}, weights=os.path.join(tmp, "w.safetensors"))
ok(m.inputs == [{"name": "x", "dtype": "f32", "shape": (3, 7)}], "inputs %r" % m.inputs)
ok(m.outputs[0]["shape"] == (3, 5), "outputs %r" % m.outputs)
x = rng.standard_normal((3, 7)).astype(np.float32)
(y,) = m.run({"x": x}, device="ref")
ref = 2 * np.maximum(x.astype(np.float64) @ w.T.astype(np.float64) + b, 0)
ok(y.shape == (3, 5) and y.dtype == np.float32, "y %s %s" % (y.shape, y.dtype))
ok(np.allclose(y, ref, rtol=1e-5, atol=1e-6), "y differs from NumPy by %g" % np.abs(y - ref).max())
(y2,) = m.run([x], device="ref")  # by position
ok(np.array_equal(y, y2), "positional inputs")
ok("linear" in m.text() and len(m.hash()) == 32, "text and hash")
# the weights line is read when none are given
m2 = sinter.load(os.path.join(tmp, "m.sir"), shapes={"N": 3}).load_weights()
ok(np.array_equal(m2.run({"x": x}, device="ref")[0], y), "weights from the model's weights line")

# 3. errors carry their status: 1 bad input, 2 usage
raises(1, lambda: m.run({"z": x}, device="ref"), "unknown input name", "x")
raises(1, lambda: m.run({"x": x[:, :6].copy()}, device="ref"), "wrong shape")
raises(2, lambda: m.run({"x": x}, device="tpu"), "unknown device")
raises(1, lambda: sinter.load(os.path.join(tmp, "missing.sir")), "missing file")
raises(2, lambda: sinter.load(os.path.join(tmp, "m.sir")).run({"x": x}, device="ref"), "unbound symbol", "N")
with open(os.path.join(tmp, "bad.sir"), "w") as f:
    f.write("sinter 1\nfunc @main(%x: f32[2]) -> (f32[2]) {\n  %y = nosuchop(%x)\n  return %y\n}\n")
raises(1, lambda: sinter.load(os.path.join(tmp, "bad.sir")), "unknown op", "bad.sir:3")

# 3b. the cpu device where the library has it: the same model compiled for
# this CPU (2 threads), against the reference interpreter's y; refused with
# a usage error in a library built without it
have_cpu, why = sinter.cpu_available()
if have_cpu:
    (yc,) = m.run({"x": x}, device="cpu")
    ok(yc.shape == y.shape and np.allclose(yc, y, rtol=2e-5, atol=1e-6),
       "cpu differs from ref by %g" % np.abs(yc - y).max())
    c = sinter.compile_model(m, device="cpu", threads=2, cache_dir=os.path.join(tmp, "cache"))
    x2 = rng.standard_normal((3, 7)).astype(np.float32)
    (yc2,) = c.run({"x": x2})
    (yr2,) = m.run({"x": x2}, device="ref")
    ok(np.allclose(yc2, yr2, rtol=2e-5, atol=1e-6), "compiled cpu model, second input: %g" % np.abs(yc2 - yr2).max())
    ok(c.stats["steps"] >= 1, "cpu compile stats %r" % c.stats)
else:
    print("cpu device not in this library (%s): cpu check is the refusal" % why)
    raises(3, lambda: m.run({"x": x}, device="cpu"), "cpu device refused", "no cpu backend")
raises(2, lambda: sinter.compile_model(m, device="tpu"), "unknown compile device")

# 4. an ONNX file (made with onnx's helper when onnx is installed): softmax(x @ W + B)
try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:
    onnx = None
    print("onnx not installed: ONNX check skipped")
if onnx:
    W = rng.standard_normal((6, 4)).astype(np.float32)
    B = rng.standard_normal(4).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Add", ["h", "B"], ["a"]),
         helper.make_node("Softmax", ["a"], ["y"], axis=-1)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [numpy_helper.from_array(W, "W"), numpy_helper.from_array(B, "B")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(tmp, "s.onnx"))
    mo = sinter.load(os.path.join(tmp, "s.onnx"))
    xo = rng.standard_normal((2, 6)).astype(np.float32)
    (yo,) = mo.run({"x": xo}, device="ref")
    a = xo.astype(np.float64) @ W + B
    e = np.exp(a - a.max(-1, keepdims=True))
    ok(np.allclose(yo, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7), "ONNX softmax(x W + B)")

# 5. a sample: resblock on ref, deterministic, and integer/bool outputs come back typed
r = sinter.load(os.path.join(src, "samples", "resblock.sir"), shapes={"N": 1}).init_random(5)
ins = r.random_inputs(9)
o1, o2 = r.run(ins, device="ref")[0], r.run(ins, device="ref")[0]
ok(o1.shape == (1, 8, 16, 16) and np.array_equal(o1, o2) and (o1 >= 0).all() and o1.std() > 0,
   "resblock on ref")

# 6. .npy and .npz against NumPy's own reader and writer, on fresh random values
arrs = {"f": rng.standard_normal((3, 4)).astype(np.float32), "h": rng.standard_normal(5).astype(np.float16),
        "q": rng.integers(-2**62, 2**62, (2, 3), dtype=np.int64), "b": rng.integers(0, 2, 4).astype(np.bool_),
        "u": rng.integers(0, 255, (2, 2, 2), dtype=np.uint8)}
sinter.write_tensors(os.path.join(tmp, "w.npz"), arrs)
with np.load(os.path.join(tmp, "w.npz")) as z:
    ok(sorted(z.files) == sorted(arrs) and all(np.array_equal(z[k], v) and z[k].dtype == v.dtype
                                               for k, v in arrs.items()), "np.load of sinter's .npz")
sinter.write_tensors(os.path.join(tmp, "one.npy"), {"f": arrs["f"]})
ok(np.array_equal(np.load(os.path.join(tmp, "one.npy")), arrs["f"]), "np.load of sinter's .npy")
d = rng.standard_normal((4, 3, 2))
np.savez_compressed(os.path.join(tmp, "c.npz"), d=np.asfortranarray(d), i=rng.integers(-9, 9, 7).astype(">i2"),
                    z=np.zeros((0, 3), np.float32))
got = sinter.read_tensors(os.path.join(tmp, "c.npz"))
ok(np.array_equal(got["d"], d.astype(np.float32)), "float64 Fortran array: rounded to f32 in C order")
ok(got["i"].dtype == np.int32 and list(got["i"]) == [int(v) for v in np.load(os.path.join(tmp, "c.npz"))["i"]],
   "big-endian int16 widened")
ok(got["z"].shape == (0, 3), "empty array")
big = {"k%d" % i: rng.standard_normal(1000).astype(np.float32) for i in range(40)}
np.savez(os.path.join(tmp, "many.npz"), **big)
got = sinter.read_tensors(os.path.join(tmp, "many.npz"))
ok(len(got) == 40 and all(np.array_equal(got[k], v) for k, v in big.items()), "np.savez with 40 arrays")
try:
    import ml_dtypes
    bf = rng.standard_normal(6).astype(ml_dtypes.bfloat16)
    sinter.write_tensors(os.path.join(tmp, "bf.npy"), {"x": bf})
    ok(np.array_equal(np.load(os.path.join(tmp, "bf.npy")), bf.astype(np.float32)), "bf16 written as float32")
except ImportError:
    pass

# state (docs/DESIGN.md, State): an input made state by load(states=...),
# on cpu (Compiled.state, set_state, reset_state); ref runs from zeros
with open(os.path.join(tmp, "acc.sir"), "w") as f:
    f.write('sinter 1\n\nfunc @main(%past: f32[2,3], %x: f32[2,3]) -> (f32[2,3], f32[2,3]) {\n'
            '  %present = add(%past, %x)\n  %y = relu(%present)\n  return %present, %y\n}\n')
m = sinter.load(os.path.join(tmp, "acc.sir"), states={"present": "past"})
m.init_random(0)
ok([d["name"] for d in m.inputs] == ["x"] and [d["name"] for d in m.outputs] == ["y"], "states leave the I/O")
if sinter.cpu_available()[0]:
    c = sinter.compile_model(m, device="cpu")
    tot = np.zeros((2, 3), np.float32)
    for k in range(3):
        x = rng.standard_normal((2, 3)).astype(np.float32)
        tot += x
        ok(np.allclose(c.run({"x": x})[0], np.maximum(tot, 0), atol=1e-6), "state: run %d accumulates" % k)
    ok(np.allclose(c.state()["past"], tot, atol=1e-6), "state(): the sum so far")
    c.set_state({"past": np.full((2, 3), 2, np.float32)})
    ok(np.allclose(c.run({"x": np.ones((2, 3), np.float32)})[0], 3), "set_state: the next run starts there")
    c.reset_state()
    ok(not c.state()["past"].any(), "reset_state: zeros")
    c.close()
x = rng.standard_normal((2, 3)).astype(np.float32)
ok(np.allclose(sinter.compile_model(m, device="ref").run({"x": x})[0], np.maximum(x, 0)), "ref: from zeros")

print("test_numpy.py: %s" % ("all checks passed" if not fails else "%d failures" % fails))
sys.exit(1 if fails else 0)
