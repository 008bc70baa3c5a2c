#!/usr/bin/env python3
"""run.py: sinter against PyTorch, side by side on one GPU, same weights and
inputs. See benchmarks/README.md for what is measured and how to read it.

  python3 benchmarks/run.py --sinter build-gpu/sinter [--max-autotune]
                            [--configs mlp_bs64,gpt2_bs1] [--out DIR]
  python3 benchmarks/run.py --dry-run [--out DIR]   # table and JSON on fake numbers

Per configuration (benchmarks/models.py): build the PyTorch model
(torch.manual_seed(0), eval, batch norms randomized), save its fp32
state_dict and a random input as safetensors, take an fp32 reference output
(TF32 off), time PyTorch eager here and each torch.compile mode in fresh
processes (cold: empty inductor cache; warm: a second process on that
cache), then run sinter on samples/<model>.sir with the same files: `sinter
run` for the output check, `sinter bench --json` for the times. The table
is printed last; results.json goes to --out (default $OUT, else /tmp).
Exit status: 0 when every row ran and passed its check, 1 otherwise.
"""
import argparse
import copy
import datetime
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import floor  # noqa: E402  (torch is imported inside its functions)
import models  # noqa: E402

TORCH_MODES = ["eager", "default", "reduce-overhead"]
SINTER_MODES = ["default", "reduce-overhead"]
COPIES = 4  # inputs rotated among this many device copies while timing


def log(msg):
    print(msg, flush=True)


# ---- PyTorch: preparing and timing one mode -----------------------------------

def torch_setup(precision):
    import torch
    torch.backends.cudnn.benchmark = True
    floor.set_tf32(precision == "tf32")


def to_device(cfg, model, x):
    """The model and COPIES copies of the input on the GPU, in the row's
    precision and layout (channels-last for ResNet)."""
    import torch
    prec = cfg["precision"]
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(prec, torch.float32)
    model = model.to("cuda").to(dt)
    cl = models.MODELS[cfg["model"]].get("channels_last")
    if cl:
        model = model.to(memory_format=torch.channels_last)
    xs = []
    for _ in range(COPIES):
        xi = x.to("cuda")
        if xi.is_floating_point():
            xi = xi.to(dt)
        if cl:
            xi = xi.contiguous(memory_format=torch.channels_last)
        xs.append(xi)
    return model, xs


def time_calls(call, xs, iters, warmup):
    """Median and min latency in ms of `call`, one CUDA-event pair around
    each call, after `warmup` untimed calls; inputs rotated."""
    import torch
    for i in range(warmup):
        call(xs[i % len(xs)])
    torch.cuda.synchronize()
    s = torch.cuda.Event(enable_timing=True)
    e = torch.cuda.Event(enable_timing=True)
    ms = []
    for i in range(iters):
        x = xs[i % len(xs)]
        s.record()
        call(x)
        e.record()
        e.synchronize()
        ms.append(s.elapsed_time(e))
    return statistics.median(ms), min(ms)


def graph_pool_idle_bytes(torch):
    """Bytes of CUDA graphs' private memory pools that no live tensor holds
    (what a replay uses for its intermediates); None when the snapshot does
    not say which pool a segment belongs to."""
    n = 0
    for seg in torch.cuda.memory_snapshot():
        pid = seg.get("segment_pool_id")
        if pid is None:
            return None
        if tuple(pid) != (0, 0):
            n += seg["total_size"] - seg["allocated_size"]
    return n


def torch_measure(cfg, mode, model, x, iters, warmup, phase="cold"):
    """One PyTorch mode on one configuration. phase "cold": first call,
    time to steady state, latency, peak memory and the output; "warm": the
    first call only (the caller provides a warm inductor cache)."""
    import torch
    torch_setup(cfg["precision"])
    model, xs = to_device(cfg, model, x)
    res = {"mode": mode}
    torch._dynamo.reset()
    with torch.inference_mode():
        fn = model if mode == "eager" else torch.compile(model, mode=None if mode == "default" else mode)
        graphs = mode in ("reduce-overhead", "max-autotune")
        mark = getattr(torch.compiler, "cudagraph_mark_step_begin", None)

        def call(xi):
            if graphs and mark:
                mark()
            return fn(xi)

        torch.cuda.synchronize()
        t0 = time.perf_counter()
        y = call(xs[0])
        torch.cuda.synchronize()
        res["first_call_s"] = time.perf_counter() - t0
        out = y.float().cpu()
        del y
        for i in (1, 2):  # CUDA graphs are recorded on the second call
            call(xs[i % len(xs)])
        torch.cuda.synchronize()
        res["ready_s"] = time.perf_counter() - t0
        if phase == "warm":
            return res, None
        res["median_ms"], res["min_ms"] = time_calls(call, xs, iters, warmup)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        call(xs[0])
        torch.cuda.synchronize()
        extra = sum(xi.numel() * xi.element_size() for xi in xs[1:])
        # A CUDA graph's replay allocates nothing: the intermediates live in
        # its private pool, reserved at capture, which max_memory_allocated
        # after a reset does not see (it would count weights and outputs
        # only). The pools' bytes not held by live tensors are added.
        pool = graph_pool_idle_bytes(torch)
        res["graph_pool_bytes"] = pool
        res["peak_bytes"] = torch.cuda.max_memory_allocated() - extra + (pool or 0)
    return res, out


