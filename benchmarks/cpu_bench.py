#!/usr/bin/env python3
"""cpu_bench.py: sinter's cpu device against onnxruntime's CPU provider, on
the same models, weights, inputs and thread count, in one run.

The models are written here as ONNX (onnx.helper, random weights from a
seed), as the samples have them: the MLP of samples/mlp.sir, a ResNet-50
(torchvision's layout, batch norms already folded into the convolutions'
biases, as sinter's fold-bn pass leaves them) and GPT-2 small (12 layers,
as samples/gpt2.sir) on 128 tokens. sinter reads the same file through
`sinter import` (its initializers become the weights file); onnxruntime
runs it with intra_op_num_threads = --threads and graph optimizations on.
Latency: median of --iters calls after warmup, each side timed by its own
wall clock around one call (`sinter bench --device cpu --json`). ResNet-50
also runs once on the reference interpreter (`sinter run --device ref`).
Cold compile: `sinter bench`'s cold compile (empty caches); warm start: its
second process, from its start to its first output, which finds the plan
in the plan cache (the weight image mapped, the objects from the kernel
cache); warm ready: the same less that first run (start to a loaded plan).

With --cpu-seconds S, also each side's CPU time (user + sys) per call on
one thread (about S seconds of calls each), less sensitive to other load
on the machine than latency.
The temporary folder (models, weights: about 1 GB) is removed at the end.

PyTorch on CPU, where `import torch` works: the same ONNX graph run node
by node with torch's eager ops (torch_run), same weights, input and
thread count; its columns say "-" elsewhere.

With --rounds R, each model is measured R times, the two sides' order
alternating, and the ratios summarized (median and worst), with the
ratio of the two sides' fastest calls beside: one run's ratio of medians
moves by 10 % or more on a shared machine, whose load comes in bursts of
seconds (a run's median can be 1.5x its minimum).

With --paired P, also P pairs of calls in this one process, the two
sides taking turns call by call (which goes first alternating), after a
pause of 300 ms each (onnxruntime's pool threads spin on after a call,
40 to 60 ms of CPU in the next half second, and took a core from the next
sinter call: the MLP's 11.4-12.0 ms with 300 ms pauses were 16.3 with 100
ms ones, and 12 with 100 ms and onnxruntime's spinning turned off): sinter
through its Python binding on the library beside SINTER (the plan
compiled as `sinter bench` compiles it, each call timed by
sinter_compiled_bench, outputs in buffers made once), onnxruntime through
an IOBinding whose output buffer is made once, each call timed by the
wall clock around run_with_iobinding. The ratio is the median of the
pairs' ratios: a burst of load lasting seconds falls on both sides of a
pair alike, where the rows above time one side's calls, then the other's.

The paired calls' percentiles (median, p90, p99, max: a shared host's
bursts show in the tail, not the median) are in a table of their own.
--pause MS sets the pause between paired calls (default 300).

With --load N, N busy-loop processes (python `while True: pass`) run for
the whole measurement and are killed at the end: the host shared as a
container with a CPU quota shares it (issue 31; docs/PERF.md).

The models: mlp, resnet50, gpt2 (written here) and llama, the tiny Llama
of tests/onnx/models/llama (a Hugging Face export, 16 tokens, masked
attention) with its own inputs.

usage: cpu_bench.py SINTER [--threads 2] [--iters 20] [--models mlp,resnet50,gpt2,llama] [--rounds R]
                    [--cpu-seconds S] [--paired P] [--pause MS] [--load N]
Needs numpy, onnx and onnxruntime (tests/requirements.txt).
"""
import argparse
import json
import os
import resource
import struct
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


class G:
    def __init__(self, seed):
        self.nodes, self.inits, self.rng, self.k = [], [], np.random.default_rng(seed), 0

    def name(self, p):
        self.k += 1
        return "%s%d" % (p, self.k)

    def w(self, shape, fan_in):
        n = self.name("w")
        b = 1.0 / np.sqrt(fan_in)
        self.inits.append(numpy_helper.from_array(self.rng.uniform(-b, b, size=shape).astype(np.float32), n))
        return n

    def op(self, op, ins, **attrs):
        o = self.name(op.lower())
        self.nodes.append(helper.make_node(op, ins, [o], **attrs))
        return o

    def conv(self, x, cin, cout, k, stride=1, relu=True):
        w = self.w((cout, cin, k, k), cin * k * k)
        b = self.w((cout,), cin * k * k)
        p = k // 2
        y = self.op("Conv", [x, w, b], kernel_shape=[k, k], strides=[stride, stride], pads=[p, p, p, p])
        return self.op("Relu", [y]) if relu else y

    def model(self, x_shape, out, out_shape):
        g = helper.make_graph(self.nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, out_shape)], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
        m.ir_version = 9
        onnx.checker.check_model(m)
        return m


