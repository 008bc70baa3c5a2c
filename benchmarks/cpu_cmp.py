#!/usr/bin/env python3
"""cpu_cmp.py: CPU time and latency per call, sinter's cpu device (one or
two builds) against onnxruntime, back to back in one process, on the
models of cpu_bench.py (same ONNX file, weights and input).

For each round and thread count (1, 2): onnxruntime's session timed in
this process (getrusage around the calls), then each sinter build's
cpu_cputime (benchmarks/cpu_cputime.c, linked to that build's
libsinter.so), which times the calls in its own process. CPU time per
call on 1 thread is the figure other load on a shared machine moves
least; compare rows of one round.

usage: cpu_cmp.py MODEL DIR [--rounds 2] [--iters 10] [--drv NAME=PATH ...]
  DIR holds MODEL.onnx, MODEL.sir, MODEL.safetensors and MODEL.in.npz
  (--prepare writes them there: the ONNX file from cpu_bench.py, then
  `sinter import` with --sinter PATH).
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np


def cpu_s():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def ort_run(path, x, threads, iters):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    for _ in range(3):
        s.run(None, {"x": x})
    ts, c0 = [], cpu_s()
    for _ in range(iters):
        t = time.perf_counter()
        s.run(None, {"x": x})
        ts.append((time.perf_counter() - t) * 1e3)
    return dict(wall=float(np.mean(ts)), min=min(ts), cpu=(cpu_s() - c0) / iters * 1e3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("dir")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--drv", action="append", default=[], help="NAME=PATH of a cpu_cputime binary")
    ap.add_argument("--prepare", action="store_true")
    ap.add_argument("--sinter", default="build/sinter")
    a = ap.parse_args()
    base = os.path.join(a.dir, a.model)
    if a.prepare:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import cpu_bench
        import onnx
        m, xs = {"mlp": cpu_bench.mlp, "resnet50": cpu_bench.resnet50, "gpt2": cpu_bench.gpt2}[a.model](0)
        onnx.save(m, base + ".onnx")
        x = np.random.default_rng(1).standard_normal(xs).astype(np.float32) if a.model != "gpt2" else \
            np.random.default_rng(1).integers(0, 50257, size=xs).astype(np.int64)
        np.savez(base + ".in.npz", x=x)
        subprocess.run([a.sinter, "import", base + ".onnx", "-o", base + ".sir"], check=True, capture_output=True)
    x = np.load(base + ".in.npz")["x"]
    for _ in range(a.rounds):
        for threads in (1, 2):
            res = {"ort": ort_run(base + ".onnx", x, threads, a.iters)}
            for d in a.drv:
                name, path = d.split("=", 1)
                p = subprocess.run([path, base + ".sir", base + ".safetensors", base + ".in.npz", str(threads),
                                    str(a.iters)], capture_output=True, text=True, check=True)
                j = json.loads(p.stdout)
                res[name] = dict(wall=j["wall_ms"], min=j["min_ms"], cpu=j["cpu_ms"])
            print("%s threads=%d %s load %.1f" % (a.model, threads, "  ".join(
                "%s: mean/min %.1f/%.1f ms, cpu %.1f ms" % (k, v["wall"], v["min"], v["cpu"]) for k, v in res.items()),
                os.getloadavg()[0]), flush=True)


if __name__ == "__main__":
    main()
