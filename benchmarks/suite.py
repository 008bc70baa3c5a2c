#!/usr/bin/env python3
"""suite.py: the model suite, sinter against PyTorch at real sizes (issue 26).

  python3 benchmarks/suite.py --dry-run [--family llm]           # anywhere, no torch
  python3 benchmarks/suite.py --sinter build-gpu/sinter --out $OUT/suite.json \\
        --time-budget 540 --resume [--models a,b | --family F | --shard 1/4] \\
        [--dtype bf16|fp16|fp32] [--skip-torch-compile] [--max-autotune]
  python3 benchmarks/suite.py --table suite.json [--dtype bf16]  # markdown for docs/PERF.md
  python3 benchmarks/suite.py --summary suite.json               # the summary line(s)

Per model (benchmarks/suite_models.py), in a worker process of its own: the
fp32 reference on the GPU (TF32 off); PyTorch eager in --dtype and each
torch.compile mode (default, reduce-overhead; cold: no FX graph cache, fresh
Inductor and Triton cache folders); the dynamo ONNX export (cached under
--cache-dir, reused across calls); sinter through the CLI, `sinter bench
model.onnx --precision DTYPE [--mode M] --json -o OUT` per sinter mode with
an empty SINTER_CACHE_DIR (latency, cold compile, warm start, memory, the
outputs for the check); and sinter through the Python package
(sinter.compile's steps on the cached export, or sinter.compile(module)
itself with --py-path compile), timed in-process like PyTorch. Every output
is compared with the reference by relative L2 error; sinter passes within
twice PyTorch eager's own error in the same dtype (fp32: the model's
tolerance class). One record per model goes to the results JSON as soon as
the model finishes; a failure (build, export, sinter, mismatch) is recorded
with its message and the run goes on. See benchmarks/README.md.
"""
import argparse
import concurrent.futures
import datetime
import json
import math
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import suite_models as sm  # noqa: E402  (no torch at import)

FORMAT = 1               # results file format
SPEC_VERSION = 1         # bump when a builder changes: cached exports are keyed by it
COPIES = 4               # input copies rotated while timing PyTorch and the Python path
TORCH_COMPILE_MODES = ["default", "reduce-overhead"]
PARAMS_FILE = os.path.join(HERE, "suite_params.json")


def log(msg):
    print(msg, flush=True)


# ---- selection ---------------------------------------------------------------------

