#!/usr/bin/env python3
"""kernels.py: one kernel family alone, sinter against PyTorch's own kernel
on the same shapes, in one run on one GPU.

  python3 benchmarks/kernels.py --sinter build/sinter [--family attention]
                                [--iters 200] [--out DIR]

attention: scaled_dot_product_attention(q, k, v) on GPT-2's shapes (12 heads,
512 tokens, head dim 64, causal, batch 1 and 8) and a long one (4096 tokens,
head dim 128, 16 heads, batch 1 and 4, causal). sinter: a graph holding the
attention alone (q, k, v its inputs, already on the device), `sinter bench
--json`, the median of --iters calls, each between two CUDA events (the plan
is one kernel launch, so the time includes the gap between the first event
and the launch). PyTorch: F.scaled_dot_product_attention under
sdpa_kernel(FLASH_ATTENTION), timed the same way ("per call", Python's
dispatch inside the events) and as --iters calls back to back between two
events ("back to back", the kernel's own time for short ones). The GPU is
kept busy for a second first so that its clocks are up. TFLOP/s count 4*B*H*L*S*D, halved when causal (the
FlashAttention papers' convention); the table also gives sinter's time over
PyTorch's. Results go to DIR/kernels.json (default $OUT, else /tmp).

gemm: the GEMM template (codegen/cg_gemm_tc.c) on GPT-2's product shapes
(512 tokens: 768->3072 and 3072->768), the MLP sample's (batch 64,
4096->4096) and a large square one (4096^3), in bf16, TF32 and fp8 (e4m3).
sinter: linear(x, w, b) then an erf GELU, the epilogue cuBLASLt cannot
express, so the plan is one template kernel (fp8: linear(x, w), fp8 out,
which the template takes without one). PyTorch, same inputs: F.gelu(
F.linear(x, w, b)) (cuBLAS, then a GELU kernel; fp8: torch._scaled_mm with
unit scales, bf16 out) and torch.matmul alone ("cuBLAS matmul": the
product without the epilogue). TFLOP/s count 2*M*N*K; the fraction of the
peak is of the best cuBLAS throughput measured in the same run on an
8192^3 product of that dtype.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ATTENTION = [
    # name, batch, heads, seq, head dim, causal, dtype
    ("gpt2 bs1", 1, 12, 512, 64, True, "bf16"),
    ("gpt2 bs8", 8, 12, 512, 64, True, "bf16"),
    ("gpt2 bs8 f16", 8, 12, 512, 64, True, "f16"),
    ("4096/128 bs1", 1, 16, 4096, 128, True, "bf16"),
    ("4096/128 bs4", 4, 16, 4096, 128, True, "bf16"),
    ("4096/128 bs4 noncausal", 4, 16, 4096, 128, False, "bf16"),
]


GEMM = [
    # name, M, N, K, dtype
    ("gpt2 fc 512x3072x768", 512, 3072, 768, "bf16"),
    ("gpt2 proj 512x768x3072", 512, 768, 3072, "bf16"),
    ("mlp bs64 64x4096x4096", 64, 4096, 4096, "bf16"),
    ("square 4096", 4096, 4096, 4096, "bf16"),
    ("gpt2 fc tf32", 512, 3072, 768, "tf32"),
    ("square 4096 tf32", 4096, 4096, 4096, "tf32"),
    ("gpt2 fc fp8", 512, 3072, 768, "fp8"),
    ("mlp bs64 fp8", 64, 4096, 4096, "fp8"),
    ("square 4096 fp8", 4096, 4096, 4096, "fp8"),
]


def gemm_sir(m, n, k, dt):
    if dt == "fp8":
        return ("sinter 1\nfunc @main(%%x: f8e4m3[%d,%d], %%w: f8e4m3[%d,%d]) -> (f8e4m3[%d,%d]) {\n"
                "  %%y = linear(%%x, %%w)\n  return %%y\n}\n") % (m, k, n, k, m, n)
    t = "f32" if dt == "tf32" else dt
    return ("sinter 1\nfunc @main(%%x: %s[%d,%d], %%w: %s[%d,%d], %%b: %s[%d]) -> (%s[%d,%d]) {\n"
            "  %%l = linear(%%x, %%w, %%b)\n  %%y = gelu(%%l)\n  return %%y\n}\n") % (t, m, k, t, n, k, t, n, t, m, n)


def gemm_bias_sir(m, n, k, dt):
    """linear(x, w, b) alone: a product cuBLASLt runs with its bias."""
    t = "f32" if dt == "tf32" else dt
    return ("sinter 1\nfunc @main(%%x: %s[%d,%d], %%w: %s[%d,%d], %%b: %s[%d]) -> (%s[%d,%d]) {\n"
            "  %%y = linear(%%x, %%w, %%b)\n  return %%y\n}\n") % (t, m, k, t, n, k, t, n, t, m, n)


def run_sinter(args, path, extra, cache=None):
    env = dict(os.environ, SINTER_CACHE_DIR=cache or os.path.join(os.path.dirname(path), "cache"))
    cmd = [args.sinter, "bench", path, "--init", "random", "--json", "--iters", str(args.iters),
           "--warmup", "50"] + extra
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if p.returncode:
        return None, "exit %d: %s" % (p.returncode, p.stderr.strip()[-300:])
    try:
        j = json.loads([l for l in p.stdout.strip().splitlines() if l.startswith("{")][-1])
    except (ValueError, IndexError):
        return None, "no JSON: " + p.stdout[-300:]
    if "--profile" in extra:
        # what the plan runs (bench --profile lists its kernels): the GEMM template or cuBLASLt
        ks = sorted({w.split()[0] for w in (x.strip() for x in p.stdout.splitlines())
                     if w.startswith("gemm_tc_") or w.startswith("cublasLt")})
        j["chose"] = (" ".join("template" if k.startswith("gemm_tc_") else "cuBLASLt" for k in ks) +
                      (" (tuner %.2fx, %d scored out)" % (j.get("tune_speedup", 0), j.get("tune_failed", 0))))
        return j, None
    for key in ("median_ms", "latency_median_ms", "ms_median"):
        if key in j:
            return j[key], None
    return None, "no median in " + ",".join(sorted(j))


def cuda_ms(fn, iters):
    """Median per call between two events, and back to back."""
    import torch
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1))
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(iters):
        fn()
    e1.record()
    e1.synchronize()
    return statistics.median(times), e0.elapsed_time(e1) / iters


def torch_gemm(args, m, n, k, dt):
    """(epilogue ms, b2b), (matmul alone ms, b2b)."""
    import torch
    import torch.nn.functional as F
    torch.backends.cuda.matmul.allow_tf32 = dt == "tf32"
    g = torch.Generator(device="cuda").manual_seed(0)
    typ = torch.float32 if dt == "tf32" else torch.bfloat16
    x = torch.rand(m, k, device="cuda", dtype=typ, generator=g) * 2 - 1
    w = torch.rand(n, k, device="cuda", dtype=typ, generator=g) * 2 - 1
    b = torch.rand(n, device="cuda", dtype=typ, generator=g) * 2 - 1
    if dt == "fp8":
        x8, w8 = x.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
        one = torch.ones((), device="cuda", dtype=torch.float32)
        f = lambda: torch._scaled_mm(x8, w8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        t = cuda_ms(f, args.iters)
        return t, t
    wt = w.t()
    return (cuda_ms(lambda: F.gelu(F.linear(x, w, b)), args.iters), cuda_ms(lambda: torch.matmul(x, wt), args.iters))


def torch_peak(dt):
    """The best cuBLAS throughput on 8192^3 (TFLOP/s)."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = dt == "tf32"
    s = 8192
    typ = torch.float32 if dt == "tf32" else torch.bfloat16
    a = torch.rand(s, s, device="cuda", dtype=typ) - 0.5
    bt = torch.rand(s, s, device="cuda", dtype=typ) - 0.5
    if dt == "fp8":
        a8, b8 = a.to(torch.float8_e4m3fn), bt.to(torch.float8_e4m3fn)
        one = torch.ones((), device="cuda", dtype=torch.float32)
        f = lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    else:
        f = lambda: torch.matmul(a, bt)
    _, tb = cuda_ms(f, 20)
    return 2.0 * s * s * s / tb / 1e9


