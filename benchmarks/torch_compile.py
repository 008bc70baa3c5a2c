#!/usr/bin/env python3
"""torch_compile.py: sinter.compile (the Python package) against the module's
own output and against torch.compile, in one process on one GPU.

  SINTER_LIBRARY=build/libsinter.so.0 PYTHONPATH=python \\
      python3 benchmarks/torch_compile.py [--out DIR] [--keep-onnx DIR]

Models (random weights, seed 0; no network on the GPU machine):
torchvision resnet18 at 1x3x224x224, and a transformers GPT-2 (GPT2Model,
4 layers, d=256, 4 heads, 128 tokens). Per model: sinter.compile (fp32,
mode default) checked against the module's fp32 output (relative L2 below
1e-3, TF32 off), then the median device time (CUDA events, 50 calls after
10) of eager, torch.compile (default) and the sinter callable, with the
first-call (compile) time of each. Results go to DIR/torch_compile.json."""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import sinter  # noqa: E402


def timed(fn, x, warm=10, iters=50):
    for _ in range(warm):
        fn(*x)
    torch.cuda.synchronize()
    ms = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(*x)
        b.record()
        b.synchronize()
        ms.append(a.elapsed_time(b))
    return statistics.median(ms)


def first(t):
    if isinstance(t, (tuple, list)):
        return t[0]
    if hasattr(t, "last_hidden_state"):
        return t.last_hidden_state
    return t


def models():
    import torchvision
    torch.manual_seed(0)
    r = torchvision.models.resnet18().cuda().eval()
    yield "resnet18_bs1", r, (torch.randn(1, 3, 224, 224, device="cuda"),)
    from transformers import GPT2Config, GPT2Model
    cfg = GPT2Config(n_layer=4, n_embd=256, n_head=4, n_positions=128, vocab_size=2048)
    for k, v in (("use_cache", False), ("_attn_implementation", "eager")):  # as scripts/coverage.py
        try:
            setattr(cfg, k, v)
        except Exception:
            pass
    g = GPT2Model(cfg).cuda().eval()

    class Wrap(torch.nn.Module):  # the hidden states as one tensor (no cache)
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, ids):
            return self.m(input_ids=ids, use_cache=False).last_hidden_state

    yield "gpt2_4l_d256_t128", Wrap(g).eval(), (torch.randint(0, 2048, (1, 128), device="cuda"),)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    ap.add_argument("--keep-onnx", default=None, help="keep each export here as NAME.onnx")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rows, bad = [], 0
    for name, m, x in models():
        row = {"model": name, "gpu": torch.cuda.get_device_name()}
        with torch.no_grad():
            want = first(m(*x)).float()
            t0 = time.time()
            keep = os.path.join(a.keep_onnx, name + ".onnx") if a.keep_onnx else None
            from sinter._torch import compile_module
            f = compile_module(m, x, keep_onnx=keep)
            y = f(*x)
            torch.cuda.synchronize()
            row["sinter_first_call_s"] = time.time() - t0
            row["rel_l2"] = float((first(y).double() - want.double()).norm() / want.double().norm())
            row["match"] = row["rel_l2"] < 1e-3
            bad += not row["match"]
            row["eager_ms"] = timed(m, x)
            row["sinter_ms"] = timed(f, x)
            t0 = time.time()
            c = torch.compile(m)
            c(*x)
            torch.cuda.synchronize()
            row["torch_compile_first_call_s"] = time.time() - t0
            row["torch_compile_ms"] = timed(c, x)
        rows.append(row)
        print(json.dumps(row), flush=True)
    with open(os.path.join(a.out, "torch_compile.json"), "w") as fh:
        json.dump(rows, fh, indent=1)
    print("%-20s %9s %10s %10s %10s %10s %10s" % ("model", "rel_l2", "eager ms", "compile ms", "sinter ms",
                                                 "compile 1st", "sinter 1st"))
    for r in rows:
        print("%-20s %9.2e %10.3f %10.3f %10.3f %9.1fs %9.1fs" % (
            r["model"], r["rel_l2"], r["eager_ms"], r["torch_compile_ms"], r["sinter_ms"],
            r["torch_compile_first_call_s"], r["sinter_first_call_s"]))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