def mlp(seed):
    """samples/mlp.sir: four 4096x4096 linear layers, each followed by GELU."""
    g = G(seed)
    x = "x"
    for _ in range(4):
        x = g.op("Gelu", [g.op("Gemm", [x, g.w((4096, 4096), 4096), g.w((4096,), 4096)], transB=1)])
    return g.model([1, 4096], x, [1, 4096]), [1, 4096]


def resnet50(seed):
    g = G(seed)
    x = g.conv("x", 3, 64, 7, 2)
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for width, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
        for i in range(blocks):
            s = stride if i == 0 else 1
            y = g.conv(x, cin, width, 1)
            y = g.conv(y, width, width, 3, s)
            y = g.conv(y, width, width * 4, 1, relu=False)
            sc = g.conv(x, cin, width * 4, 1, s, relu=False) if i == 0 else x
            x = g.op("Relu", [g.op("Add", [y, sc])])
            cin = width * 4
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    w, b = g.w((1000, 2048), 2048), g.w((1000,), 2048)
    x = g.op("Gemm", [x, w, b], transB=1)
    return g.model([1, 3, 224, 224], x, [1, 1000]), [1, 3, 224, 224]


def gpt2(seed, seq=128, layers=12, d=768, heads=12, vocab=50257):
    """GPT-2 small as samples/gpt2.sir writes it (HF GPT2Model, gelu_new,
    causal softmax(q k^T / 8) v), on seq tokens; random weights."""
    g = G(seed)
    hd = d // heads

    def const(name, arr):
        g.inits.append(numpy_helper.from_array(arr, name))
        return name

    def ln(x):
        return g.op("LayerNormalization", [x, const(g.name("lnw"), np.ones(d, np.float32)),
                                           const(g.name("lnb"), np.zeros(d, np.float32))], axis=-1, epsilon=1e-5)

    def lin(x, a, b):
        return g.op("Add", [g.op("MatMul", [x, g.w((a, b), a)]), g.w((b,), a)])

    wte = const("wte", (g.rng.standard_normal((vocab, d)) * 0.02).astype(np.float32))
    wpe = const("wpe", (g.rng.standard_normal((1024, d)) * 0.01).astype(np.float32))
    pos = const("pos", np.arange(seq, dtype=np.int64))
    h = g.op("Add", [g.op("Gather", [wte, "x"]), g.op("Gather", [wpe, pos])])
    mask = const("mask", np.triu(np.ones((seq, seq), np.bool_), 1))
    ninf = const("ninf", np.array(-np.inf, np.float32))
    scale = const("scale", np.array(1.0 / np.sqrt(hd), np.float32))
    shp = const("shp", np.array([1, seq, heads, hd], np.int64))
    back = const("back", np.array([1, seq, d], np.int64))
    split = const("split", np.array([d, d, d], np.int64))
    for _ in range(layers):
        a = ln(h)
        qkv = lin(a, d, 3 * d)
        q, k, v = g.name("q"), g.name("k"), g.name("v")
        g.nodes.append(helper.make_node("Split", [qkv, split], [q, k, v], axis=2))
        q = g.op("Transpose", [g.op("Reshape", [q, shp])], perm=[0, 2, 1, 3])
        k = g.op("Transpose", [g.op("Reshape", [k, shp])], perm=[0, 2, 3, 1])
        v = g.op("Transpose", [g.op("Reshape", [v, shp])], perm=[0, 2, 1, 3])
        s = g.op("Mul", [g.op("MatMul", [q, k]), scale])
        s = g.op("Where", [mask, ninf, s])
        o = g.op("MatMul", [g.op("Softmax", [s], axis=-1), v])
        o = g.op("Reshape", [g.op("Transpose", [o], perm=[0, 2, 1, 3]), back])
        h = g.op("Add", [h, lin(o, d, d)])
        m = g.op("Gelu", [lin(ln(h), d, 4 * d)], approximate="tanh")
        h = g.op("Add", [h, lin(m, 4 * d, d)])
    h = ln(h)
    gr = helper.make_graph(g.nodes, "g", [helper.make_tensor_value_info("x", TensorProto.INT64, [1, seq])],
                           [helper.make_tensor_value_info(h, TensorProto.FLOAT, [1, seq, d])], g.inits)
    mo = helper.make_model(gr, opset_imports=[helper.make_opsetid("", 20)])
    mo.ir_version = 9
    onnx.checker.check_model(mo)
    return mo, [1, seq]