def worker(spec_path):
    """--worker SPEC: one torch.compile mode in this fresh process; writes
    its result (JSON) and output (torch.save) to the paths SPEC names."""
    import torch
    with open(spec_path) as f:
        spec = json.load(f)
    cfg = models.CONFIGS[spec["config"]]
    m = models.build(cfg["model"])
    sd = {k: torch.from_numpy(v.copy()) for k, v in models.load_safetensors(spec["weights"]).items()}
    m.load_state_dict(sd, strict=True)
    x = torch.from_numpy(models.load_safetensors(spec["inputs"])[models.MODELS[cfg["model"]]["input"]].copy())
    res, out = torch_measure(cfg, spec["mode"], m, x, spec["iters"], spec["warmup"], spec["phase"])
    if out is not None:
        torch.save(out, spec["output"])
    with open(spec["result"], "w") as f:
        json.dump(res, f)


def run_worker(args, name, mode, phase, files, cache, logs):
    """Runs `run.py --worker` for (name, mode, phase) with the inductor and
    Triton caches in `cache`; its result dict, or {"error": ...}."""
    tag = "%s.%s.%s" % (name, mode, phase)
    spec = {"config": name, "mode": mode, "phase": phase, "iters": args.iters,
            "warmup": args.warmup, "weights": files["weights"], "inputs": files["inputs"],
            "output": os.path.join(files["dir"], tag + ".pt"),
            "result": os.path.join(files["dir"], tag + ".json")}
    spec_path = os.path.join(files["dir"], tag + ".spec.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    env = dict(os.environ)
    env.update(TORCHINDUCTOR_CACHE_DIR=cache, TRITON_CACHE_DIR=os.path.join(cache, "triton"),
               TORCHINDUCTOR_FX_GRAPH_CACHE="1", TORCHINDUCTOR_AUTOGRAD_CACHE="1")
    limit = args.autotune_timeout if mode == "max-autotune" else args.timeout
    with open(os.path.join(logs, tag + ".log"), "w") as lf:
        try:
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", spec_path],
                               stdout=lf, stderr=subprocess.STDOUT, env=env, timeout=limit)
        except subprocess.TimeoutExpired:
            return {"mode": mode, "error": "timed out after %d s" % limit}
    if p.returncode != 0 or not os.path.exists(spec["result"]):
        return {"mode": mode, "error": "exit %d, see %s.log" % (p.returncode, tag)}
    with open(spec["result"]) as f:
        res = json.load(f)
    if phase == "cold":
        import torch
        res["output"] = torch.load(spec["output"]).numpy()
    return res


# ---- sinter --------------------------------------------------------------------

def sinter_common(args, cfg, files):
    m = models.MODELS[cfg["model"]]
    return [os.path.join(ROOT, m["sample"]), "--shape", "N=%d" % cfg["batch"],
            "--weights", files["weights"], "--inputs", files["inputs"],
            "--precision", cfg["precision"]]


def sinter_call(args, argv, cache, log_path):
    env = dict(os.environ)
    env["SINTER_CACHE_DIR"] = cache
    try:
        p = subprocess.run([args.sinter] + argv, capture_output=True, text=True, env=env,
                           timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return 124, "", "timed out after %d s" % args.timeout
    with open(log_path, "a") as f:
        f.write("$ %s %s\n%s%s\n" % (args.sinter, " ".join(argv), p.stdout, p.stderr))
    return p.returncode, p.stdout, p.stderr


def last_line(text):
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:200] if lines else ""