def parse_shard(text):
    """'i/n' (1-based) -> (i, n)."""
    try:
        i, n = (int(v) for v in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError("--shard wants I/N, e.g. 2/4") from None
    if n < 1 or not 1 <= i <= n:
        raise argparse.ArgumentTypeError("--shard wants 1 <= I <= N")
    return i, n


def select(models, names=None, families=None, shard=None):
    """The models to run, in suite order: --models, --family, then every
    n-th of those for --shard (strided, so each shard mixes sizes)."""
    out = list(models)
    if names:
        known = {m["name"] for m in out}
        bad = [n for n in names if n not in known]
        if bad:
            raise SystemExit("suite.py: unknown model(s) %s (see --dry-run)" % ", ".join(bad))
        out = [m for m in out if m["name"] in names]
    if families:
        bad = [f for f in families if f not in sm.FAMILIES]
        if bad:
            raise SystemExit("suite.py: unknown family %s (one of %s)" % (", ".join(bad), ", ".join(sm.FAMILIES)))
        out = [m for m in out if m["family"] in families]
    if shard:
        i, n = shard
        out = out[i - 1::n]
    return out


# ---- results file --------------------------------------------------------------------

def load_results(path):
    if not os.path.exists(path):
        return {"format": FORMAT, "runs": [], "records": []}
    with open(path) as f:
        res = json.load(f)
    if res.get("format") != FORMAT or not isinstance(res.get("records"), list):
        raise SystemExit("suite.py: %s is not a suite results file (format %s)" % (path, FORMAT))
    res.setdefault("runs", [])
    return res


def clean(o):
    """A copy fit for strict JSON: NaN and infinities as null."""
    if isinstance(o, dict):
        return {str(k): clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [clean(v) for v in o]
    if isinstance(o, float) and not math.isfinite(o):
        return None
    return o


def write_json(path, obj):
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".suite-", suffix=".json", dir=d)
    with os.fdopen(fd, "w") as f:
        json.dump(clean(obj), f, indent=1, allow_nan=False)
    os.replace(tmp, path)


def put_record(res, rec):
    """Adds rec, replacing a record of the same model and dtype."""
    res["records"] = [r for r in res["records"]
                      if (r.get("name"), r.get("dtype")) != (rec["name"], rec["dtype"])] + [rec]
    res["summary"] = {d: summarize(res["records"], d) for d in sorted({r.get("dtype") for r in res["records"]})}


# ---- summary and table (plain Python: tests/suite_check.py runs them) -----------------

def _finite(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def geomean(vals):
    vals = [v for v in vals if _finite(v) and v > 0]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def summarize(records, dtype=None):
    """Dashboard figures over the records of one dtype: pass rate, geomean of
    sinter's best passing time over torch.compile's best mode (the faster of
    default and reduce-overhead; no clipping at 1.0) on the models that
    pass, the worst model, mean cold compile (sinter CLI, default mode)."""
    recs = [r for r in records if dtype is None or r.get("dtype") == dtype]
    n = len(recs)
    passed = [r for r in recs if r.get("status") == "pass"]
    tc = [(r["ratio_tc"], r["name"]) for r in passed if _finite(r.get("ratio_tc"))]
    eager = [r["ratio_eager"] for r in passed if _finite(r.get("ratio_eager"))]
    cold = [r["cold_compile_s"] for r in recs if _finite(r.get("cold_compile_s"))]
    worst = max(tc) if tc else None
    return {"dtype": dtype, "models": n, "passed": len(passed),
            "failed": sum(r.get("status") == "fail" for r in recs),
            "errors": sum(r.get("status") == "error" for r in recs),
            "pass_rate": len(passed) / n if n else None,
            "geomean_vs_tc_best": geomean([v for v, _ in tc]), "ratio_models": len(tc),
            "over_1": sum(v > 1.0 for v, _ in tc),
            "worst": {"name": worst[1], "ratio": worst[0]} if worst else None,
            "geomean_vs_eager": geomean(eager), "eager_models": len(eager),
            "mean_cold_compile_s": sum(cold) / len(cold) if cold else None,
            "max_cold_compile_s": max(cold) if cold else None}


def _fmt(v, spec, none="-"):
    return format(v, spec) if _finite(v) else none


def summary_line(s):
    head = "suite %s: %d/%d passed (%s%%)" % (s["dtype"] or "all", s["passed"], s["models"],
                                             _fmt(100 * s["pass_rate"] if s["pass_rate"] is not None else None,
                                                  ".1f"))
    if s["ratio_models"]:
        head += ", geomean sinter/torch.compile-best %sx over %d (worst %s %sx, %d above 1.0)" % (
            _fmt(s["geomean_vs_tc_best"], ".2f"), s["ratio_models"], s["worst"]["name"],
            _fmt(s["worst"]["ratio"], ".2f"), s["over_1"])
    else:
        head += ", no torch.compile times"
    if s["eager_models"]:
        head += ", sinter/eager %sx" % _fmt(s["geomean_vs_eager"], ".2f")
    head += ", mean cold compile %s s (max %s s)" % (_fmt(s["mean_cold_compile_s"], ".2f"),
                                                     _fmt(s["max_cold_compile_s"], ".2f"))
    if s["failed"] or s["errors"]:
        head += "; %d wrong answers, %d errors" % (s["failed"], s["errors"])
    return head


SHORT = {"eager": "eager", "default": "default", "reduce-overhead": "r-o", "max-autotune": "m-a"}


def _ms(entry):
    if not entry:
        return "-"
    if entry.get("status") not in (None, "ok"):
        return entry["status"].upper()
    if entry.get("error"):
        return "ERR"
    return _fmt(entry.get("median_ms"), ".3f")


def table(records, dtype=None, runs=()):
    """A markdown table of the records (one dtype), the summary line above."""
    recs = [r for r in records if dtype is None or r.get("dtype") == dtype]
    tmodes = [m for m in ["eager"] + TORCH_COMPILE_MODES + ["max-autotune"]
              if any(m in r.get("torch", {}) for r in recs)]
    smodes = []
    for r in recs:
        for k in r.get("sinter", {}):
            if k not in smodes:
                smodes.append(k)
    smodes.sort(key=lambda k: (k.startswith("py:"), ["default", "reduce-overhead", "max-autotune"].index(
        k.split(":", 1)[1]) if k.split(":", 1)[1] in ("default", "reduce-overhead", "max-autotune") else 9))
    out = []
    if runs:
        last = runs[-1]
        v = last.get("versions", {})
        out.append("`benchmarks/suite.py` on %s (%s; torch %s, torchvision %s, transformers %s; sinter %s); "
                   "latency: median of %s calls after %s warm-up, CUDA events." % (
                       last.get("gpu"), (last.get("date") or "")[:10], v.get("torch"), v.get("torchvision"),
                       v.get("transformers"), last.get("sinter_rev"), last.get("iters"), last.get("warmup")))
        out.append("")
    out.append(summary_line(summarize(recs, dtype)))
    out.append("")
    hdr = ["model", "family", "params M", "status", "err", "tol"] + ["PT " + SHORT.get(m, m) for m in tmodes] + \
          ["sinter " + (("py " if k.startswith("py:") else "") + SHORT.get(k.split(":", 1)[1], k)) for k in smodes] + \
          ["sinter/tc best", "sinter/eager", "cold s", "warm s", "PT MiB", "sinter MiB"]
    out.append("| " + " | ".join(hdr) + " |")
    out.append("|" + "|".join([" --- "] * 2 + [" ---: "] * (len(hdr) - 2)) + "|")
    for r in recs:
        t, s = r.get("torch", {}), r.get("sinter", {})
        best = s.get(r.get("sinter_best") or "", {})
        errs = [e["err"] for e in s.values() if _finite(e.get("err"))]
        err = best.get("err") if best else (max(errs) if errs else None)  # a failing model: its worst
        cells = [r["name"], r.get("family", "-"), _fmt(r["params"] / 1e6 if _finite(r.get("params")) else None, ".1f"),
                 r.get("status", "-"), _fmt(err, ".1e"), _fmt(r.get("tol"), ".1e")]
        cells += [_ms(t.get(m)) for m in tmodes]
        cells += [_ms(s.get(k)) for k in smodes]
        cells += [_fmt(r.get("ratio_tc"), ".2f"), _fmt(r.get("ratio_eager"), ".2f"),
                  _fmt(r.get("cold_compile_s"), ".2f"), _fmt(r.get("warm_start_s"), ".3f"),
                  _fmt(r["torch_peak_bytes"] / 2**20 if _finite(r.get("torch_peak_bytes")) else None, ".0f"),
                  _fmt(best["mem_bytes"] / 2**20 if _finite(best.get("mem_bytes")) else None, ".0f")]
        out.append("| " + " | ".join(str(c) for c in cells) + " |")
    errs = [(r["name"], r.get("message")) for r in recs if r.get("status") != "pass" and r.get("message")]
    if errs:
        out += ["", "Failures:", ""] + ["- %s: %s" % (n, str(m).replace("|", "\\|")[:300]) for n, m in errs]
    return "\n".join(out)


def finish_record(rec):
    """Status, message, best modes and ratios of a record from its raw
    entries (the worker's, or what the parent salvaged)."""
    rec.pop("stage", None)
    errors = list(rec.get("errors", []))
    tol = rec.get("tol")
    for key, e in rec.get("sinter", {}).items():
        if e.get("error"):
            e["status"] = "error"
        elif _finite(e.get("err")) and _finite(tol) and e["err"] <= tol and _finite(e.get("median_ms")):
            e["status"] = "ok"
        elif "err" in e:
            e["status"] = "fail"
        else:
            e["status"] = "error"
            e["error"] = "no output or no time"
    s = rec.get("sinter", {})
    fails = ["%s: rel L2 %s > tol %s" % (k, _fmt(e.get("err"), ".3g", "nan"), _fmt(tol, ".3g"))
             for k, e in s.items() if e["status"] == "fail"]
    errs = ["%s: %s" % (k, e["error"]) for k, e in s.items() if e["status"] == "error"]
    if errors:
        rec["status"], msgs = "error", ["%s: %s" % (e["stage"], e["error"]) for e in errors] + fails + errs
    elif fails:
        rec["status"], msgs = "fail", fails + errs
    elif errs or not s:
        rec["status"], msgs = "error", errs or ["no sinter result"]
    else:
        rec["status"], msgs = "pass", []
    rec["message"] = "; ".join(msgs) if msgs else None
    ok = {k: e for k, e in s.items() if e["status"] == "ok"}
    best = min(ok, key=lambda k: ok[k]["median_ms"]) if ok else None
    rec["sinter_best"] = best
    t = rec.get("torch", {})
    tcs = [t[m]["median_ms"] for m in TORCH_COMPILE_MODES
           if m in t and not t[m].get("error") and _finite(t[m].get("median_ms"))]
    rec["tc_best_ms"] = min(tcs) if tcs else None
    rec["ratio_tc"] = ok[best]["median_ms"] / rec["tc_best_ms"] if best and tcs else None
    em = t.get("eager", {}).get("median_ms")
    rec["ratio_eager"] = ok[best]["median_ms"] / em if best and _finite(em) and not t["eager"].get("error") else None
    cli = s.get("cli:default") or next((e for k, e in s.items() if k.startswith("cli:")), {})
    rec["cold_compile_s"] = cli.get("cold_compile_s")
    rec["warm_start_s"] = cli.get("warm_start_s")
    peaks = [e["peak_bytes"] for e in t.values() if _finite(e.get("peak_bytes"))]
    rec["torch_peak_bytes"] = min(peaks) if peaks else None
    return rec


# ---- the worker: one model in its own process ---------------------------------------------

def failed(x):
    return isinstance(x, dict) and "__error__" in x


def _stage(rec, save, stage, fn, fatal=True):
    """Runs one stage; an exception becomes an error entry of the record."""
    t0 = time.time()
    rec["stage"] = stage  # where a worker that dies (a signal) died
    save()
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - one broken stage must not lose the others
        import traceback
        traceback.print_exc()
        msg = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[-1][:400] if str(e).strip() else "")
        if fatal:
            rec.setdefault("errors", []).append({"stage": stage, "error": msg})
        return {"__error__": msg}
    finally:
        rec.setdefault("stage_s", {})[stage] = round(time.time() - t0, 2)
        save()


def make_inputs(spec):
    import torch
    g = torch.Generator().manual_seed(sm.SEED + 3)
    out = []
    for name, shape, kind in spec:
        if kind in ("image", "randn"):
            t = torch.randn(shape, generator=g)
        elif kind == "audio":
            t = 0.1 * torch.randn(shape, generator=g)
        elif kind.startswith("ids:") or kind.startswith("timestep:"):
            t = torch.randint(0, int(kind.split(":")[1]), shape, generator=g)
        elif kind == "mask":  # row r padded by 8 r tokens (at most all but one)
            t = torch.ones(shape, dtype=torch.int64)
            for r in range(shape[0]):
                pad = min(8 * r, shape[-1] - 1)
                if pad:
                    t[r, shape[-1] - pad:] = 0
        else:
            raise ValueError("input %s: unknown kind %s" % (name, kind))
        out.append(t)
    return out


def fingerprint(name, module, inputs):
    """Key of a cached export: the model's name, the spec version, torch's
    version, the input shapes and a digest of every weight."""
    import hashlib

    import torch
    h = hashlib.sha256()
    h.update(("%s|%d|%s|" % (name, SPEC_VERSION, torch.__version__)).encode())
    for x in inputs:
        h.update(("%s%s|" % (tuple(x.shape), x.dtype)).encode())
    with torch.no_grad():
        for k, v in module.state_dict().items():
            vv = v.detach().double()
            h.update(("%s%s%.17g,%.17g|" % (k, tuple(v.shape), float(vv.sum()), float(vv.abs().sum()))).encode())
    return h.hexdigest()[:16]


def onnx_io(path):
    import onnx
    m = onnx.load(path, load_external_data=False)
    init = {t.name for t in m.graph.initializer}
    return [i.name for i in m.graph.input if i.name not in init], [o.name for o in m.graph.output]


def export_cached(spec, module, inputs, cache_dir):
    """The dynamo export of module at the inputs' shapes, from the cache when
    an export of the same model, weights and shapes is there."""
    import torch
    names = [n for n, _, _ in spec["inputs"]]
    d = os.path.join(cache_dir, "onnx", "%s-%s" % (spec["name"], fingerprint(spec["name"], module, inputs)))
    done = os.path.join(d, "done.json")
    if os.path.exists(done):
        with open(done) as f:
            info = json.load(f)
        info.update(cached=True, path=os.path.join(d, "model.onnx"))
        return info
    os.makedirs(os.path.dirname(d), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".export-", dir=os.path.dirname(d))
    path = os.path.join(tmp, "model.onnx")
    t0 = time.time()
    with torch.no_grad():
        torch.onnx.export(module, tuple(inputs), path, dynamo=True, opset_version=18, external_data=True,
                          input_names=names, output_names=["out"])
    secs = time.time() - t0
    ins, outs = onnx_io(path)
    info = {"export_s": round(secs, 2), "onnx_inputs": ins, "onnx_outputs": outs, "torch": torch.__version__,
            "bytes": sum(os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp))}
    with open(os.path.join(tmp, "done.json"), "w") as f:
        json.dump(info, f)
    try:
        os.rename(tmp, d)
    except OSError:  # another worker won the race: use its export
        shutil.rmtree(tmp, ignore_errors=True)
    info.update(cached=False, path=os.path.join(d, "model.onnx"))
    return info