def torch_run(model, x, threads, iters):
    """PyTorch on CPU (eager, torch.no_grad, `threads` intra-op threads)
    running the ONNX graph node by node with torch's own ops, on the same
    weights and input: (median ms, output), or None where torch is not
    installed. Covers the ops the three models above use."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    torch.set_num_threads(threads)
    env = {i.name: torch.from_numpy(numpy_helper.to_array(i).copy()) for i in model.graph.initializer}

    def attr(n, name, default=None):
        for a in n.attribute:
            if a.name == name:
                return helper.get_attribute_value(a)
        return default

    def step(n, v):
        t = n.op_type
        if t == "Conv":
            p = attr(n, "pads", [0, 0, 0, 0])
            return [F.conv2d(v[0], v[1], v[2] if len(v) > 2 else None, stride=attr(n, "strides", [1, 1]),
                             padding=(p[0], p[1]), dilation=attr(n, "dilations", [1, 1]), groups=attr(n, "group", 1))]
        if t == "MaxPool":
            p = attr(n, "pads", [0, 0, 0, 0])
            return [F.max_pool2d(v[0], attr(n, "kernel_shape"), attr(n, "strides"), (p[0], p[1]))]
        if t == "Gemm":
            return [F.linear(v[0], v[1] if attr(n, "transB", 0) else v[1].t(), v[2] if len(v) > 2 else None)]
        if t == "Gelu":
            ap = attr(n, "approximate", "none")
            return [F.gelu(v[0], approximate=ap.decode() if isinstance(ap, bytes) else ap)]
        if t == "LayerNormalization":
            return [F.layer_norm(v[0], v[0].shape[-1:], v[1], v[2], attr(n, "epsilon", 1e-5))]
        if t == "Split":
            return list(torch.split(v[0], v[1].tolist(), dim=attr(n, "axis", 0)))
        if t == "Reshape":
            return [v[0].reshape(v[1].tolist())]
        if t == "Transpose":
            return [v[0].permute(attr(n, "perm"))]
        if t == "Gather":
            return [v[0][v[1]]]
        if t == "Where":
            return [torch.where(v[0], v[1], v[2])]
        if t == "Softmax":
            return [torch.softmax(v[0], attr(n, "axis", -1))]
        if t == "Flatten":
            return [torch.flatten(v[0], attr(n, "axis", 1))]
        if t == "GlobalAveragePool":
            return [v[0].mean((2, 3), keepdim=True)]
        ops = {"Add": torch.add, "Mul": torch.mul, "MatMul": torch.matmul, "Relu": torch.relu}
        if t in ops:
            return [ops[t](*v)]
        raise NotImplementedError("cpu_bench's torch side: ONNX op %s" % t)

    def forward():
        vals = dict(env, x=torch.from_numpy(x))
        for n in model.graph.node:
            for name, val in zip(n.output, step(n, [vals[i] for i in n.input])):
                vals[name] = val
        return vals[model.graph.output[0].name]

    with torch.no_grad():
        out = forward()
        for _ in range(3):
            forward()
        ts = []
        for _ in range(iters):
            t0 = time.perf_counter()
            forward()
            ts.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(ts)), out.numpy()


LLAMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "onnx", "models", "llama")


def read_safetensors(path):
    """{name: array} of a .safetensors file (the tiny Llama's inputs)."""
    dt = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32, "BOOL": np.bool_}
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        data = f.read()
    return {k: np.frombuffer(data[v["data_offsets"][0]:v["data_offsets"][1]], dt[v["dtype"]]).reshape(v["shape"]).copy()
            for k, v in head.items() if k != "__metadata__"}


