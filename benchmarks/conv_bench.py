#!/usr/bin/env python3
"""conv_bench.py: sinter's conv2d kernels against cuDNN on the convolutions
of ResNet-50 at batch 32 (or --batch N; bf16, channels-last), in one run
on one GPU.

  python3 benchmarks/conv_bench.py --bench build/tests/conv_bench
                                   [--tf32] [--batch N] [--out DIR] [CONFIG ...]

cuDNN runs through torch.nn.functional.conv2d (channels_last, bias,
torch.backends.cudnn.benchmark on, so it picks its fastest algorithm);
sinter through benchmarks/conv_bench.c (its default config, then every
CONFIG given, e.g. 128x128x32w8s4). Both time 10 back-to-back calls of one
conv between CUDA events, median over 20 such, after warm-up, on random
inputs. The matrix peak is measured in the same run (floor.py: an 8192^3
bf16 matmul, or TF32 with --tf32). Printed last: a table per shape and the
totals over the whole model (each shape times its count), averaged by
FLOPs: total FLOPs over total time, as TFLOP/s and as a fraction of the
peak. results go to DIR/conv_bench.json (default $OUT, else /tmp).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import floor  # noqa: E402

REPS, ITERS = 10, 20


def torch_ms(rows, batch, tf32):
    import torch
    import torch.nn.functional as F
    torch.backends.cudnn.benchmark = True
    floor.set_tf32(tf32)
    dt = torch.float32 if tf32 else torch.bfloat16
    out = {}
    g = torch.Generator(device="cuda").manual_seed(0)
    for r in rows:
        c, hw, o, k, s = r["c"], r["hw"], r["o"], r["k"], r["s"]
        x = (torch.rand(batch, c, hw, hw, device="cuda", generator=g) * 2 - 1).to(dt)
        x = x.contiguous(memory_format=torch.channels_last)
        w = ((torch.rand(o, c, k, k, device="cuda", generator=g) * 2 - 1) * 0.1).to(dt)
        w = w.contiguous(memory_format=torch.channels_last)
        b = (torch.rand(o, device="cuda", generator=g) * 2 - 1).to(dt)

        def call():
            return F.conv2d(x, w, b, stride=s, padding=k // 2)
        with torch.no_grad():
            for _ in range(5):
                call()
            torch.cuda.synchronize()
            times = []
            for _ in range(ITERS):
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                for _ in range(REPS):
                    call()
                e1.record()
                e1.synchronize()
                times.append(e0.elapsed_time(e1) / REPS)
        out[r["name"]] = statistics.median(times)
        del x, w, b
    torch.cuda.empty_cache()
    return out


def sinter_rows(bench, tf32, configs, batch):
    cmd = [bench, "--reps", str(REPS), "--iters", str(ITERS), "--batch", str(batch)]
    cmd += (["--tf32"] if tf32 else []) + configs
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit("conv_bench failed (%d): %s" % (p.returncode, p.stderr.strip()))
    head, rows = "", []
    for line in p.stdout.splitlines():
        if line.startswith("#"):
            head = line[2:]
            continue
        f = line.split("\t")
        if len(f) < 10:
            continue
        rows.append({"name": f[0], "count": int(f[1]), "m": int(f[2]), "n": int(f[3]), "k": int(f[4]),
                     "gflop": float(f[5]), "asked": f[6], "used": f[7],
                     "ms": None if f[8] == "-" else float(f[8]), "note": f[10] if len(f) > 10 else ""})
    return head, rows


SHAPES = {}  # name -> (c, hw, o, k, s), parsed from the C bench's names


def parse_name(name):
    # "l3 3x3/2 256-256 @28"
    parts = name.split()
    ks = parts[1].split("/")
    k = int(ks[0].split("x")[0])
    s = int(ks[1]) if len(ks) > 1 else 1
    c, o = (int(v) for v in parts[2].split("-"))
    hw = int(parts[3][1:])
    return {"name": name, "c": c, "hw": hw, "o": o, "k": k, "s": s}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default=os.path.join(os.path.dirname(HERE), "build", "tests", "conv_bench"))
    ap.add_argument("--tf32", action="store_true")
    ap.add_argument("--batch", type=int, default=32, help="the batch of every conv (default 32)")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    ap.add_argument("configs", nargs="*")
    a = ap.parse_args()
    import torch
    fl = floor.measure()
    peak = fl["tf32_tflops"] if a.tf32 else fl["bf16_tflops"]
    head, srows = sinter_rows(a.bench, a.tf32, a.configs, a.batch)
    names = []
    for r in srows:
        if r["name"] not in names:
            names.append(r["name"])
    shapes = [parse_name(n) for n in names]
    tms = torch_ms(shapes, a.batch, a.tf32)
    by = {}
    for r in srows:
        by.setdefault(r["name"], []).append(r)
    lines = []
    tot = {"flop": 0.0, "torch": 0.0, "default": 0.0, "best": 0.0}
    for n in names:
        rs = by[n]
        d = rs[0]
        ok = [r for r in rs if r["ms"] is not None]
        best = min(ok, key=lambda r: r["ms"]) if ok else d
        fl_ = d["gflop"] * d["count"]
        tot["flop"] += fl_
        tot["torch"] += tms[n] * d["count"]
        tot["default"] += (d["ms"] or float("nan")) * d["count"]
        tot["best"] += (best["ms"] or float("nan")) * d["count"]

        def tf(ms):
            return d["gflop"] / ms if ms else float("nan")
        lines.append("| %s | %d | %.2f | %.0f (%.0f %%) | %.0f (%.0f %%) | %s | %.0f | %s | %.2f |" % (
            n, d["count"], d["gflop"], tf(tms[n]), 100 * tf(tms[n]) / peak, tf(d["ms"]), 100 * tf(d["ms"]) / peak,
            d["used"], tf(best["ms"]), best["used"], (d["ms"] or float("nan")) / tms[n]))
    res = {"device": head, "torch": torch.__version__, "peak_tflops": peak, "floor": fl, "sinter": srows,
           "cudnn_ms": tms, "totals_ms": tot}
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "conv_bench.json"), "w") as f:
        json.dump(res, f, indent=1)
    print("\n%s; measured peak %.0f TFLOP/s (%s matmul 8192^3); torch %s, cuDNN %s" % (
        head, peak, "TF32" if a.tf32 else "bf16", torch.__version__, torch.backends.cudnn.version()))
    print("| conv (ResNet-50 bs32) | count | GFLOP | cuDNN TFLOP/s (of peak) | sinter default TFLOP/s (of peak) "
          "| default config | best asked TFLOP/s | best config | sinter / cuDNN time |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for l in lines:
        print(l)
    for k in ("torch", "default", "best"):
        t = tot["flop"] / tot[k]
        print("total %-8s %.3f ms  %.0f TFLOP/s  %.1f %% of peak" % (
            {"torch": "cuDNN", "default": "sinter", "best": "best"}[k], tot[k], t, 100 * t / peak))


if __name__ == "__main__":
    main()
