#!/usr/bin/env python3
"""check_cuda.py: the attention forms of this folder on a GPU (the CI test
unit.attention_forms runs them on ref and cpu only). For each NAME.onnx
and precision, `sinter run --device cuda` against the reference on the
graph as written (`--device ref --passes ''`), on random inputs whose
padding masks keep key 0, and the attention nodes the default pipeline
leaves (`sinter print --mode default`: 1 expected).

usage: check_cuda.py SINTER [--device cuda|cpu] [--precisions fp32,bf16] [--tol-fp32 1e-4] [--tol-low 3e-2]
Needs numpy and onnx. Exit 1 when a form fails.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx


def write_st(path, tensors):
    """tensors: name -> (safetensors dtype, numpy array of its bytes)."""
    import json
    import struct
    head, blobs, off = {}, [], 0
    for k, (dt, arr) in tensors.items():
        b = arr.tobytes()
        head[k] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(head).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def inputs(path, out, seed):
    m = onnx.load(path, load_external_data=False)
    rng = np.random.default_rng(seed)
    d = {}
    for i in m.graph.input:
        t = i.type.tensor_type
        shp = [x.dim_value for x in t.shape.dim]
        et = t.elem_type
        if i.name == "mask":
            v = rng.random(shp) < 0.75
            v[:, 0] = True
            d[i.name] = ("I64", v.astype(np.int64)) if et == onnx.TensorProto.INT64 else ("BOOL", v.astype(np.uint8))
        elif et == onnx.TensorProto.INT64:
            d[i.name] = ("I64", rng.integers(0, 64, shp).astype(np.int64))
        elif et == onnx.TensorProto.BFLOAT16:
            x = rng.standard_normal(shp).astype(np.float32)
            d[i.name] = ("BF16", (x.view(np.uint32) >> 16).astype(np.uint16))
        else:
            d[i.name] = ("F32", rng.standard_normal(shp).astype(np.float32))
    write_st(out, d)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, (r.stdout + r.stderr).strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sinter")
    ap.add_argument("--precisions", default="fp32,bf16")
    ap.add_argument("--device", default="cuda", help="cuda (default), or cpu to try the script")
    ap.add_argument("--tol-fp32", type=float, default=1e-4)
    ap.add_argument("--tol-low", type=float, default=3e-2)
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    bad = 0
    with tempfile.TemporaryDirectory(prefix="sinter-attn-") as tmp:
        for k, path in enumerate(sorted(glob.glob(os.path.join(here, "*.onnx")))):
            name = os.path.basename(path)[:-5]
            ins = os.path.join(tmp, name + ".in.safetensors")
            inputs(path, ins, k)
            want_p = os.path.join(tmp, name + ".ref.npz")
            rc, text = run([a.sinter, "run", path, "--device", "ref", "--passes", "", "--inputs", ins, "-o", want_p])
            if rc:
                print(f"{name}: ref failed: {text.splitlines()[-1] if text else rc}")
                bad += 1
                continue
            want = np.load(want_p)
            for prec in a.precisions.split(","):
                rc, text = run([a.sinter, "print", path, "--mode", "default", "--precision", prec])
                nodes = text.count(" = scaled_dot_product_attention(") if rc == 0 else -1
                got_p = os.path.join(tmp, f"{name}.{prec}.npz")
                rc, text = run([a.sinter, "run", path, "--device", a.device, "--precision", prec, "--inputs", ins,
                                "-o", got_p])
                if rc:
                    print(f"{name} {prec}: {a.device} failed: {text.splitlines()[-1] if text else rc}  FAIL")
                    bad += 1
                    continue
                got = np.load(got_p)
                # a model declared in bf16 computes in bf16 at any precision
                tol = a.tol_fp32 if prec == "fp32" and "bf16" not in name else a.tol_low
                for o in want.files:
                    w, g = want[o].astype(np.float64), got[o].astype(np.float64)
                    e = np.linalg.norm(w - g) / (np.linalg.norm(w) + 1e-30)
                    ok = e <= tol and nodes == 1
                    bad += not ok
                    print(f"{name} {prec}: {nodes} attention node(s), {o} rel L2 {e:.3g} (tol {tol:g})  "
                          f"{'ok' if ok else 'FAIL'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