def pct(ms):
    """median, p90, p99 and max of a list of call times"""
    a = np.asarray(ms, np.float64)
    return dict(median=float(np.median(a)), p90=float(np.percentile(a, 90)), p99=float(np.percentile(a, 99)),
                max=float(a.max()))


def sinter_json(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit("%s failed (%d):\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sinter")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--models", default="mlp,resnet50,gpt2")
    ap.add_argument("--rounds", type=int, default=1,
                    help="measure each model this many times (a row each) and summarize the ratios")
    ap.add_argument("--cpu-seconds", type=float, default=0,
                    help="also each side's CPU time (user + sys) per call on 1 thread, over about this many seconds")
    ap.add_argument("--paired", type=int, default=0,
                    help="also this many pairs of calls, the two sides in turn in this process")
    ap.add_argument("--pause", type=float, default=300, help="ms between paired calls")
    ap.add_argument("--load", type=int, default=0, help="busy-loop processes running meanwhile")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="sinter-cpu-bench-")
    load = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.load)]
    try:
        rows = bench(a, work)
    finally:
        for p in load:
            p.kill()
            p.wait()
        # the models, their weights and outputs: about 1 GB with GPT-2
        shutil.rmtree(work, ignore_errors=True)
    print("\n| model | threads | sinter cpu ms | onnxruntime ms | sinter / ort | PyTorch cpu ms | sinter / PyTorch "
          "| cold compile s | warm start s | warm ready s | vs ref |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print("| %s | %d | %.2f | %.2f | %.2f | %s | %s | %.3f | %.3f | %s | %s |" % (
            r["model"], r["threads"], r["sinter_ms"], r["ort_ms"], r["ratio"],
            "%.2f" % r["torch_ms"] if "torch_ms" in r else "-", "%.2f" % r["torch_ratio"] if "torch_ms" in r else "-",
            r["cold_compile_s"],
            r["warm_start_s"], "%.3f" % r["warm_ready_s"] if r["warm_ready_s"] >= 0 else "-", "%.1fx (ref %.0f ms)" % (r["ref_speedup"], r["ref_ms"]) if "ref_ms" in r else "-"))
    if a.rounds > 1:
        print("\n| model | sinter / ort (medians), each round | median | worst | of the minima, each round |")
        print("| --- | --- | --- | --- | --- |")
        for name in a.models.split(","):
            rs = [r["ratio"] for r in rows if r["model"] == name]
            ms = [r["min_ratio"] for r in rows if r["model"] == name]
            print("| %s | %s | %.2f | %.2f | %s |" % (name, ", ".join("%.2f" % v for v in rs), float(np.median(rs)), max(rs),
                                               ", ".join("%.2f" % v for v in ms)))
    if a.paired:
        print("\n| model | pairs | sinter ms (median) | onnxruntime ms (median) | sinter / ort (median of the pairs) "
              "| pairs sinter faster | rel L2 vs ort |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for r in rows:
            if "paired_ratio" in r:
                print("| %s | %d | %.2f | %.2f | %.2f | %d %% | %.1e |" % (
                    r["model"], a.paired, r["paired_sinter_ms"], r["paired_ort_ms"], r["paired_ratio"],
                    round(100 * r["paired_faster"]), r["paired_rel_l2"]))
        print("\n| model | side | load | pairs | median ms | p90 | p99 | max | p90 / median |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in rows:
            for side in ("sinter", "ort"):
                if "paired_%s_pct" % side in r:
                    q = r["paired_%s_pct" % side]
                    print("| %s | %s | %d | %d | %.3f | %.3f | %.3f | %.3f | %.2f |" % (
                        r["model"], "onnxruntime" if side == "ort" else side, a.load, a.paired, q["median"], q["p90"],
                        q["p99"], q["max"], q["p90"] / q["median"]))
    if a.cpu_seconds:
        print("\n| model | sinter cpu ms/call, 1 thread | onnxruntime cpu ms/call, 1 thread | sinter / ort |")
        print("| --- | --- | --- | --- |")
        for r in rows:
            print("| %s | %.1f | %.1f | %.2f |" % (r["model"], r["sinter_cpu_ms"], r["ort_cpu_ms"], r["cpu_ratio"]))


def cpu_s(who):
    u = resource.getrusage(who)
    return u.ru_utime + u.ru_stime


def cpu_time(a, name, path, sir, work, npz, feeds):
    """CPU time (user + sys) per call on 1 thread, which the other load
    on the machine moves far less than latency: onnxruntime's over n calls
    in this process, n making about cpu_seconds of its time; sinter's as
    the difference between two `sinter bench` processes of 5 and 5 + n
    calls (the same compile and warm start in both, whose own variation
    is then a few % of the difference)."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    for _ in range(3):
        sess.run(None, feeds)
    t0 = cpu_s(resource.RUSAGE_SELF)
    sess.run(None, feeds)
    n = max(5, int(a.cpu_seconds / max(cpu_s(resource.RUSAGE_SELF) - t0, 1e-3)))
    t0 = cpu_s(resource.RUSAGE_SELF)
    for _ in range(n):
        sess.run(None, feeds)
    ort_ms = (cpu_s(resource.RUSAGE_SELF) - t0) / n * 1e3
    del sess
    used = []
    for iters in (5, 5 + n):
        t0 = cpu_s(resource.RUSAGE_CHILDREN)
        sinter_json([a.sinter, "bench", sir, "--device", "cpu", "--threads", "1", "--weights",
                     os.path.join(work, name + ".safetensors"), "--inputs", npz, "--iters", str(iters),
                     "--warmup", "3", "--json"])
        used.append(cpu_s(resource.RUSAGE_CHILDREN) - t0)
    return (used[1] - used[0]) / n * 1e3, ort_ms


def paired(a, work, name, path, sir, feeds):
    """P pairs of calls, sinter's and onnxruntime's in turn in this
    process (module docstring): (median ms each, median of the pairs'
    ratios, the share of pairs sinter won, rel L2 of the outputs, each
    side's percentiles)."""
    pkg = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")
    os.environ.setdefault("SINTER_LIBRARY", os.path.join(os.path.dirname(os.path.abspath(a.sinter)), "libsinter.so"))
    if pkg not in sys.path:  # once, not per model and round
        sys.path.insert(0, pkg)
    import sinter
    m = sinter.load(sir, weights=os.path.join(work, name + ".safetensors"))
    c = sinter.compile_model(m, device="cpu", threads=a.threads, cache_dir=os.path.join(work, "paired-cache"))
    got = c.run(feeds)[0]  # also the inputs sinter_compiled_bench reuses
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)[0]
    io = sess.io_binding()
    for k, v in feeds.items():
        io.bind_cpu_input(k, v)
    out = ort.OrtValue.ortvalue_from_numpy(np.empty_like(want))
    io.bind_ortvalue_output(sess.get_outputs()[0].name, out)

    def ort_call():
        t0 = time.perf_counter()
        sess.run_with_iobinding(io)
        return (time.perf_counter() - t0) * 1e3

    def sinter_call():
        return c.bench(0, 1)[0]
    for _ in range(3):
        ort_call()
        sinter_call()
    s_ms, o_ms = [], []
    for i in range(a.paired):
        for side in ((sinter_call, ort_call) if i % 2 == 0 else (ort_call, sinter_call)):
            time.sleep(a.pause / 1e3)
            (s_ms if side is sinter_call else o_ms).append(side())
    r = [si / oi for si, oi in zip(s_ms, o_ms)]
    err = float(np.linalg.norm(np.asarray(got, np.float64) - want) / np.linalg.norm(want.astype(np.float64)))
    del c, m, sess
    return (float(np.median(s_ms)), float(np.median(o_ms)), float(np.median(r)), sum(v < 1 for v in r) / len(r), err,
            pct(s_ms), pct(o_ms))


def bench(a, work):
    rows = []
    for name in a.models.split(","):
        path = os.path.join(work, name + ".onnx")
        if name == "llama":
            shutil.copyfile(os.path.join(LLAMA, "model.onnx"), path)
            feeds = read_safetensors(os.path.join(LLAMA, "inputs.safetensors"))
        else:
            m, xs = {"mlp": mlp, "resnet50": resnet50, "gpt2": gpt2}[name](0)
            onnx.save(m, path)
            feeds = {"x": np.random.default_rng(1).standard_normal(xs).astype(np.float32) if name != "gpt2" else
                     np.random.default_rng(1).integers(0, 50257, size=xs).astype(np.int64)}
        sir = os.path.join(work, name + ".sir")
        subprocess.run([a.sinter, "import", path, "-o", sir], check=True, capture_output=True)
        npz = os.path.join(work, name + ".in.npz")
        np.savez(npz, **feeds)
        for rnd in range(a.rounds):
            rows.append(measure(a, work, name, path, sir, npz, feeds, rnd))
    return rows


def measure(a, work, name, path, sir, npz, feeds, rnd):
    """One row: onnxruntime's latency and sinter's bench, one after the
    other (onnxruntime first in even rounds, sinter first in odd ones, so
    drifting load on a shared machine does not favour one side)."""
    def ort_side():
        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        so.inter_op_num_threads = 1
        t0 = time.perf_counter()
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        load = time.perf_counter() - t0
        want = sess.run(None, feeds)[0]
        for _ in range(3):
            sess.run(None, feeds)
        ts = []
        for _ in range(a.iters):
            t0 = time.perf_counter()
            sess.run(None, feeds)
            ts.append((time.perf_counter() - t0) * 1e3)
        return float(np.median(ts)), load, want, min(ts)

    out = os.path.join(work, name + ".out.npz")

    def sinter_side():
        return sinter_json([a.sinter, "bench", sir, "--device", "cpu", "--threads", str(a.threads), "--weights",
                            os.path.join(work, name + ".safetensors"), "--inputs", npz, "--iters", str(a.iters),
                            "--warmup", "3", "--json", "-o", out])
    if rnd % 2:
        j = sinter_side()
        ort_ms, ort_load, want, ort_min = ort_side()
    else:
        ort_ms, ort_load, want, ort_min = ort_side()
        j = sinter_side()
    got = list(np.load(out).values())[0]
    err = float(np.linalg.norm(got.astype(np.float64) - want) / np.linalg.norm(want.astype(np.float64)))
    row = dict(model=name, round=rnd, threads=a.threads, sinter_ms=j["median_ms"], ort_ms=ort_ms,
               ratio=j["median_ms"] / ort_ms, min_ratio=j["min_ms"] / ort_min, cold_compile_s=j["cold_compile_s"],
               warm_start_s=j["warm_start_s"], ort_session_s=ort_load, rel_l2_vs_ort=err)
    # the second process ready to run: its start to a loaded plan (the
    # warm start less its first run); -1 from a sinter that does not say
    row["warm_ready_s"] = j["warm_start_s"] - j["warm_run_s"] if "warm_run_s" in j else -1
    tr = torch_run(onnx.load(path), feeds["x"], a.threads, a.iters) if list(feeds) == ["x"] else None
    if tr:
        row["torch_ms"], row["torch_ratio"] = tr[0], j["median_ms"] / tr[0]
        row["torch_rel_l2_vs_ort"] = float(np.linalg.norm(tr[1].astype(np.float64) - want) /
                                           np.linalg.norm(want.astype(np.float64)))
    if name == "resnet50":
        t0 = time.perf_counter()
        r = sinter_json([a.sinter, "run", sir, "--device", "ref", "--weights",
                         os.path.join(work, name + ".safetensors"), "--inputs", npz, "--json"])
        row["ref_ms"] = r["run_s"] * 1e3
        row["ref_speedup"] = row["ref_ms"] / j["median_ms"]
    if a.paired:
        (row["paired_sinter_ms"], row["paired_ort_ms"], row["paired_ratio"], row["paired_faster"],
         row["paired_rel_l2"], row["paired_sinter_pct"], row["paired_ort_pct"]) = paired(a, work, name, path, sir, feeds)
    if a.cpu_seconds:
        row["sinter_cpu_ms"], row["ort_cpu_ms"] = cpu_time(a, name, path, sir, work, npz, feeds)
        row["cpu_ratio"] = row["sinter_cpu_ms"] / row["ort_cpu_ms"]
    print(json.dumps(row), flush=True)
    return row


if __name__ == "__main__":
    main()