def import_cached(sinter, onnx_path, timeout):
    """`sinter import` of the export, beside it: model.sir and
    model.safetensors (the initializers), reused when there. (`sinter
    bench` takes a .onnx too, but fills the params with --init random
    unless --weights names a file.)"""
    d = os.path.dirname(onnx_path)
    sir, st, done = (os.path.join(d, "model" + x) for x in (".sir", ".safetensors", ".import.json"))
    if os.path.exists(done):
        with open(done) as f:
            info = json.load(f)
        info["cached"] = True
        return info
    t0 = time.time()
    p = subprocess.run([sinter, "import", onnx_path, "-o", sir], capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        lines = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
        raise RuntimeError("sinter import exit %d: %s" % (p.returncode, lines[-1][:400] if lines else ""))
    info = {"import_s": round(time.time() - t0, 2), "sir": sir, "weights": st}
    with open(done, "w") as f:
        json.dump(info, f)
    info["cached"] = False
    return info


def rel_l2(got, ref):
    """||got - ref|| / ||ref|| in float64, chunked (LLM logits are large);
    inf on a shape mismatch or a non-finite value in got."""
    import torch
    if tuple(got.shape) != tuple(ref.shape):
        return float("inf")
    g, r = got.reshape(-1), ref.reshape(-1)
    num = den = 0.0
    step = 1 << 26
    for i in range(0, g.numel(), step):
        gi = g[i:i + step].to(ref.device).double()
        ri = r[i:i + step].double()
        if not torch.isfinite(gi).all():
            return float("inf")
        num += float(((gi - ri) ** 2).sum())
        den += float((ri ** 2).sum())
    return math.sqrt(num) / (math.sqrt(den) if den > 0 else 1.0)


def _reset_compiled(torch):
    """Drops torch.compile's graphs and CUDA graph pools between modes."""
    import gc
    torch._dynamo.reset()
    try:
        from torch._inductor import cudagraph_trees
        cudagraph_trees.reset_cudagraph_trees()
    except Exception:  # noqa: BLE001 - an older or newer torch without it
        pass
    gc.collect()
    torch.cuda.empty_cache()


def _state_bytes(module):
    return sum(t.numel() * t.element_size() for t in list(module.parameters()) + list(module.buffers()))


def _graph_pool_idle_bytes(torch):
    n = 0
    for seg in torch.cuda.memory_snapshot():
        pid = seg.get("segment_pool_id")
        if pid is None:
            return None
        if tuple(pid) != (0, 0):
            n += seg["total_size"] - seg["allocated_size"]
    return n


def measure(call, copies, iters, warmup, resident_bytes=None, graphs=False):
    """First call (compile included), then latency: CUDA events around each
    call, median and min of `iters` after `warmup`, inputs rotated among the
    copies. Peak memory: resident_bytes (weights, one input) plus what one
    call allocates, plus CUDA graph pools' idle bytes for graphed modes."""
    import torch
    res = {}
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    y = call(copies[0])
    torch.cuda.synchronize()
    res["first_call_s"] = round(time.perf_counter() - t0, 4)
    out = (y[0] if isinstance(y, (tuple, list)) else y).detach().clone()
    del y
    for i in range(warmup):
        call(copies[(i + 1) % len(copies)])
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ms = []
    for i in range(iters):
        x = copies[i % len(copies)]
        s.record()
        call(x)
        e.record()
        e.synchronize()
        ms.append(s.elapsed_time(e))
    res["median_ms"], res["min_ms"] = statistics.median(ms), min(ms)
    if resident_bytes is not None:
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        call(copies[0])
        torch.cuda.synchronize()
        extra = torch.cuda.max_memory_allocated() - before
        pool = _graph_pool_idle_bytes(torch) if graphs else 0
        res["peak_bytes"] = resident_bytes + extra + (pool or 0)
        res["mem_source"] = "torch.cuda.max_memory_allocated"
    return res, out


def _inputs_on_gpu(inputs, dt, channels_last):
    import torch
    copies = []
    for _ in range(COPIES):
        xs = []
        for x in inputs:
            x = x.to("cuda")
            if x.is_floating_point():
                x = x.to(dt)
                if channels_last and x.dim() == 4:
                    x = x.contiguous(memory_format=torch.channels_last)
            xs.append(x)
        copies.append(xs)
    return copies


def run_cli(args, rec, mode, imp, npz, ref, work, log_f):
    """One `sinter bench` of the imported export in one mode: times, cold
    and warm start, memory, and the outputs for the check."""
    import numpy as np  # noqa: F401  (models.load_safetensors needs it)
    import torch

    import models
    res = {}
    cache = tempfile.mkdtemp(prefix="sinter-cold-", dir=work)
    out = os.path.join(work, "out-%s.safetensors" % mode)
    argv = [args["sinter"], "bench", imp["sir"], "--weights", imp["weights"], "--inputs", npz,
            "--precision", args["dtype"], "--json",
            "--iters", str(args["iters"]), "--warmup", str(args["warmup"]), "-o", out]
    if mode != "default":
        argv += ["--mode", mode]
    if mode == "max-autotune":
        argv += ["--tune-budget", str(args["tune_budget"]), "--tune-progress", "summary"]
    env = dict(os.environ, SINTER_CACHE_DIR=cache)
    t0 = time.time()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=args["sinter_timeout"])
    except subprocess.TimeoutExpired:
        shutil.rmtree(cache, ignore_errors=True)
        return {"error": "sinter bench timed out after %d s" % args["sinter_timeout"]}
    res["wall_s"] = round(time.time() - t0, 2)
    log_f.write("$ %s\n%s%s\n" % (" ".join(argv), p.stdout, p.stderr))
    log_f.flush()
    shutil.rmtree(cache, ignore_errors=True)
    if p.returncode != 0:
        lines = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
        return dict(res, error="sinter bench exit %d: %s" % (p.returncode, lines[-1][:400] if lines else ""))
    js = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    try:
        b = json.loads(js[-1])
    except (IndexError, ValueError):
        return dict(res, error="sinter bench printed no JSON")
    for k in ("median_ms", "min_ms", "cold_compile_s", "warm_start_s", "warm_after_context_s", "steps",
              "kernels", "arena_bytes", "weight_bytes", "nvrtc_s", "parse_s", "passes_s", "codegen_s",
              "tune_s", "tune_speedup"):
        if k in b:
            res[k] = b[k]
    if "peak_device_bytes" in b:
        res["mem_bytes"], res["mem_source"] = b["peak_device_bytes"], "bench --json peak_device_bytes"
    elif "arena_bytes" in b and "weight_bytes" in b:
        res["mem_bytes"], res["mem_source"] = b["arena_bytes"] + b["weight_bytes"], "bench --json arena+weights"
    try:
        got = models.load_safetensors(out)
    except (OSError, ValueError) as e:
        return dict(res, error="output unreadable: %s" % e)
    finally:
        if os.path.exists(out):
            os.remove(out)
    arr = got.get("out", next(iter(got.values())) if len(got) == 1 else None)
    if arr is None:
        return dict(res, error="no output 'out' among %s" % sorted(got))
    res["err"] = rel_l2(torch.from_numpy(arr.astype("float32")), ref)
    return res


