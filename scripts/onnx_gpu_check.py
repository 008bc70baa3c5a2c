#!/usr/bin/env python3
"""onnx_gpu_check.py: real PyTorch exports through sinter, on the GPU machine.

For torchvision resnet50 (batch 1, 3x224x224) and Hugging Face GPT-2 small
(GPT2Model, eager attention, batch 1, 512 tokens), with random weights from a
fixed seed (the machine has no network): exports the model with both
PyTorch exporters (torch.onnx.export with dynamo=False, opset 17, and
dynamo=True, opset 18), then per export

  sinter import M.onnx -o M.sir                       (writes M.sir + M.safetensors)
  sinter run M.sir  --device ref  --inputs IN -o OUT  (the imported IR)
  sinter run M.onnx --device cuda [--precision fp32] --inputs IN -o OUT

and compares each output with PyTorch's fp32 CPU output: relative L2 error
under 1e-4 on ref and on cuda (fp32). onnxruntime (CPU) runs each export
too, as a check of the exporter apart from sinter. A failure at any step is
a row marked FAIL with the reason, never a crash; the ref runs go side by
side with the cuda runs.

usage: scripts/onnx_gpu_check.py [SINTER] [--models resnet50,gpt2]
           [--exporters torchscript,dynamo] [--devices ref,cuda] [--work DIR]
           [--tokens 512] [--tol 1e-4] [--timeout S]
SINTER defaults to build-gpu/sinter. Prints a table last; writes
onnx_gpu_check.json and the failing steps' logs to $OUT when set. Exit 0 if
every row passed, 1 if one failed.
"""
import argparse
import concurrent.futures
import json
import os
import sys
import tempfile
import time
import traceback

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "onnx"))
from run_node_tests import read_st, rel_l2, run_cmd, sanitize, write_st  # noqa: E402

SEED = 0


def last_line(text, limit=300):
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return (lines[-1] if lines else "(no message)")[:limit]


def exc_reason(ex):
    return f"{type(ex).__name__}: {last_line(str(ex))}"


# ---- the models ----

def make_resnet50():
    import torch
    import torchvision
    torch.manual_seed(SEED)
    m = torchvision.models.resnet50(weights=None).eval()
    x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(SEED + 1))
    return m, (x,), ["input"], ["logits"]


def make_gpt2(tokens):
    import torch
    import transformers
    torch.manual_seed(SEED)
    cfg = transformers.GPT2Config(n_positions=max(1024, tokens), use_cache=False)
    try:  # matmul/softmax attention, as the exporters see it
        cfg._attn_implementation = "eager"
    except Exception as ex:
        print(f"gpt2: cannot ask for eager attention ({exc_reason(ex)}); using the default")

    class LastHidden(torch.nn.Module):
        """GPT2Model returning last_hidden_state only (no cache, no dict)."""

        def __init__(self):
            super().__init__()
            self.m = transformers.GPT2Model(cfg).eval()

        def forward(self, input_ids):
            return self.m(input_ids=input_ids, use_cache=False, return_dict=True).last_hidden_state

    m = LastHidden().eval()
    ids = torch.randint(0, cfg.vocab_size, (1, tokens), generator=torch.Generator().manual_seed(SEED + 1))
    return m, (ids,), ["input_ids"], ["last_hidden_state"]


def export(model, args, path, exporter, in_names, out_names):
    import torch
    if exporter == "torchscript":
        torch.onnx.export(model, args, path, dynamo=False, opset_version=17,
                          input_names=in_names, output_names=out_names, do_constant_folding=True)
    else:
        torch.onnx.export(model, args, path, dynamo=True, opset_version=18,
                          input_names=in_names, output_names=out_names, external_data=True)
    if not os.path.isfile(path):
        raise RuntimeError(f"the exporter wrote no {path}")


