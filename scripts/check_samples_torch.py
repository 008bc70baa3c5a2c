#!/usr/bin/env python3
"""Checks samples/*.sir against PyTorch on the CPU.

    python3 scripts/check_samples_torch.py --sinter build/sinter [--models resblock,gpt2]

For each model: build it in PyTorch (torch.manual_seed(0); batch-norm
weights, biases and running stats randomized so they matter), save its
state_dict as <tmp>/<name>.safetensors (a writer of our own: no safetensors
package needed), copy samples/<name>.sir next to it, write a random input to
<tmp>/<name>.in.safetensors, run

    sinter run <name>.sir --device ref --shape N=<n> --inputs <name>.in.safetensors -o <name>.out.safetensors

and compare sinter's output with PyTorch's (in float64, from the same fp32
weights and input) by relative L2 error. One line per model; exit 1 if any
error is above --tol (default 1e-4), 2 if a run fails.

Needs torch, torchvision (resblock, resnet50), transformers (gpt2), numpy.
"""

import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLES = os.path.join(HERE, "..", "samples")

# ---- safetensors (https://github.com/huggingface/safetensors#format) --------

ST_DTYPES = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16",
    torch.bfloat16: "BF16", torch.int64: "I64", torch.int32: "I32",
    torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL",
}
NP_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16,
             "I64": np.int64, "I32": np.int32, "I8": np.int8, "U8": np.uint8,
             "BOOL": np.bool_}


def save_safetensors(path, tensors):
    """tensors: {name: torch.Tensor}. 8-byte little-endian header length,
    JSON header padded with spaces to a multiple of 8, then the raw bytes."""
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        if t.dtype not in ST_DTYPES:
            raise SystemExit("%s: dtype %s has no safetensors name here" % (name, t.dtype))
        raw = t.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": ST_DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as fp:
        fp.write(struct.pack("<Q", len(text)))
        fp.write(text)
        for raw in blobs:
            fp.write(raw)


def load_safetensors(path):
    """{name: numpy array} (BF16 is not needed here and is refused)."""
    with open(path, "rb") as fp:
        data = fp.read()
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        raise ValueError("%s: header runs past the end of the file" % path)
    header = json.loads(data[8:8 + n])
    out, base = {}, 8 + n
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        if info["dtype"] not in NP_DTYPES or base + e > len(data):
            raise ValueError("%s: tensor %s: bad dtype or offsets" % (path, name))
        arr = np.frombuffer(data[base + b:base + e], dtype=NP_DTYPES[info["dtype"]])
        out[name] = arr.reshape(info["shape"])
    return out


# ---- the models --------------------------------------------------------------

def randomize_batch_norms(model):
    """Fresh batch norms are identities in eval mode (mean 0, var 1, weight 1,
    bias 0); give them values so a wrong operand order or eps shows."""
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            c = m.num_features
            with torch.no_grad():
                m.weight.copy_(0.75 + 0.5 * torch.rand(c, generator=g))
                m.bias.copy_(0.2 * torch.rand(c, generator=g) - 0.1)
                m.running_mean.copy_(0.2 * torch.rand(c, generator=g) - 0.1)
                m.running_var.copy_(0.5 + torch.rand(c, generator=g))


def build_resblock():
    from torchvision.models.resnet import BasicBlock
    m = BasicBlock(8, 8)
    randomize_batch_norms(m)
    return m, torch.randn(2, 8, 16, 16, generator=torch.Generator().manual_seed(2))


def build_resnet50():
    import torchvision
    m = torchvision.models.resnet50()
    randomize_batch_norms(m)
    return m, torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(2))


def build_mlp():
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(4096, 4096), torch.nn.GELU()]
    m = torch.nn.Sequential(*layers)
    return m, torch.randn(2, 4096, generator=torch.Generator().manual_seed(2))


class GPT2Hidden(torch.nn.Module):
    """GPT2Model returning last_hidden_state as a plain tensor."""

    def __init__(self):
        super().__init__()
        from transformers import GPT2Config, GPT2Model
        cfg = GPT2Config(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12,
                         n_head=12, activation_function="gelu_new",
                         layer_norm_epsilon=1e-5)
        self.inner = GPT2Model(cfg)

    def forward(self, ids):
        return self.inner(input_ids=ids, use_cache=False).last_hidden_state

    def sinter_state_dict(self):
        return self.inner.state_dict()


def build_gpt2():
    m = GPT2Hidden()
    ids = torch.randint(0, 50257, (1, 512), generator=torch.Generator().manual_seed(2))
    return m, ids


MODELS = {"resblock": build_resblock, "mlp": build_mlp,
          "resnet50": build_resnet50, "gpt2": build_gpt2}


# ---- the check -----------------------------------------------------------------

def sir_io(path):
    """The graph input's and output's value names, read from the .sir."""
    text = open(path).read()
    inp = re.search(r"func\s+@\w+\(\s*%([A-Za-z0-9_.]+)\s*:", text)
    out = re.search(r"^\s*return\s+%([A-Za-z0-9_.]+)", text, re.M)
    if not inp or not out:
        raise SystemExit("%s: cannot find the input or the returned value" % path)
    return inp.group(1), out.group(1)


PARAM_RE = re.compile(r'=\s*param\s+(\w+)\[([0-9,]*)\]\s+"([^"]+)"')
TORCH_NAMES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
               torch.int64: "i64", torch.int32: "i32", torch.int8: "i8",
               torch.uint8: "u8", torch.bool: "bool"}