def run_profile(args, imp, npz, log_f):
    """`sinter bench --profile` in reduce-overhead mode: the per-kernel
    table (each kernel timed alone), kept as its lines."""
    argv = [args["sinter"], "bench", imp["sir"], "--weights", imp["weights"], "--inputs", npz,
            "--precision", args["dtype"], "--mode", "reduce-overhead", "--iters", "10", "--warmup", "3", "--profile"]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=args["sinter_timeout"])
    except subprocess.TimeoutExpired:
        return {"error": "sinter bench --profile timed out after %d s" % args["sinter_timeout"]}
    log_f.write("$ %s\n%s%s\n" % (" ".join(argv), p.stdout, p.stderr))
    log_f.flush()
    if p.returncode != 0:
        return {"error": "sinter bench --profile exit %d" % p.returncode}
    lines = p.stdout.splitlines()
    at = next((i for i, ln in enumerate(lines) if ln.startswith("profile:")), None)
    return {"lines": lines[at:at + 40] if at is not None else lines[-40:]}


def run_py(args, spec, mode, onnx_path, inputs, ref, work, path_kind):
    """The Python package: sinter.compile's steps after its export (load the
    cached export, compile, the same CompiledModule), or sinter.compile
    itself (path_kind "compile", the export included in its compile time);
    timed as PyTorch is."""
    import torch
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import sinter
    from sinter import _torch as st
    cache = tempfile.mkdtemp(prefix="sinter-py-", dir=work)
    res = {}
    try:
        t0 = time.perf_counter()
        if path_kind == "compile":
            module = spec["build"]().to("cuda")
            ex = [x.to("cuda") for x in inputs]
            fast = sinter.compile(module, tuple(ex), mode=mode, precision=args["dtype"], cache_dir=cache)
            del module, ex
        else:
            model = sinter.load(onnx_path)
            compiled = sinter.compile_model(model, mode=mode, precision=args["dtype"], cache_dir=cache)
            del model
            fast = st.CompiledModule(compiled, onnx_path)
        res["compile_s"] = round(time.perf_counter() - t0, 3)
        res["stats"] = {k: v for k, v in fast.stats.items() if isinstance(v, (int, float, bool))}
        byname = {n: x for (n, _, _), x in zip(spec["inputs"], inputs)}
        order = [d["name"] for d in fast.inputs]
        if set(order) - set(byname):
            order = [n for n, _, _ in spec["inputs"]][:len(order)]  # names changed: positional
        copies = []
        for _ in range(COPIES):
            copies.append([byname[n].to("cuda").to(st._TORCH[d["dtype"]]) for n, d in zip(order, fast.inputs)])
        r, out = measure(lambda xs: fast(*xs), copies, args["iters"], args["warmup"])
        res.update(r)
        res["mem_bytes"] = fast.stats.get("arena_bytes", 0) + fast.stats.get("weight_bytes", 0)
        res["mem_source"] = "compile stats arena+weights"
        res["err"] = rel_l2(out, ref)
        del fast, copies, out
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return res