def gemm_main(args, dev):
    import torch
    peaks = {dt: torch_peak(dt) for dt in ("bf16", "tf32", "fp8")}
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name, m, n, k, dt in GEMM:
            if args.only and name not in args.only.split(","):
                continue
            path = os.path.join(work, name.replace(" ", "_") + ".sir")
            with open(path, "w") as f:
                f.write(gemm_sir(m, n, k, dt))
            prec = ["--precision", "tf32"] if dt == "tf32" else []
            sm, err = run_sinter(args, path, prec)
            (te, teb), (tm, tmb) = torch_gemm(args, m, n, k, dt)
            row = {"name": name, "m": m, "n": n, "k": k, "dtype": dt, "flops": 2.0 * m * n * k,
                   "sinter_ms": sm, "torch_epi_ms": te, "torch_epi_b2b_ms": teb, "torch_mm_ms": tm,
                   "torch_mm_b2b_ms": tmb, "peak_tflops": peaks[dt], "error": err}
            if args.tuned and dt != "fp8":
                # reduce-overhead against max-autotune (both replay a CUDA graph): linear + GELU (the
                # template's tiles, split-K among them), and linear + bias alone (cuBLASLt's
                # algorithms against the template's configs), with what the tuned plan runs
                pb = os.path.join(work, name.replace(" ", "_") + "_bias.sir")
                with open(pb, "w") as f:
                    f.write(gemm_bias_sir(m, n, k, dt))
                for key, pth in (("gelu", path), ("bias", pb)):
                    row[key + "_ro_ms"], _ = run_sinter(args, pth, prec + ["--mode", "reduce-overhead"])
                    j, _ = run_sinter(args, pth, prec + ["--mode", "max-autotune", "--tune-progress", "quiet",
                                                         "--profile"])
                    row[key + "_ma_ms"] = j["median_ms"] if j else None
                    row[key + "_ma_chose"] = j["chose"] if j else "?"
                print("  r-o / max-autotune: linear+gelu %s / %s (%s); linear+bias %s / %s (%s)" % (
                    row["gelu_ro_ms"], row["gelu_ma_ms"], row["gelu_ma_chose"], row["bias_ro_ms"],
                    row["bias_ma_ms"], row["bias_ma_chose"]), flush=True)
            rows.append(row)
            print("%-26s sinter %s  torch+gelu %.4f ms  torch matmul %.4f ms (b2b %.4f)" % (
                name, "%.4f ms" % sm if sm else err, te, tm, tmb), flush=True)
    with open(os.path.join(args.out, "kernels_gemm.json"), "w") as fj:
        json.dump({"device": dev, "torch": torch.__version__, "peaks": peaks, "rows": rows}, fj, indent=1)
    print("\ngemm on %s (torch %s), median of %d calls; cuBLAS peak (8192^3): bf16 %.0f, tf32 %.0f, fp8 %.0f TFLOP/s"
          % (dev, torch.__version__, args.iters, peaks["bf16"], peaks["tf32"], peaks["fp8"]))
    print("| product | dtype | sinter template ms | TFLOP/s | of peak | torch linear+gelu ms | torch matmul ms "
          "(b2b) | matmul TFLOP/s (b2b) | of peak | sinter / torch linear+gelu | sinter / torch matmul |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    bad = False
    for r in rows:
        sm, f, pk = r["sinter_ms"], r["flops"], r["peak_tflops"]
        tmb = r["torch_mm_b2b_ms"]
        if sm is None:
            bad = True
            print("| %s | %s | %s | | | %.4f | %.4f | %.0f | %.2f | | |" % (
                r["name"], r["dtype"], r["error"], r["torch_epi_ms"], tmb, f / tmb / 1e9, f / tmb / 1e9 / pk))
            continue
        print("| %s | %s | %.4f | %.0f | %.2f | %.4f | %.4f (%.4f) | %.0f | %.2f | %.2f | %.2f |" % (
            r["name"], r["dtype"], sm, f / sm / 1e9, f / sm / 1e9 / pk, r["torch_epi_ms"], r["torch_mm_ms"], tmb,
            f / tmb / 1e9, f / tmb / 1e9 / pk, sm / r["torch_epi_ms"], sm / r["torch_mm_ms"]))
    if args.tuned:
        print("\nreduce-overhead against max-autotune (sinter bench, each a CUDA graph; median of %d calls)"
              % args.iters)
        print("| product | dtype | linear+gelu r-o ms | m-a ms | m-a runs | linear+bias r-o (cuBLASLt) ms | m-a ms "
              "| m-a runs | torch matmul ms (b2b) |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        fmt = lambda v: "%.4f" % v if isinstance(v, float) else "-"
        for r in rows:
            if "gelu_ma_ms" not in r:
                continue
            print("| %s | %s | %s | %s | %s | %s | %s | %s | %.4f (%.4f) |" % (
                r["name"], r["dtype"], fmt(r["gelu_ro_ms"]), fmt(r["gelu_ma_ms"]), r["gelu_ma_chose"],
                fmt(r["bias_ro_ms"]), fmt(r["bias_ma_ms"]), r["bias_ma_chose"], r["torch_mm_ms"],
                r["torch_mm_b2b_ms"]))
    return 1 if bad else 0


def flops(b, h, s, d, causal):
    f = 4.0 * b * h * s * s * d
    return f / 2 if causal else f


def sir_text(b, h, s, d, causal, dt):
    t = "%s[%d,%d,%d,%d]" % (dt, b, h, s, d)
    return ("sinter 1\n"
            "func @main(%%q: %s, %%k: %s, %%v: %s) -> (%s) {\n"
            "  %%o = scaled_dot_product_attention(%%q, %%k, %%v) causal=%s\n"
            "  return %%o\n}\n") % (t, t, t, t, "true" if causal else "false")


def sinter_time(args, work, name, b, h, s, d, causal, dt):
    path = os.path.join(work, name.replace(" ", "_").replace("/", "_") + ".sir")
    with open(path, "w") as f:
        f.write(sir_text(b, h, s, d, causal, dt))
    env = dict(os.environ, SINTER_CACHE_DIR=os.path.join(work, "cache"))
    cmd = [args.sinter, "bench", path, "--init", "random", "--json", "--iters", str(args.iters),
           "--warmup", "50"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if p.returncode:
        return None, "exit %d: %s" % (p.returncode, p.stderr.strip()[-300:])
    try:
        j = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None, "no JSON: " + p.stdout[-300:]
    for key in ("median_ms", "latency_median_ms", "ms_median"):
        if key in j:
            return j[key], None
    return None, "no median in " + ",".join(sorted(j))


def torch_time(args, b, h, s, d, causal, dt):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    typ = torch.bfloat16 if dt == "bf16" else torch.float16
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.rand(b, h, s, d, device="cuda", dtype=typ, generator=g) * 2 - 1 for _ in range(3))
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        for _ in range(50):
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        torch.cuda.synchronize()
        times = []
        for _ in range(args.iters):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            e1.record()
            e1.synchronize()
            times.append(e0.elapsed_time(e1))
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(args.iters):
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        e1.record()
        e1.synchronize()
    return statistics.median(times), e0.elapsed_time(e1) / args.iters


def warm_gpu():
    """About a second of matrix products, so that the clocks are up."""
    import time
    import torch
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    t0 = time.time()
    while time.time() - t0 < 1.0:
        for _ in range(10):
            a @ a
        torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sinter", default="build/sinter")
    ap.add_argument("--family", default="attention", choices=["attention", "gemm"])
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--only", default="", help="gemm: comma list of row names to run (default: all)")
    ap.add_argument("--tuned", action="store_true",
                    help="gemm: also sinter's reduce-overhead against max-autotune, on linear+gelu and on "
                         "linear+bias alone (cuBLASLt against the GEMM template), with what the tuned plan runs")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    args = ap.parse_args()
    import torch
    dev = torch.cuda.get_device_name(0)
    rows = []
    warm_gpu()
    os.makedirs(args.out, exist_ok=True)
    if args.family == "gemm":
        return gemm_main(args, dev)
    with tempfile.TemporaryDirectory() as work:
        for name, b, h, s, d, causal, dt in ATTENTION:
            sm, err = sinter_time(args, work, name, b, h, s, d, causal, dt)
            tm, tb = torch_time(args, b, h, s, d, causal, dt)
            f = flops(b, h, s, d, causal)
            rows.append({"name": name, "batch": b, "heads": h, "seq": s, "head_dim": d, "causal": causal,
                         "dtype": dt, "flops": f, "sinter_ms": sm, "torch_flash_ms": tm, "torch_flash_b2b_ms": tb,
                         "error": err})
            print("%-24s sinter %s  torch %.4f ms (back to back %.4f)" % (name, "%.4f ms" % sm if sm else err, tm, tb),
                  flush=True)
    with open(os.path.join(args.out, "kernels.json"), "w") as fj:
        json.dump({"device": dev, "torch": torch.__version__, "rows": rows}, fj, indent=1)
    print("\nattention on %s (torch %s, flash SDPA), median of %d calls" % (dev, torch.__version__, args.iters))
    print("| shape | sinter ms | sinter TFLOP/s | torch flash ms per call | back to back | torch TFLOP/s (b2b) "
          "| sinter / torch per call | sinter / torch b2b |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    bad = False
    for r in rows:
        sm, tm, tb = r["sinter_ms"], r["torch_flash_ms"], r["torch_flash_b2b_ms"]
        if sm is None:
            bad = True
            print("| %s | %s | | %.4f | %.4f | %.1f | | |" % (r["name"], r["error"], tm, tb, r["flops"] / tb / 1e9))
            continue
        print("| %s (B=%d H=%d L=%d D=%d%s %s) | %.4f | %.1f | %.4f | %.4f | %.1f | %.2f | %.2f |" % (
            r["name"], r["batch"], r["heads"], r["seq"], r["head_dim"], " causal" if r["causal"] else "",
            r["dtype"], sm, r["flops"] / sm / 1e9, tm, tb, r["flops"] / tb / 1e9, sm / tm, sm / tb))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