def check_keys(name, sir, sd):
    """Every param of the .sir is in the state_dict with its shape and dtype.
    Returns a list of problems (empty when all match)."""
    bad, seen = [], set()
    for m in PARAM_RE.finditer(open(sir).read()):
        dtype, dims, key = m.group(1), m.group(2), m.group(3)
        seen.add(key)
        shape = [int(d) for d in dims.split(",")] if dims else []
        if key not in sd:
            bad.append("param %r is not in the state_dict" % key)
        elif list(sd[key].shape) != shape or TORCH_NAMES.get(sd[key].dtype) != dtype:
            bad.append("param %r is %s%s in the .sir, %s%s in the state_dict"
                       % (key, dtype, shape, sd[key].dtype, list(sd[key].shape)))
    if not seen:
        bad.append("no params found")
    unused = [k for k, v in sd.items() if k not in seen and v.is_floating_point()]
    if unused:
        bad.append("floating-point state_dict entries the .sir does not read: %s" % unused[:8])
    return bad


def rel_l2(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300))


def check(name, sinter, work, tol, timeout, keys_only=False):
    torch.manual_seed(0)
    model, x = MODELS[name]()
    model.eval()
    sd = model.sinter_state_dict() if isinstance(model, GPT2Hidden) else model.state_dict()
    sir = os.path.join(work, name + ".sir")
    shutil.copy(os.path.join(SAMPLES, name + ".sir"), sir)
    problems = check_keys(name, sir, sd)
    if problems:
        print("%-9s FAIL: %s" % (name, "; ".join(problems)))
        return 1
    weights = os.path.join(work, name + ".safetensors")
    save_safetensors(weights, sd)
    if keys_only:
        # read the file back: the writer and the reader agree with torch
        back = load_safetensors(weights)
        same = set(back) == set(sd) and all(
            np.array_equal(back[k], sd[k].numpy()) for k in sd if sd[k].dtype != torch.bfloat16)
        print("%-9s %s  %d params match the state_dict's keys, shapes and dtypes; "
              "safetensors round trip %s" % (name, "ok  " if same else "FAIL",
                                             len(PARAM_RE.findall(open(sir).read())),
                                             "exact" if same else "differs"))
        return 0 if same else 1
    in_name, out_name = sir_io(sir)
    inp = os.path.join(work, name + ".in.safetensors")
    out = os.path.join(work, name + ".out.safetensors")
    save_safetensors(inp, {in_name: x})

    with torch.no_grad():
        want32 = model(x).float()
        model.double()
        want = model(x.double() if x.is_floating_point() else x)

    cmd = [sinter, "run", sir, "--device", "ref", "--shape", "N=%d" % x.shape[0],
           "--inputs", inp, "-o", out]
    t0 = time.time()
    r = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=timeout)
    dt = time.time() - t0
    if r.returncode != 0:
        print("%-9s FAIL: sinter exited %d\n  %s\n%s" % (name, r.returncode, " ".join(cmd), r.stderr.strip()))
        return 2
    got = load_safetensors(out)
    if out_name in got:
        y = got[out_name]
    elif len(got) == 1:
        y = next(iter(got.values()))
    else:
        print("%-9s FAIL: %s has no tensor %r (has %s)" % (name, out, out_name, sorted(got)))
        return 2
    if tuple(y.shape) != tuple(want.shape):
        print("%-9s FAIL: sinter gave shape %s, PyTorch %s" % (name, list(y.shape), list(want.shape)))
        return 1
    err = rel_l2(y, want.numpy())
    err32 = rel_l2(want32.numpy(), want.numpy())
    ok = err < tol and np.isfinite(y).all()
    print("%-9s %s  rel L2 error %.2e vs PyTorch fp64 (PyTorch fp32: %.2e), out %s, sinter %.1f s"
          % (name, "ok  " if ok else "FAIL", err, err32, list(y.shape), dt))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description="Check samples/*.sir against PyTorch.")
    ap.add_argument("--sinter", default=os.path.join(HERE, "..", "build", "sinter"))
    ap.add_argument("--models", default="resblock,mlp,resnet50,gpt2")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per sinter run")
    ap.add_argument("--keep", metavar="DIR", help="work in DIR and keep the files")
    ap.add_argument("--keys-only", action="store_true",
                    help="only check that the params match the state_dicts (no sinter run)")
    args = ap.parse_args()
    sinter = os.path.abspath(args.sinter)
    if not args.keys_only and not os.access(sinter, os.X_OK):
        ap.error("%s is not an executable (build first, or pass --sinter)" % sinter)
    names = [n for n in args.models.split(",") if n]
    for n in names:
        if n not in MODELS:
            ap.error("unknown model %r (have %s)" % (n, ", ".join(MODELS)))
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    work = args.keep or tempfile.mkdtemp(prefix="sinter-samples-")
    os.makedirs(work, exist_ok=True)
    worst = 0
    try:
        for n in names:
            worst = max(worst, check(n, sinter, work, args.tol, args.timeout, args.keys_only))
            # the weights of the big models take room; keep only what --keep asks
            if not args.keep:
                for f in os.listdir(work):
                    os.remove(os.path.join(work, f))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return worst


if __name__ == "__main__":
    sys.exit(main())