def graph_io(path):
    """The exported graph's input and output names (initializers excluded)."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    init = {t.name for t in m.graph.initializer}
    return [i.name for i in m.graph.input if i.name not in init], [o.name for o in m.graph.output]


def ort_check(path, feeds, ref):
    import onnxruntime as ort
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    out = sess.run(None, feeds)[0]
    return rel_l2(ref, out)


# ---- one row: one model, one exporter ----

class Row:
    def __init__(self, model, exporter):
        self.model, self.exporter = model, exporter
        self.status, self.reason = "ok", ""
        self.err = {}      # step -> rel L2 against PyTorch
        self.secs = {}     # step -> seconds
        self.onnx = self.sir = self.inputs = None
        self.out_name = None
        self.ref = None    # PyTorch's output

    def fail(self, step, reason):
        if self.status == "ok":
            self.status, self.reason = "FAIL", f"{step}: {reason}"
        else:
            self.reason += f"; {step}: {reason}"

    def as_json(self):
        return {"model": self.model, "exporter": self.exporter, "status": self.status,
                "reason": self.reason, "rel_l2": self.err, "seconds": self.secs}


def sinter_step(row, step, cmd, opath, ref, tol, timeout, logs):
    """Runs one sinter command; checks its output against ref."""
    t0 = time.monotonic()
    rc, text = run_cmd(cmd, timeout)
    row.secs[step] = round(time.monotonic() - t0, 2)
    if logs:
        with open(os.path.join(logs, f"{row.model}-{row.exporter}-{step}.log"), "w") as f:
            f.write(" ".join(cmd) + "\n" + text)
    if rc != 0:
        row.fail(step, f"exit {rc}: {last_line(text)}")
        return
    try:
        got = read_st(opath)
    except (OSError, ValueError) as ex:
        row.fail(step, exc_reason(ex))
        return
    g = got.get(row.out_name)  # names kept as ONNX spells them
    if g is None:
        g = got.get(sanitize(row.out_name))
    if g is None and len(got) == 1:
        g = next(iter(got.values()))
    if g is None:
        row.fail(step, f"no output {sanitize(row.out_name)} in {sorted(got)}")
        return
    if tuple(g.shape) != tuple(ref.shape):
        row.fail(step, f"shape {list(g.shape)}, PyTorch {list(ref.shape)}")
        return
    e = rel_l2(ref, g)
    row.err[step] = e
    if not e < tol:
        row.fail(step, f"rel L2 {e:.3g} > {tol:g}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sinter", nargs="?", default=os.path.join(ROOT, "build-gpu", "sinter"))
    ap.add_argument("--models", default="resnet50,gpt2")
    ap.add_argument("--exporters", default="torchscript,dynamo")
    ap.add_argument("--devices", default="ref,cuda")
    ap.add_argument("--work", help="directory for the exports (default: a temporary one)")
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--timeout", type=float, default=600, help="seconds per sinter command")
    a = ap.parse_args()
    out = os.environ.get("OUT")
    logs = os.path.join(out, "onnx-logs") if out else None
    if logs:
        os.makedirs(logs, exist_ok=True)
    sinter = os.path.abspath(a.sinter)
    work = a.work or tempfile.mkdtemp(prefix="sinter-onnx-gpu-")
    os.makedirs(work, exist_ok=True)
    os.environ.setdefault("SINTER_CACHE_DIR", os.path.join(work, "kcache"))
    devices = a.devices.split(",")
    versions = {}
    for mod in ("torch", "torchvision", "transformers", "onnx", "onnxruntime"):
        try:
            versions[mod] = __import__(mod).__version__
        except Exception as ex:  # reported, the rows that need it fail
            versions[mod] = f"missing ({exc_reason(ex)})"
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    if not os.access(sinter, os.X_OK):
        print(f"onnx_gpu_check: {sinter}: not an executable (build it first)", file=sys.stderr)
        return 2

    # fp32 on cuda: say so where the command has --precision (its default is fp32).
    _, helptext = run_cmd([sinter, "run", "--help"], 60)
    prec = ["--precision", "fp32"] if "--precision" in helptext else []

    rows = []
    for model in a.models.split(","):
        # The model and PyTorch's output, once for both exporters.
        try:
            import torch
            t0 = time.monotonic()
            m, args, in_names, out_names = make_resnet50() if model == "resnet50" else \
                make_gpt2(a.tokens) if model == "gpt2" else (None,) * 4
            if m is None:
                raise ValueError(f"unknown model {model}")
            with torch.no_grad():
                ref = m(*args)
            ref = ref.detach().float().numpy().astype(np.float32)
            feeds = [x.numpy() for x in args]
            print(f"{model}: PyTorch fp32 CPU output {list(ref.shape)} in {time.monotonic() - t0:.1f} s")
        except Exception as ex:
            for exporter in a.exporters.split(","):
                r = Row(model, exporter)
                r.fail("pytorch", exc_reason(ex))
                rows.append(r)
            traceback.print_exc()
            continue
        for exporter in a.exporters.split(","):
            r = Row(model, exporter)
            rows.append(r)
            r.ref = ref
            d = os.path.join(work, f"{model}-{exporter}")
            os.makedirs(d, exist_ok=True)
            r.onnx = os.path.join(d, "model.onnx")
            t0 = time.monotonic()
            try:
                export(m, args, r.onnx, exporter, in_names, out_names)
                gin, gout = graph_io(r.onnx)
            except Exception as ex:
                r.fail("export", exc_reason(ex))
                print(f"{model} {exporter}: export failed")
                traceback.print_exc()
                continue
            r.secs["export"] = round(time.monotonic() - t0, 2)
            if len(gin) != len(feeds) or not gout:
                r.fail("export", f"graph inputs {gin}, outputs {gout}: expected {len(feeds)} input(s)")
                continue
            r.out_name = gout[0]
            r.inputs = os.path.join(d, "inputs.safetensors")
            write_st(r.inputs, dict(zip(gin, feeds)))
            try:
                r.err["onnxruntime"] = ort_check(r.onnx, dict(zip(gin, feeds)), ref)
            except Exception as ex:  # informative only: not a sinter failure
                r.err["onnxruntime"] = None
                print(f"{model} {exporter}: onnxruntime: {exc_reason(ex)}")
            r.sir = os.path.join(d, "model.sir")
            t0 = time.monotonic()
            rc, text = run_cmd([sinter, "import", r.onnx, "-o", r.sir], a.timeout)
            r.secs["import"] = round(time.monotonic() - t0, 2)
            if rc != 0:
                r.fail("import", f"exit {rc}: {last_line(text)}")
                r.sir = None
            print(f"{model} {exporter}: exported in {r.secs['export']} s, "
                  f"import {'ok' if r.sir else 'FAILED'} in {r.secs['import']} s")
        del m

    # ref runs (one core each) side by side; the cuda runs meanwhile, in turn.
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(rows))) as ex:
        futs = []
        if "ref" in devices:
            for r in rows:
                if r.sir:
                    o = os.path.join(os.path.dirname(r.sir), "out.ref.safetensors")
                    futs.append(ex.submit(sinter_step, r, "ref", [sinter, "run", r.sir, "--device", "ref",
                                          "--inputs", r.inputs, "-o", o], o, r.ref, a.tol, a.timeout, logs))
        if "cuda" in devices:
            for r in rows:
                if r.inputs:
                    o = os.path.join(os.path.dirname(r.onnx), "out.cuda.safetensors")
                    sinter_step(r, "cuda", [sinter, "run", r.onnx, "--device", "cuda", *prec,
                                "--inputs", r.inputs, "-o", o], o, r.ref, a.tol, a.timeout, logs)
        for f in futs:
            f.result()

    def fmt(r, k):
        v = r.err.get(k)
        return "-" if v is None else f"{v:.2e}"
    print(f"\n{'model':10} {'exporter':12} {'ort':>9} {'ref':>9} {'cuda':>9} {'import s':>8} "
          f"{'ref s':>7} {'cuda s':>7}  status")
    for r in rows:
        print(f"{r.model:10} {r.exporter:12} {fmt(r, 'onnxruntime'):>9} {fmt(r, 'ref'):>9} "
              f"{fmt(r, 'cuda'):>9} {r.secs.get('import', '-'):>8} {r.secs.get('ref', '-'):>7} "
              f"{r.secs.get('cuda', '-'):>7}  {r.status}{'  ' + r.reason if r.reason else ''}")
    print(f"(rel L2 against PyTorch fp32 CPU; pass: ref and cuda < {a.tol:g})")
    if out:
        with open(os.path.join(out, "onnx_gpu_check.json"), "w") as f:
            json.dump({"versions": versions, "tokens": a.tokens, "tol": a.tol,
                       "rows": [r.as_json() for r in rows]}, f, indent=1)
    return 0 if rows and all(r.status == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