def sinter_measure(args, name, cfg, mode, files, logs):
    """One `sinter bench --json -o OUT` in one mode: the times, and the
    outputs of the same compiled model for the check (one process, not a
    separate `sinter run`, to keep the whole run inside its budget)."""
    res = {"mode": mode}
    # "MODE+nofuse": the same mode with --no-fusion (what fusion moves)
    base, _, extra = mode.partition("+")
    mode_args = ([] if base == "default" else ["--mode", base]) + (["--no-fusion"] if extra == "nofuse" else [])
    common = sinter_common(args, cfg, files)
    log_path = os.path.join(logs, "%s.sinter.%s.log" % (name, mode))
    out = os.path.join(files["dir"], "%s.sinter.%s.safetensors" % (name, mode))
    cold = tempfile.mkdtemp(prefix="sinter-cold-", dir=files["dir"])
    rc, so, se = sinter_call(args, ["bench"] + common + mode_args +
                             ["--json", "--iters", str(args.iters), "--warmup", str(args.warmup),
                              "-o", out], cold, log_path)
    low = se.lower()
    if base != "default" and rc in (1, 2) and ("unknown mode" in low or "'--mode'" in low
                                               or (rc == 2 and "mode" in low)):
        res["error"] = "n/a"  # this sinter has no such mode
        return res
    if rc != 0:
        res["error"] = "bench exit %d: %s" % (rc, last_line(se))
        return res
    try:
        got = models.load_safetensors(out)
    except (OSError, ValueError) as e:
        res["error"] = "output unreadable: %s" % e
        return res
    oname = models.MODELS[cfg["model"]]["output"]
    res["output"] = got.get(oname, next(iter(got.values())) if len(got) == 1 else None)
    js = [ln for ln in so.splitlines() if ln.startswith("{")]
    try:
        b = json.loads(js[-1])
    except (IndexError, ValueError):
        res["error"] = "bench printed no JSON"
        return res
    res["bench"] = b
    res["median_ms"], res["min_ms"] = b.get("median_ms"), b.get("min_ms")
    res["cold_compile_s"] = b.get("cold_compile_s")
    res["warm_start_s"] = b.get("warm_start_s")  # a second process, plan-cache hit, context included
    res["warm_after_context_s"] = b.get("warm_after_context_s")
    if "peak_device_bytes" in b:
        res["mem_bytes"] = b["peak_device_bytes"]
    elif "arena_bytes" in b and "weight_bytes" in b:
        res["mem_bytes"] = b["arena_bytes"] + b["weight_bytes"]
    res["device"] = b.get("device")
    if b.get("tune_kernels"):
        log("  sinter %s %s: tuning %.1f s, %d kernels, %d candidates, %d timing runs, %.3fx on the tuned "
            "steps; warm start: %s timing runs" % (name, mode, b.get("tune_s", 0), b["tune_kernels"],
                                                     b.get("tune_candidates", 0), b.get("tune_timings", 0),
                                                     b.get("tune_speedup", 1), b.get("warm_tune_timings")))
    return res


# ---- one configuration ------------------------------------------------------------

def reference(m, x):
    """The fp32 output of a copy of m on the GPU (float64 numpy) and the
    FLOPs of its matrix products, counted on the way."""
    import torch
    g = copy.deepcopy(m).to("cuda")
    xg = x.to("cuda")
    holder = {}

    def fwd():
        holder["y"] = g(xg)

    with torch.inference_mode():
        flops = models.count_flops(g, fwd)
    return holder["y"].double().cpu().numpy(), flops


def prepare(name, cfg, work, cache):
    """Builds the model (shared between rows of one model), writes weights and
    input, takes the fp32 reference and counts the work."""
    import torch
    mname = cfg["model"]
    if mname not in cache:
        m = models.build(mname)
        sd = models.fp32_state_dict(m)
        wpath = os.path.join(work, mname + ".safetensors")
        models.save_safetensors(wpath, sd)
        numel = {k: v.numel() for k, v in sd.items() if v.is_floating_point()}
        cache[mname] = (m, wpath, numel)
    m, wpath, numel = cache[mname]
    x = models.make_input(cfg)
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    ipath = os.path.join(d, "input.safetensors")
    models.save_safetensors(ipath, {models.MODELS[mname]["input"]: x})
    torch_setup("fp32")  # the reference: fp32, TF32 off
    ref, flops = reference(m, x)
    torch.cuda.empty_cache()
    flops += models.attention_flops(cfg)
    files = {"weights": wpath, "inputs": ipath, "dir": d}
    work_ = {"flops": flops, "bytes": models.floor_bytes(cfg, numel, ref.size)}
    return m, x, ref, files, work_


def bench_config(args, name, model_cache, work, logs, floor_res):
    cfg = models.CONFIGS[name]
    log("== %s (%s, batch %d)" % (name, cfg["precision"], cfg["batch"]))
    t0 = time.time()
    m, x, ref, files, wk = prepare(name, cfg, work, model_cache)
    raw = {"config": name, "work": wk, "torch": {}, "sinter": {}}
    for mode in args.torch_modes:
        if mode == "eager":
            import torch
            r, out = torch_measure(cfg, "eager", copy.deepcopy(m), x, args.iters, args.warmup)
            r["output"] = out.numpy()
            torch.cuda.empty_cache()
        else:
            cache = tempfile.mkdtemp(prefix="inductor-", dir=files["dir"])
            r = run_worker(args, name, mode, "cold", files, cache, logs)
            if "error" not in r and (mode in args.warm_modes):
                w = run_worker(args, name, mode, "warm", files, cache, logs)
                r["warm_start_s"] = w.get("first_call_s")
                if "error" in w:
                    r["warm_error"] = w["error"]
            shutil.rmtree(cache, ignore_errors=True)
        raw["torch"][mode] = r
        log("   torch %-16s %s" % (mode, brief(r)))
    for mode in args.sinter_modes:
        r = sinter_measure(args, name, cfg, mode, files, logs)
        raw["sinter"][mode] = r
        log("   sinter %-15s %s" % (mode, brief(r)))
    row = assemble(name, cfg, raw, ref, floor_res)
    row["wall_s"] = round(time.time() - t0, 1)
    shutil.rmtree(files["dir"], ignore_errors=True)
    return row


