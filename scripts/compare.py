#!/usr/bin/env python3
"""compare.py: relative L2 error between the tensors of two safetensors files.

  compare.py REF.safetensors GOT.safetensors [--tol T]

Prints one line per tensor and exits 1 when a tensor is missing, differs in
shape, holds a NaN where the reference does not, or exceeds the tolerance.
numpy only; the reader follows the safetensors spec (8-byte header length,
JSON header, raw little-endian data)."""
import argparse
import json
import struct
import sys

import numpy as np

DT = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64,
      "I32": np.int32, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        if t["dtype"] == "BF16":
            u = np.frombuffer(data[b:e], dtype=np.uint16).astype(np.uint32) << 16
            a = u.view(np.float32)
        else:
            a = np.frombuffer(data[b:e], dtype=DT[t["dtype"]])
        out[name] = a.reshape(t["shape"]).astype(np.float64)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ref")
    ap.add_argument("got")
    ap.add_argument("--tol", type=float, default=1e-5)
    a = ap.parse_args()
    ref, got = load(a.ref), load(a.got)
    bad = 0
    for name, r in ref.items():
        g = got.get(name)
        if g is None or g.shape != r.shape:
            print(f"{name}: missing or shape {None if g is None else g.shape} != {r.shape}  FAIL")
            bad += 1
            continue
        if np.isnan(g).any() and not np.isnan(r).any():
            print(f"{name}: NaN in the result  FAIL")
            bad += 1
            continue
        den = np.linalg.norm(r)
        err = np.linalg.norm(g - r) / (den if den > 0 else 1.0)
        ok = err <= a.tol
        bad += not ok
        print(f"{name}: rel L2 {err:.3g} (tol {a.tol:g})  {'ok' if ok else 'FAIL'}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