def worker(spec_path):
    with open(spec_path) as f:
        args = json.load(f)
    work = args["work"]
    os.makedirs(work, exist_ok=True)
    ind = os.path.join(work, "inductor-0")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = ind
    os.environ["TRITON_CACHE_DIR"] = os.path.join(ind, "triton")
    spec = sm.BY_NAME[args["name"]]
    rec = {"name": spec["name"], "family": spec["family"], "dtype": args["dtype"], "tol_class": spec["tol"],
           "inputs": [{"name": n, "shape": s, "kind": k} for n, s, k in spec["inputs"]],
           "torch": {}, "sinter": {}, "errors": []}

    def save():
        write_json(args["result"], rec)

    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    torch.backends.cudnn.benchmark = True
    try:
        import torch._inductor.config as icfg
        icfg.fx_graph_cache = False  # every torch.compile mode compiles cold
    except Exception:  # noqa: BLE001
        pass
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args["dtype"]]
    cl = spec.get("layout") == "channels_last"

    built = _stage(rec, save, "build", lambda: (spec["build"](), make_inputs(spec["inputs"])))
    if failed(built):
        return 0
    module, inputs = built
    rec["params"] = sum(p.numel() for p in module.parameters())

    info = {}
    if not args["no_sinter"]:
        info = _stage(rec, save, "export", lambda: export_cached(spec, module, inputs, args["cache_dir"]))
        if not failed(info):
            rec["export"] = info

    def reference():
        m = module.to("cuda")
        with torch.inference_mode():
            y = m(*[x.to("cuda") for x in inputs])
        y = (y[0] if isinstance(y, (tuple, list)) else y).detach().float()
        torch.cuda.synchronize()
        if not torch.isfinite(y).all():
            raise ValueError("the fp32 reference has NaN or Inf")
        if float(y.abs().max()) == 0 or float(y.std()) == 0:
            raise ValueError("the fp32 reference output is constant: a comparison with it proves nothing")
        rec["output_shape"] = list(y.shape)
        return y
    ref = _stage(rec, save, "reference", reference)
    if failed(ref):
        return 0

    # PyTorch in the run's dtype: eager, then each torch.compile mode
    def torch_side():
        m = module.to(dt)
        if cl:
            m = m.to(memory_format=torch.channels_last)
        copies = _inputs_on_gpu(inputs, dt, cl)
        resident = _state_bytes(m) + sum(x.numel() * x.element_size() for x in copies[0])
        mark = getattr(torch.compiler, "cudagraph_mark_step_begin", None)
        for k, mode in enumerate(args["torch_modes"]):
            try:
                torch._dynamo.reset()
                if mode == "eager":
                    fn, graphs = m, False
                else:
                    d = os.path.join(work, "inductor-%d" % (k + 1))
                    os.environ["TORCHINDUCTOR_CACHE_DIR"] = d
                    os.environ["TRITON_CACHE_DIR"] = os.path.join(d, "triton")
                    fn = torch.compile(m, mode=None if mode == "default" else mode)
                    graphs = mode in ("reduce-overhead", "max-autotune")

                def call(xs, fn=fn, graphs=graphs):
                    if graphs and mark:
                        mark()
                    return fn(*xs)
                with torch.inference_mode():
                    r, out = measure(call, copies, args["iters"], args["warmup"], resident, graphs)
                r["err"] = rel_l2(out, ref)
                if mode != "eager":
                    r["compile_s"] = r["first_call_s"]
                del out, fn
            except Exception as e:  # noqa: BLE001 - PyTorch's failure is recorded, not sinter's
                import traceback
                traceback.print_exc()
                r = {"error": "%s: %s" % (type(e).__name__, (str(e).strip().splitlines() or [""])[-1][:300])}
            rec["torch"][mode] = r
            save()
            _reset_compiled(torch)
            log("   torch %-16s %s" % (mode, brief(r)))
        return True
    _stage(rec, save, "torch", torch_side)

    # the tolerance: twice PyTorch eager's own error in this dtype (fp32:
    # the tolerance class; also when the dtype barely changes the output)
    floor = sm.TOL_CLASSES[spec["tol"]]
    pt_err = rec["torch"].get("eager", {}).get("err")
    if args["dtype"] != "fp32" and _finite(pt_err) and 2 * pt_err >= floor:
        rec["tol"], rec["tol_rule"] = 2 * pt_err, "2 x PyTorch eager %s error" % args["dtype"]
    else:
        rec["tol"], rec["tol_rule"] = floor, "tolerance class %s (fp32 bound)" % spec["tol"]
    save()
    if args["no_sinter"] or failed(info):
        return 0
    module = module.to("cpu")
    torch.cuda.empty_cache()

    onnx_path = info["path"]
    names = info["onnx_inputs"]
    ours = [n for n, _, _ in spec["inputs"]]
    if set(names) - set(ours):
        if len(names) != len(ours):
            rec["errors"].append({"stage": "export", "error": "the export's inputs %s are not %s" % (names, ours)})
            save()
            return 0
        feed = dict(zip(names, inputs))
    else:
        feed = {n: x for n, x in zip(ours, inputs) if n in names}
    npz = os.path.join(work, "inputs.npz")

    def write_inputs():
        import numpy as np
        np.savez(npz, **{n: x.numpy() for n, x in feed.items()})
        return True
    if failed(_stage(rec, save, "inputs", write_inputs)):
        return 0
    imp = _stage(rec, save, "import", lambda: import_cached(args["sinter"], onnx_path, args["sinter_timeout"]),
                 fatal=False)
    if not failed(imp):
        rec["import"] = imp
    with open(os.path.join(args["logs"], "%s.%s.sinter.log" % (spec["name"], args["dtype"])), "a") as log_f:
        for mode in args["sinter_modes"]:
            if failed(imp):
                rec["sinter"]["cli:" + mode] = {"error": "import: " + imp["__error__"]}
                continue
            r = _stage(rec, save, "cli:" + mode, lambda: run_cli(args, rec, mode, imp, npz, ref, work, log_f),
                       fatal=False)
            if failed(r):
                r = {"error": r.pop("__error__")}
            rec["sinter"]["cli:" + mode] = r
            save()
            log("   sinter cli %-12s %s" % (mode, brief(r)))
        if args.get("profile") and not failed(imp):
            rec["profile"] = run_profile(args, imp, npz, log_f)
            save()
    if args["py_path"] != "off":
        for mode in args["py_modes"]:
            r = _stage(rec, save, "py:" + mode,
                       lambda: run_py(args, spec, mode, onnx_path, inputs, ref, work, args["py_path"]), fatal=False)
            if failed(r):
                r = {"error": r.pop("__error__")}
            r["path"] = args["py_path"]
            rec["sinter"]["py:" + mode] = r
            save()
            log("   sinter py  %-12s %s" % (mode, brief(r)))
            torch.cuda.empty_cache()
    return 0