# ---- rows: from raw measurements to figures ---------------------------------------

INF = float("inf")


def brief(r):
    """One progress line for a mode's raw result."""
    if r.get("error"):
        return "error: %s" % r["error"]
    parts = []
    if r.get("median_ms") is not None:
        parts.append("median %.4f ms (min %.4f)" % (r["median_ms"], r.get("min_ms") or 0))
    for k, label in (("first_call_s", "first call"), ("cold_compile_s", "cold"),
                     ("warm_start_s", "warm")):
        if r.get(k) is not None:
            parts.append("%s %.2f s" % (label, r[k]))
    return ", ".join(parts)


def _finite(v):
    return v is not None and v == v and v not in (INF, -INF)


def _best(modes, ok=lambda r: True):
    """(mode, median_ms) of the fastest mode with a time, or (None, None)."""
    best = (None, None)
    for mode, r in modes.items():
        ms = r.get("median_ms")
        if _finite(ms) and ok(r) and (best[1] is None or ms < best[1]):
            best = (mode, ms)
    return best


def assemble(name, cfg, raw, ref, floor_res):
    """The row of results.json from the raw measurements: the output checks
    against the fp32 reference `ref`, the best mode of each system, ratios,
    throughput, floor, the goals. Outputs themselves are not kept."""
    prec = cfg["precision"]
    wk = raw["work"]
    fl_ms, bound = floor.floor_ms(wk["flops"], wk["bytes"], floor_res, prec)
    row = {"config": name, "model": cfg["model"], "batch": cfg["batch"], "precision": prec,
           "unit": models.MODELS[cfg["model"]]["unit"], "items_per_call": models.items_per_call(cfg),
           "flops": wk["flops"], "floor_bytes": wk["bytes"], "floor_ms": fl_ms, "floor_bound": bound}
    eager_out = raw["torch"].get("eager", {}).get("output")
    torch_rows, errs = {}, []
    for mode, r in raw["torch"].items():
        t = {k: v for k, v in r.items() if k != "output" and v is not None}
        if r.get("output") is not None:
            t["err"] = models.rel_l2(r["output"], ref)
            errs.append(t["err"])
        torch_rows[mode] = t
    tol_spec = models.TOLERANCE[prec]
    worst = max([e for e in errs if _finite(e)], default=0.0)
    # sinter is held to the spec's bound, or to twice PyTorch's own error in
    # the same precision when that is looser (README: "Output check")
    tol = max(tol_spec, 2 * worst)
    sinter_rows = {}
    for mode, r in raw["sinter"].items():
        s = {k: v for k, v in r.items() if k not in ("output", "bench") and v is not None}
        if "bench" in r:
            s["bench"] = r["bench"]
        out = r.get("output")
        if out is not None:
            s["err"] = models.rel_l2(out, ref)
            if eager_out is not None:
                s["err_vs_torch"] = models.rel_l2(out, eager_out)
        if r.get("error") == "n/a":
            s["status"] = "n/a"
        elif "err" in s and not s["err"] <= tol:
            s["status"] = "FAIL"
        elif r.get("error") or "err" not in s or not _finite(s.get("median_ms")):
            s["status"] = "ERR"
            s.setdefault("error", "no output or no time")
        else:
            s["status"] = "ok"
        sinter_rows[mode] = s
    row.update(tol_spec=tol_spec, tol=tol, tol_widened=tol > tol_spec, torch=torch_rows,
               sinter=sinter_rows)
    st = [s["status"] for s in sinter_rows.values()]
    row["status"] = ("FAIL" if "FAIL" in st else "ERR" if "ERR" in st or "ok" not in st else "ok")
    pt_mode, pt_ms = _best(torch_rows, lambda r: not r.get("error"))
    s_mode, s_ms = _best(sinter_rows, lambda r: r["status"] == "ok")
    items = row["items_per_call"]
    row.update(best_torch_mode=pt_mode, best_torch_ms=pt_ms, best_sinter_mode=s_mode, sinter_ms=s_ms)
    if pt_ms:
        row["torch_throughput"] = items / (pt_ms * 1e-3)
        row["torch_floor_frac"] = fl_ms / pt_ms
    if s_ms:
        row["sinter_throughput"] = items / (s_ms * 1e-3)
        row["sinter_floor_frac"] = fl_ms / s_ms
    if pt_ms and s_ms:
        row["ratio"] = s_ms / pt_ms
    # compile, start, memory: sinter's best mode (else its default) against
    # torch.compile default; memory against PyTorch's leanest mode
    s_ref = sinter_rows.get(s_mode or "default", {})
    pt_def = torch_rows.get("default", {})
    if _finite(pt_def.get("first_call_s")) and _finite(s_ref.get("cold_compile_s")) and s_ref["cold_compile_s"] > 0:
        row["cold_speedup"] = pt_def["first_call_s"] / s_ref["cold_compile_s"]
    peaks = [t["peak_bytes"] for t in torch_rows.values() if _finite(t.get("peak_bytes"))]
    if peaks:
        row["torch_min_peak_bytes"] = min(peaks)
    goals = {}
    if "ratio" in row:
        goals["latency"] = row["ratio"] <= 0.8
    if "cold_speedup" in row:
        goals["cold"] = row["cold_speedup"] >= 5
    if _finite(s_ref.get("warm_start_s")):
        goals["warm"] = s_ref["warm_start_s"] < 0.1
    if peaks and _finite(s_ref.get("mem_bytes")):
        goals["memory"] = s_ref["mem_bytes"] <= min(peaks)
    row["goals"] = goals
    return row


