"""floor.py: the card's measured ceilings, taken once per benchmark run.

  python3 benchmarks/floor.py        prints one JSON object

- matmul peak: square 8192 x 8192 x 8192 products with torch.matmul (cuBLAS),
  bf16 and fp32 with TF32 allowed, several back to back between two CUDA
  events; the best of a few such batches after warm-up. 2 n^3 FLOPs each.
- copy bandwidth: a 1 GiB device-to-device copy_ (read 1 GiB, write 1 GiB),
  counted as 2 GiB moved; the best of a few.

These are what this card reaches here, today (clocks and power included),
not the datasheet: the floor of a row is max(FLOPs / peak, bytes / bandwidth)
with these numbers.
"""
import json


def _best_ms(fn, reps, batches, warm=3):
    import torch
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(batches):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        e.synchronize()
        best = min(best, s.elapsed_time(e) / reps)
    return best


def set_tf32(on):
    """Allows (or forbids) TF32 in fp32 matmuls and convolutions, through the
    fp32_precision settings where this torch has them (2.9 and later)."""
    import torch
    b = torch.backends
    if hasattr(b.cuda.matmul, "fp32_precision") and hasattr(b.cudnn, "conv"):
        mode = "tf32" if on else "ieee"
        b.cuda.matmul.fp32_precision = mode
        b.cudnn.conv.fp32_precision = mode
    else:
        b.cuda.matmul.allow_tf32 = on
        b.cudnn.allow_tf32 = on


def _matmul_tflops(n, dtype, reps):
    import torch
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(n, n, device="cuda", generator=g, dtype=dtype)
    b = torch.randn(n, n, device="cuda", generator=g, dtype=dtype)
    c = torch.empty(n, n, device="cuda", dtype=dtype)
    ms = _best_ms(lambda: torch.matmul(a, b, out=c), reps=reps, batches=5)
    return 2.0 * n * n * n / (ms * 1e-3) / 1e12


def _copy_gbs(nbytes):
    import torch
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").fill_(7)
    dst = torch.empty_like(src)
    ms = _best_ms(lambda: dst.copy_(src), reps=5, batches=5)
    return 2.0 * nbytes / (ms * 1e-3) / 1e9


def measure(n=8192, copy_bytes=1 << 30):
    """{"bf16_tflops", "tf32_tflops", "copy_gbs", ...} measured on the current
    CUDA device. Takes a few seconds."""
    import torch
    res = {"matmul_n": n, "copy_bytes": copy_bytes}
    res["bf16_tflops"] = _matmul_tflops(n, torch.bfloat16, reps=10)
    set_tf32(True)
    try:
        res["tf32_tflops"] = _matmul_tflops(n, torch.float32, reps=5)
    finally:
        set_tf32(False)
    res["copy_gbs"] = _copy_gbs(copy_bytes)
    torch.cuda.empty_cache()
    return res


def floor_ms(flops, nbytes, floor, precision):
    """The physical floor of one call in ms: the larger of compute time at
    the measured matmul peak of the precision (TF32 rate for tf32 rows, bf16
    rate otherwise) and memory time at the measured copy bandwidth."""
    peak = floor["tf32_tflops"] if precision == "tf32" else floor["bf16_tflops"]
    t_flops = flops / (peak * 1e12) * 1e3
    t_bytes = nbytes / (floor["copy_gbs"] * 1e9) * 1e3
    return max(t_flops, t_bytes), ("compute" if t_flops >= t_bytes else "memory")


if __name__ == "__main__":
    print(json.dumps(measure(), indent=1))