def brief(r):
    if r.get("error"):
        return "error: %s" % r["error"]
    parts = []
    if _finite(r.get("median_ms")):
        parts.append("median %.4f ms" % r["median_ms"])
    if _finite(r.get("err")):
        parts.append("err %.2e" % r["err"])
    for k, label in (("first_call_s", "first call"), ("compile_s", "compile"), ("cold_compile_s", "cold"),
                     ("warm_start_s", "warm")):
        if _finite(r.get(k)):
            parts.append("%s %.2f s" % (label, r[k]))
    return ", ".join(parts)


# ---- the parent: models one by one within the time budget ----------------------------------

def versions():
    v = {"python": platform.python_version()}
    for mod in ("torch", "torchvision", "transformers", "onnx", "numpy"):
        try:
            v[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - reported, not fatal
            v[mod] = None
    return v


def run_meta(args):
    import re
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "versions": versions(), "dtype": args.dtype, "iters": args.iters, "warmup": args.warmup,
            "torch_modes": args.torch_modes, "sinter_modes": args.sinter_modes, "py_path": args.py_path,
            "py_modes": args.py_modes, "input_copies": COPIES, "argv": sys.argv[1:]}
    try:
        meta["gpu"] = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                     capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        meta["gpu"] = None
    if not args.no_sinter:
        try:
            out = subprocess.run([args.sinter, "--version"], capture_output=True, text=True).stdout
            m = re.search(r"\(git ([^)]+)\)", out)
            meta["sinter_rev"] = m.group(1) if m else out.strip()
        except OSError:
            meta["sinter_rev"] = None
    return meta


def covers(rec, args):
    """Whether a record already holds what this call would measure (--resume
    skips its model): every PyTorch mode and sinter entry asked for, or a
    stage error that ended the model early (build, export, reference)."""
    if rec.get("errors"):
        return True
    want = ["cli:" + m for m in args.sinter_modes] + ["py:" + m for m in args.py_modes]
    return all(m in rec.get("torch", {}) for m in args.torch_modes) and \
        all(k in rec.get("sinter", {}) for k in want)


def estimate(spec, args):
    est = spec["est_s"] * (len(args.sinter_modes) + len(args.py_modes)) / 3.0 + 15
    if any(m != "eager" for m in args.torch_modes):
        est += spec["est_tc_s"] * sum(m != "eager" for m in args.torch_modes) / 2.0
    return est * args.est_scale