def clean(o):
    """A copy of o fit for strict JSON: numpy values as Python ones, NaN and
    infinities as null."""
    if isinstance(o, dict):
        return {str(k): clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [clean(v) for v in o]
    if hasattr(o, "tolist"):
        return clean(o.tolist())
    if isinstance(o, float) and not math.isfinite(o):
        return None
    return o


# ---- the table ----------------------------------------------------------------------

def _f(v, spec, none="-"):
    return format(v, spec) if _finite(v) else none


def _grid(header, lines):
    """Columns padded to their widest cell; the first left-aligned."""
    w = [max(len(str(r[i])) for r in [header] + lines) for i in range(len(header))]
    out = []
    for k, r in enumerate([header] + lines):
        out.append("  ".join(str(c).ljust(w[i]) if i == 0 else str(c).rjust(w[i])
                             for i, c in enumerate(r)).rstrip())
        if k == 0:
            out.append("  ".join("-" * x for x in w))
    return "\n".join(out)


SHORT = {"eager": "eager", "default": "default", "reduce-overhead": "r-o", "max-autotune": "m-a"}


def _sinter_cell(s):
    if s is None:
        return "-"
    if s["status"] != "ok":
        return s["status"]
    return _f(s.get("median_ms"), ".3f")


def _goal_cell(g):
    keys = (("latency", "L"), ("cold", "C"), ("warm", "W"), ("memory", "M"))
    return " ".join(c + ("+" if g[k] else "-") if k in g else c + "?" for k, c in keys)


def table(meta_, rows):
    tm, sm = meta_["torch_modes"], meta_["sinter_modes"]
    v = meta_.get("versions", {})
    fl = meta_.get("floor", {})
    head = ["%s, %s; torch %s, torchvision %s, transformers %s; sinter %s" % (
                meta_.get("date"), meta_.get("gpu"), v.get("torch"), v.get("torchvision"),
                v.get("transformers"), meta_.get("sinter_rev")),
            "measured here: bf16 matmul %s TFLOP/s, TF32 matmul %s TFLOP/s, copy %s GB/s; "
            "latency = median of %d calls after %d warm-up, %d inputs rotated" % (
                _f(fl.get("bf16_tflops"), ".0f"), _f(fl.get("tf32_tflops"), ".0f"),
                _f(fl.get("copy_gbs"), ".0f"), meta_["iters"], meta_["warmup"], meta_["input_copies"])]
    good = [r for r in rows if "torch" in r]
    bad = [r for r in rows if "torch" not in r]

    def srow(r, m):
        return r["sinter"].get(m)

    # 1. latency
    hdr = ["config", "prec"] + ["PT " + SHORT.get(m, m) for m in tm] + \
          ["sinter " + SHORT.get(m, m) for m in sm] + ["best PT", "sinter/PT", "status"]
    lines = []
    for r in good:
        t = r["torch"]
        lines.append([r["config"], r["precision"]] +
                     [t[m]["error"][:8] if t.get(m, {}).get("error") else _f(t.get(m, {}).get("median_ms"), ".3f")
                      for m in tm] +
                     [_sinter_cell(srow(r, m)) for m in sm] +
                     [SHORT.get(r["best_torch_mode"], "-"), _f(r.get("ratio"), ".2f"), r["status"]])
    out = head + ["", "latency, median ms (lower is better; sinter/PT goal <= 0.80)", _grid(hdr, lines)]
    # 2. floor and throughput
    hdr = ["config", "GFLOP", "MB moved", "floor ms", "bound", "sinter %floor", "PT %floor",
           "sinter /s", "PT /s", "unit"]
    lines = [[r["config"], _f(r["flops"] / 1e9, ".1f"), _f(r["floor_bytes"] / 1e6, ".1f"),
              _f(r["floor_ms"], ".4f"), r["floor_bound"],
              _f(100 * r["sinter_floor_frac"] if "sinter_floor_frac" in r else None, ".1f"),
              _f(100 * r["torch_floor_frac"] if "torch_floor_frac" in r else None, ".1f"),
              _f(r.get("sinter_throughput"), ".0f"), _f(r.get("torch_throughput"), ".0f"), r["unit"]]
             for r in good]
    out += ["", "physical floor = max(FLOPs / matmul peak, bytes / copy bandwidth); % of it reached",
            _grid(hdr, lines)]
    # 3. compile, start, memory
    hdr = ["config", "PT cold s", "PT r-o cold s", "sinter cold s", "x faster", "PT warm s",
           "sinter warm s", "PT MiB", "sinter MiB", "goals"]
    lines = []
    for r in good:
        t = r["torch"]
        s = r["sinter"].get(r["best_sinter_mode"] or "default", {})
        lines.append([r["config"], _f(t.get("default", {}).get("first_call_s"), ".2f"),
                      _f(t.get("reduce-overhead", {}).get("first_call_s"), ".2f"),
                      _f(s.get("cold_compile_s"), ".3f"), _f(r.get("cold_speedup"), ".1f"),
                      _f(t.get("default", {}).get("warm_start_s"), ".2f"),
                      _f(s.get("warm_start_s"), ".3f"),
                      _f(r["torch_min_peak_bytes"] / 2**20 if "torch_min_peak_bytes" in r else None, ".0f"),
                      _f(s["mem_bytes"] / 2**20 if _finite(s.get("mem_bytes")) else None, ".0f"),
                      _goal_cell(r["goals"])])
    out += ["", "compile and start (PT: torch.compile default, fresh / second process; sinter: its "
            "best mode), peak memory (PT: leanest mode);",
            "goals: L latency <= 0.8 x best PT, C cold >= 5 x faster, W warm < 0.1 s, M memory <= PT "
            "(+ met, - missed, ? not measured)", _grid(hdr, lines)]
    # 4. output check
    hdr = ["config", "tol"] + ["PT " + SHORT.get(m, m) for m in tm] + \
          ["sinter " + SHORT.get(m, m) for m in sm] + ["sinter vs PT"]
    lines = []
    for r in good:
        t = r["torch"]
        s_best = r["sinter"].get(r["best_sinter_mode"] or "default", {})
        lines.append([r["config"], _f(r["tol"], ".0e") + ("*" if r["tol_widened"] else "")] +
                     [_f(t.get(m, {}).get("err"), ".1e") for m in tm] +
                     [_f(srow(r, m).get("err") if srow(r, m) else None, ".1e") +
                      ("!" if srow(r, m) and srow(r, m)["status"] == "FAIL" else "") for m in sm] +
                     [_f(s_best.get("err_vs_torch"), ".1e")])
    out += ["", "output check: relative L2 error against the fp32 reference (! over tol: the row "
            "FAILs; * tol widened to 2 x PyTorch's own error)", _grid(hdr, lines)]
    errs = [(r["config"], m, s.get("error")) for r in good for m, s in r["sinter"].items()
            if s["status"] == "ERR"]
    errs += [(r["config"], m, t["error"]) for r in good for m, t in r["torch"].items() if t.get("error")]
    if bad or errs:
        out += ["", "errors:"]
        out += ["  %s: %s" % (r["config"], r.get("error")) for r in bad]
        out += ["  %s %s: %s" % e for e in errs]
    return "\n".join(out)


def fake_rows(args):
    """Made-up measurements through the same assembly and table code, for
    --dry-run: one clean row, one FAIL, one ERR, an n/a mode, a broken row."""
    import random
    rnd = random.Random(0)
    floor_res = {"bf16_tflops": 700.0, "tf32_tflops": 350.0, "copy_gbs": 2900.0,
                 "matmul_n": 8192, "copy_bytes": 1 << 30}
    meta_ = {"date": "2000-01-01T00:00:00+00:00", "gpu": "FAKE GPU", "versions": versions(),
             "sinter_rev": "dryrun", "iters": args.iters, "warmup": args.warmup, "input_copies": COPIES,
             "torch_modes": args.torch_modes, "sinter_modes": args.sinter_modes, "floor": floor_res,
             "dry_run": True}
    rows = []
    for k, name in enumerate(args.configs):
        cfg = models.CONFIGS[name]
        n = 16
        ref = [rnd.uniform(-1, 1) for _ in range(n)]

        def near(scale):
            return [v + rnd.uniform(-scale, scale) for v in ref]
        raw = {"config": name, "work": {"flops": 2.0e9 * (k + 1) * cfg["batch"],
                                        "bytes": 5.0e7 * (k + 1)}, "torch": {}, "sinter": {}}
        for j, mode in enumerate(args.torch_modes):
            raw["torch"][mode] = {"mode": mode, "median_ms": 1.0 + 0.3 * j + k, "min_ms": 0.9 + k,
                                  "first_call_s": 0.1 if mode == "eager" else 10.0 + j,
                                  "ready_s": 12.0, "peak_bytes": (200 + 10 * j) * 2**20,
                                  "output": near(1e-3)}
            if mode != "eager":
                raw["torch"][mode]["warm_start_s"] = 4.5
        for j, mode in enumerate(args.sinter_modes):
            r = {"mode": mode, "median_ms": 0.7 + k + 0.1 * j, "min_ms": 0.65 + k,
                 "cold_compile_s": 1.5, "warm_start_s": 0.05, "mem_bytes": 180 * 2**20,
                 "bench": {"median_ms": 0.7 + k, "device": "FAKE"}, "output": near(1e-3)}
            if k == 1 and j == 0:
                r["output"] = near(0.5)  # a wrong answer: FAIL, no time shown
            if k == 2 and j == 0:
                r = {"mode": mode, "error": "bench exit 4: sinter bench: out of memory"}
            if j == 2:
                r = {"mode": mode, "error": "n/a"}
            raw["sinter"][mode] = r
        rows.append(assemble(name, cfg, raw, ref, floor_res))
    rows.append({"config": "broken_row", "status": "ERR", "error": "RuntimeError: fake"})
    return meta_, rows


def self_check(args, rows, text):
    """--dry-run: the fake rows must come out as fake_rows built them."""
    def need(cond, what):
        if not cond:
            raise SystemExit("run.py --dry-run: self-check failed: " + what)
    byname = {r["config"]: r for r in rows}
    first = byname[args.configs[0]]
    # eager is fastest at 1.0 + k ms; sinter's best passing mode 0.7 + k ms
    need(first["status"] == "ok" and abs(first["ratio"] - 0.7) < 1e-12, "row 0 ratio 0.7")
    need(abs(first["sinter_throughput"] - first["items_per_call"] / 0.7e-3) < 1e-6, "throughput")
    need(first["floor_ms"] > 0 and abs(first["sinter_floor_frac"] - first["floor_ms"] / 0.7) < 1e-12,
         "floor fraction")
    if len(args.configs) > 1:
        bad = byname[args.configs[1]]
        m0 = args.sinter_modes[0]
        need(bad["status"] == "FAIL" and bad["sinter"][m0]["status"] == "FAIL", "row 1 FAIL")
        line = [ln for ln in text.splitlines() if ln.startswith(args.configs[1] + " ")][0]
        need("FAIL" in line and "%.3f" % bad["sinter"][m0]["median_ms"] not in line,
             "a FAIL shows no time")
    if len(args.configs) > 2:
        need(byname[args.configs[2]]["status"] == "ERR", "row 2 ERR")
    if len(args.sinter_modes) > 2:
        need(first["sinter"][args.sinter_modes[2]]["status"] == "n/a", "n/a mode")
    need(rows[-1]["status"] == "ERR" and "broken_row: RuntimeError" in text, "broken row listed")


# ---- main -------------------------------------------------------------------------

def versions():
    v = {"python": platform.python_version()}
    for mod in ("torch", "torchvision", "transformers", "numpy"):
        try:
            v[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - a missing package is reported, not fatal
            v[mod] = None
    return v


def meta(args, floor_res):
    import torch
    p = torch.cuda.get_device_properties(0)
    # the revision the binary was built from (`sinter --version` says it):
    # the tree copy on the GPU machine may carry stale git metadata
    try:
        out = subprocess.run([args.sinter, "--version"], capture_output=True, text=True).stdout
        m = re.search(r"\(git ([^)]+)\)", out)
        rev = m.group(1) if m else ""
    except OSError:
        rev = ""
    return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "gpu": p.name, "gpu_memory_bytes": p.total_memory, "versions": versions(),
            "cuda": torch.version.cuda, "sinter_rev": rev or None, "sinter": args.sinter,
            "iters": args.iters, "warmup": args.warmup, "input_copies": COPIES,
            "torch_modes": args.torch_modes, "sinter_modes": args.sinter_modes,
            "warm_modes": args.warm_modes, "budget_s": args.budget, "floor": floor_res}


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sinter", default=os.path.join(ROOT, "build-gpu", "sinter"),
                    help="the sinter binary (default build-gpu/sinter)")
    ap.add_argument("--configs", default=",".join(models.CONFIGS),
                    help="comma list of: " + ", ".join(models.CONFIGS))
    ap.add_argument("--max-autotune", action="store_true",
                    help="add torch.compile max-autotune and sinter's max-autotune (minutes)")
    ap.add_argument("--torch-modes", help="comma list overriding the PyTorch modes")
    ap.add_argument("--sinter-modes", help="comma list overriding sinter's modes")
    ap.add_argument("--iters", type=int, default=30, help="timed calls (default 30)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed calls first (default 5)")
    ap.add_argument("--warm-modes", default="default",
                    help="torch.compile modes that get a warm-start process (default: default; "
                         "'none' for none)")
    ap.add_argument("--budget", type=float, default=560,
                    help="seconds: a configuration that would likely end past this is skipped "
                         "(default 560, 0: no limit)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per subprocess")
    ap.add_argument("--autotune-timeout", type=int, default=1500,
                    help="seconds per max-autotune subprocess")
    ap.add_argument("--out", default=os.environ.get("OUT") or "/tmp",
                    help="folder for results.json and logs (default $OUT, else /tmp)")
    ap.add_argument("--work", help="folder for weights and inputs (default: a temporary one)")
    ap.add_argument("--dry-run", action="store_true",
                    help="exercise the table and JSON code on fake numbers (no torch, no GPU)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.configs = [c for c in args.configs.split(",") if c]
    args.warm_modes = [] if args.warm_modes == "none" else args.warm_modes.split(",")
    for c in args.configs:
        if c not in models.CONFIGS:
            ap.error("unknown configuration '%s' (one of %s)" % (c, ", ".join(models.CONFIGS)))
    tm = TORCH_MODES + (["max-autotune"] if args.max_autotune else [])
    sm = SINTER_MODES + (["max-autotune"] if args.max_autotune else [])
    args.torch_modes = args.torch_modes.split(",") if args.torch_modes else tm
    args.sinter_modes = args.sinter_modes.split(",") if args.sinter_modes else sm
    if args.iters < 1 or args.warmup < 0:
        ap.error("--iters wants at least 1 and --warmup at least 0")
    return args


def write_results(out_dir, meta_, rows):
    path = os.path.join(out_dir, "results.json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(clean({"meta": meta_, "rows": rows}), f, indent=1, allow_nan=False)
    os.replace(tmp, path)
    return path


def main(argv):
    args = parse_args(argv)
    if args.worker:
        worker(args.worker)
        return 0
    os.makedirs(args.out, exist_ok=True)
    if args.dry_run:
        meta_, rows = fake_rows(args)
        path = write_results(args.out, meta_, rows)
        with open(path) as f:
            back = json.load(f)
        assert back["rows"] == clean(rows), "results.json does not read back"
        text = table(meta_, rows)
        print(text)
        self_check(args, rows, text)
        print("(dry run: fake numbers; self-check passed) results: %s" % path)
        return 0
    if not os.access(args.sinter, os.X_OK):
        sys.exit("run.py: %s is not an executable sinter (pass --sinter)" % args.sinter)
    args.sinter = os.path.abspath(args.sinter)
    import torch
    if not torch.cuda.is_available():
        sys.exit("run.py: torch sees no CUDA device")
    t0 = time.time()
    logs = os.path.join(args.out, "bench-logs")
    os.makedirs(logs, exist_ok=True)
    work = args.work or tempfile.mkdtemp(prefix="sinter-bench-")
    os.makedirs(work, exist_ok=True)
    log("== floor: measured bf16/TF32 matmul peak and copy bandwidth")
    floor_res = floor.measure()
    log("   bf16 %.0f TFLOP/s, tf32 %.0f TFLOP/s, copy %.0f GB/s"
        % (floor_res["bf16_tflops"], floor_res["tf32_tflops"], floor_res["copy_gbs"]))
    meta_ = meta(args, floor_res)
    args.check_cache = tempfile.mkdtemp(prefix="sinter-check-cache-", dir=work)
    rows, model_cache, last = [], {}, 90.0
    try:
        for name in args.configs:
            spent = time.time() - t0
            if args.budget and spent + last > args.budget:
                log("== %s: skipped, %.0f s spent and the last row took %.0f s (--budget %.0f)"
                    % (name, spent, last, args.budget))
                rows.append({"config": name, "status": "SKIP",
                             "error": "skipped to stay within --budget %.0f s" % args.budget})
                continue
            t1 = time.time()
            try:
                rows.append(bench_config(args, name, model_cache, work, logs, floor_res))
            except Exception as e:  # noqa: BLE001 - one broken row must not lose the others
                import traceback
                traceback.print_exc()
                rows.append({"config": name, "status": "ERR", "error": "%s: %s" % (type(e).__name__, e)})
            last = max(time.time() - t1, 30.0)
            meta_["wall_s"] = round(time.time() - t0, 1)
            write_results(args.out, meta_, rows)
    finally:
        model_cache.clear()
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    path = write_results(args.out, meta_, rows)
    print()
    print(table(meta_, rows))
    print("results: %s; logs: %s; %.0f s in all" % (path, logs, time.time() - t0))
    return 0 if all(r.get("status") == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