def run_one(args, spec, timeout, logs, gpu=None):
    """The worker for one model, in a fresh process; its record, salvaged
    from the partial result file if it died."""
    work = tempfile.mkdtemp(prefix="suite-%s-" % spec["name"], dir=args.work)
    wspec = {"name": spec["name"], "dtype": args.dtype, "sinter": args.sinter, "cache_dir": args.cache_dir,
             "work": work, "result": os.path.join(work, "result.json"), "logs": logs, "iters": args.iters,
             "warmup": args.warmup, "torch_modes": args.torch_modes, "sinter_modes": args.sinter_modes,
             "py_modes": args.py_modes, "py_path": args.py_path, "no_sinter": args.no_sinter,
             "profile": args.profile,
             "tune_budget": args.tune_budget, "sinter_timeout": args.sinter_timeout}
    sp = os.path.join(work, "spec.json")
    with open(sp, "w") as f:
        json.dump(wspec, f)
    env = dict(os.environ)
    lib = os.path.join(os.path.dirname(os.path.realpath(args.sinter)), "libsinter.so.0")
    if "SINTER_LIBRARY" not in env and os.path.exists(lib):
        env["SINTER_LIBRARY"] = lib
    if gpu is not None:  # --gpus: this worker, and the sinter it runs, on one GPU of the machine
        env["CUDA_VISIBLE_DEVICES"] = str(gpu)
    log_path = os.path.join(logs, "%s.%s.log" % (spec["name"], args.dtype))
    t0 = time.time()
    killed = None
    with open(log_path, "w") as lf:
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", sp], stdout=lf,
                             stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            rc = p.wait()
            killed = timeout
    try:
        with open(wspec["result"]) as f:
            rec = json.load(f)
    except (OSError, ValueError):
        rec = {"name": spec["name"], "family": spec["family"], "dtype": args.dtype, "torch": {}, "sinter": {},
               "errors": []}
    if killed is not None:
        rec.setdefault("errors", []).append({"stage": "worker", "error": "timed out after %d s" % killed})
    elif rc != 0:
        with open(log_path, errors="replace") as f:
            tail = [ln.strip() for ln in f.read().splitlines() if ln.strip()][-3:]
        why = "signal %d" % -rc if rc < 0 else "exit %d" % rc
        rec.setdefault("errors", []).append({"stage": "worker", "error": "died (%s) in stage %s: %s" % (
            why, rec.get("stage") or "start", " | ".join(tail))[:600]})
    rec["wall_s"] = round(time.time() - t0, 1)
    rec["log"] = os.path.relpath(log_path, os.path.dirname(os.path.abspath(args.out)))
    shutil.rmtree(work, ignore_errors=True)
    return finish_record(rec), killed


def dry_run(models):
    try:
        with open(PARAMS_FILE) as f:
            params = json.load(f).get("params", {})
    except (OSError, ValueError):
        params = {}
    rows = [["model", "family", "params", "tol", "inputs"]]
    for m in models:
        p = params.get(m["name"])
        rows.append([m["name"], m["family"], "%.1fM" % (p / 1e6) if p else "n/a", m["tol"],
                     ", ".join("%s %s %s" % (n, "x".join(map(str, s)), k) for n, s, k in m["inputs"])])
    w = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        log("  ".join(c.ljust(w[i]) for i, c in enumerate(r[:4])) + "  " + r[4])
    fams = {}
    for m in models:
        fams[m["family"]] = fams.get(m["family"], 0) + 1
    log("%d models: %s" % (len(models), ", ".join("%s %d" % (f, fams[f]) for f in sm.FAMILIES if f in fams)))
    log("(params: %s)" % ("recorded by suite.py --count-params in %s" % os.path.relpath(PARAMS_FILE, ROOT)
                          if params else "n/a: no %s" % os.path.relpath(PARAMS_FILE, ROOT)))


def count_params(models):
    """--count-params: builds every selected model (CPU, needs torch) and
    records its parameter count in suite_params.json for --dry-run."""
    import torch
    try:
        with open(PARAMS_FILE) as f:
            data = json.load(f)
    except (OSError, ValueError):
        data = {"params": {}}
    for m in models:
        try:
            mod = m["build"]()
            data["params"][m["name"]] = sum(p.numel() for p in mod.parameters())
            log("%-28s %12d" % (m["name"], data["params"][m["name"]]))
            del mod
        except Exception as e:  # noqa: BLE001
            log("%-28s failed: %s: %s" % (m["name"], type(e).__name__, e))
    data["torch"] = torch.__version__
    data["params"] = {k: data["params"][k] for k in sorted(data["params"])}
    with open(PARAMS_FILE, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--sinter", default=os.path.join(ROOT, "build-gpu", "sinter"),
                    help="the sinter binary (default build-gpu/sinter); its folder's libsinter.so.0 serves "
                         "the Python path unless SINTER_LIBRARY is set")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT") or "/tmp", "suite.json"),
                    help="results JSON (default $OUT/suite.json, else /tmp/suite.json); logs beside it")
    ap.add_argument("--cache-dir", default=os.environ.get("SINTER_SUITE_CACHE") or
                    os.path.join(ROOT, "build-suite-cache"),
                    help="cached ONNX exports (default build-suite-cache/ in the tree, or $SINTER_SUITE_CACHE)")
    ap.add_argument("--work", default=None, help="scratch folder for workers (default: a temporary one)")
    ap.add_argument("--models", help="comma list of model names")
    ap.add_argument("--family", help="comma list of: " + ", ".join(sm.FAMILIES))
    ap.add_argument("--shard", type=parse_shard, help="I/N: every N-th model from the I-th (1-based)")
    ap.add_argument("--resume", action="store_true",
                    help="skip models whose record of this dtype in --out has every mode this call "
                         "measures (a record without torch.compile's modes is measured again with them)")
    ap.add_argument("--resume-from", metavar="JSON",
                    help="start from this results file (the last call's, carried to the machine) when --out "
                         "does not exist yet; implies --resume")
    ap.add_argument("--time-budget", type=float, default=0,
                    help="seconds: start no model that would likely end past this (0: no limit); a model "
                         "cut by it is not recorded, so the next --resume call runs it")
    ap.add_argument("--model-timeout", type=int, default=900, help="seconds one model may take (recorded as "
                                                                   "an error past it)")
    ap.add_argument("--sinter-timeout", type=int, default=600, help="seconds one sinter command may take")
    ap.add_argument("--est-scale", type=float, default=0.7,
                    help="scales the per-model time estimates (default 0.7: measured on the H200, the "
                         "estimates ran about 1.5-2.5x long)")
    ap.add_argument("--gpus", type=int, default=1,
                    help="models side by side, one per GPU (CUDA_VISIBLE_DEVICES), on a machine with that many "
                         "(default 1)")
    ap.add_argument("--dtype", choices=["bf16", "fp16", "fp32"], default="bf16")
    ap.add_argument("--skip-torch-compile", action="store_true", help="PyTorch eager only")
    ap.add_argument("--torch-modes", help="comma list (default eager,default,reduce-overhead)")
    ap.add_argument("--sinter-modes", help="comma list of sinter CLI modes (default default,reduce-overhead)")
    ap.add_argument("--max-autotune", action="store_true", help="add sinter's max-autotune mode (CLI)")
    ap.add_argument("--tune-budget", type=float, default=20, help="sinter max-autotune --tune-budget")
    ap.add_argument("--py-path", choices=["cached", "compile", "off"], default="cached",
                    help="the Python package: on the cached export (default), sinter.compile(module) "
                         "itself (export again, in its compile time), or off")
    ap.add_argument("--py-modes", default="reduce-overhead", help="comma list of modes for the Python path")
    ap.add_argument("--no-sinter", action="store_true", help="PyTorch side only (checks the builders)")
    ap.add_argument("--profile", action="store_true",
                    help="also run `sinter bench --profile` (reduce-overhead) and keep its per-kernel table "
                         "in the record (profile.lines) and the model's log")
    ap.add_argument("--iters", type=int, default=30, help="timed calls (default 30)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed calls first (default 5)")
    ap.add_argument("--dry-run", action="store_true", help="list the models (no torch needed)")
    ap.add_argument("--table", metavar="JSON", help="print the markdown table of a results file")
    ap.add_argument("--summary", metavar="JSON", help="print the summary line(s) of a results file")
    ap.add_argument("--count-params", action="store_true", help="record parameter counts (needs torch)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.models = [m for m in (a.models or "").split(",") if m]
    a.family = [f for f in (a.family or "").split(",") if f]
    a.torch_modes = a.torch_modes.split(",") if a.torch_modes else ["eager"] + TORCH_COMPILE_MODES
    if a.skip_torch_compile:
        a.torch_modes = [m for m in a.torch_modes if m == "eager"]
    if "eager" not in a.torch_modes:
        a.torch_modes.insert(0, "eager")  # the tolerance is PyTorch eager's error
    a.sinter_modes = a.sinter_modes.split(",") if a.sinter_modes else ["default", "reduce-overhead"]
    if a.max_autotune and "max-autotune" not in a.sinter_modes:
        a.sinter_modes.append("max-autotune")
    a.py_modes = [m for m in a.py_modes.split(",") if m] if a.py_path != "off" else []
    if a.no_sinter:
        a.sinter_modes, a.py_modes = [], []
    if a.gpus < 1:
        ap.error("--gpus wants at least 1")
    if a.iters < 1 or a.warmup < 0:
        ap.error("--iters wants at least 1 and --warmup at least 0")
    return a


def main(argv):
    a = parse_args(argv)
    if a.worker:
        return worker(a.worker)
    if a.table or a.summary:
        res = load_results(a.table or a.summary)
        dtypes = [a.dtype] if "--dtype" in argv else sorted({r.get("dtype") for r in res["records"]})
        for d in dtypes:
            if a.table:
                print(table(res["records"], d, res.get("runs", [])))
                print()
            else:
                print(summary_line(summarize(res["records"], d)))
        return 0
    models = select(sm.MODELS, a.models, a.family, a.shard)
    if a.dry_run:
        dry_run(models)
        return 0
    if a.count_params:
        count_params(models)
        return 0
    t_start = time.time()
    if not a.no_sinter:
        if not os.access(a.sinter, os.X_OK):
            raise SystemExit("suite.py: %s is not an executable sinter (pass --sinter)" % a.sinter)
        a.sinter = os.path.abspath(a.sinter)
    a.out = os.path.abspath(a.out)
    res = load_results(a.out)
    if a.resume_from and not res["records"] and not res["runs"]:
        res = load_results(a.resume_from)  # the last call's file, carried in
        a.resume = True
    logs = os.path.join(os.path.dirname(a.out), "suite-logs")
    os.makedirs(logs, exist_ok=True)
    os.makedirs(a.cache_dir, exist_ok=True)
    a.cache_dir = os.path.abspath(a.cache_dir)
    own_work = a.work is None
    a.work = a.work or tempfile.mkdtemp(prefix="sinter-suite-")
    os.makedirs(a.work, exist_ok=True)
    meta = run_meta(a)
    res["runs"].append(meta)
    done = {(r.get("name"), r.get("dtype")) for r in res["records"] if covers(r, a)}
    todo = [m for m in models if not (a.resume and (m["name"], a.dtype) in done)]
    log("== suite: %d models selected, %d to run (%s), results %s" % (len(models), len(todo), a.dtype, a.out))
    ran, stopped = 0, None
    slots = list(range(a.gpus)) if a.gpus > 1 else [None]
    running = {}  # future -> (spec, gpu)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=len(slots))
    try:
        k = 0
        while True:
            # start models while a GPU is free and the budget allows
            while k < len(todo) and slots and not stopped:
                spec = todo[k]
                left = a.time_budget - (time.time() - t_start) if a.time_budget else None
                est = estimate(spec, a)
                if left is not None and est > left:
                    stopped = "stopped before %s (about %.0f s; %.0f s of --time-budget left): %d models left, " \
                              "run again with --resume" % (spec["name"], est, left, len(todo) - k)
                    break
                timeout = a.model_timeout if left is None else int(max(30, min(a.model_timeout, left)))
                gpu = slots.pop(0)
                log("== [%d/%d] %s (%s), about %.0f s%s" % (k + 1, len(todo), spec["name"], spec["family"], est,
                                                          "" if gpu is None else ", GPU %d" % gpu))
                running[pool.submit(run_one, a, spec, timeout, logs, gpu)] = (spec, gpu)
                k += 1
            if not running:
                break
            done_now, _ = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
            for fut in done_now:
                spec, gpu = running.pop(fut)
                slots.append(gpu)
                rec, killed = fut.result()
                if killed is not None and killed < a.model_timeout:
                    cut = "%s cut by --time-budget after %d s (not recorded): run again with --resume" % (
                        spec["name"], killed)
                    stopped = cut if not stopped else stopped + "; " + cut
                    continue
                put_record(res, rec)
                meta["wall_s"] = round(time.time() - t_start, 1)
                write_json(a.out, res)
                ran += 1
                log("   %s: %s%s, ratio vs torch.compile best %s, vs eager %s, %.0f s" % (
                    spec["name"], rec["status"], " (%s)" % rec["message"][:200] if rec.get("message") else "",
                    _fmt(rec.get("ratio_tc"), ".2f"), _fmt(rec.get("ratio_eager"), ".2f"), rec["wall_s"]))
    finally:
        pool.shutdown(wait=True)
        if own_work:
            shutil.rmtree(a.work, ignore_errors=True)
    meta["wall_s"] = round(time.time() - t_start, 1)
    meta["models_run"] = ran
    write_json(a.out, res)
    if stopped:
        log("== " + stopped)
    log(summary_line(summarize(res["records"], a.dtype)))
    log("results: %s (%d records), logs: %s, %.0f s" % (a.out, len(res["records"]), logs, time.time() - t_start))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
