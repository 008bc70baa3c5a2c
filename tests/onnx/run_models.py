#!/usr/bin/env python3
"""run_models.py: the small real exports kept under tests/onnx/models/, on
sinter's reference interpreter.

Each tests/onnx/models/NAME/ holds model.onnx (a PyTorch export under 1 MB
with random weights, written by `scripts/coverage.py --save-small` on the
GPU machine), inputs.safetensors and expected.safetensors (PyTorch's fp32
CPU outputs, named as the model names them). Every model runs as

  sinter run model.onnx --device ref --inputs inputs.safetensors -o OUT

and every expected output must be matched within 1e-4 relative L2 error
(the coverage suite's bound).

usage: run_models.py SINTER [--dir tests/onnx/models] [--tol 1e-4]
Exit 0 when every model passes, 1 when one fails, 2 when there is none.
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_node_tests import first_line, read_st, rel_l2, run_cmd  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sinter")
    ap.add_argument("--dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "models"))
    ap.add_argument("--tol", type=float, default=1e-4)
    a = ap.parse_args()
    names = sorted(n for n in os.listdir(a.dir) if os.path.isfile(os.path.join(a.dir, n, "model.onnx"))) \
        if os.path.isdir(a.dir) else []
    if not names:
        print(f"run_models: no models under {a.dir}")
        return 2
    bad = 0
    with tempfile.TemporaryDirectory(prefix="sinter-models-") as work:
        for n in names:
            d = os.path.join(a.dir, n)
            out = os.path.join(work, n + ".safetensors")
            rc, text = run_cmd([a.sinter, "run", os.path.join(d, "model.onnx"), "--device", "ref",
                                "--inputs", os.path.join(d, "inputs.safetensors"), "-o", out], 900)
            if rc != 0:
                print(f"  {n}: sinter run exit {rc}: {first_line(text)}  FAIL")
                bad += 1
                continue
            got, want = read_st(out), read_st(os.path.join(d, "expected.safetensors"))
            for k, w in want.items():
                g = got.get(k)
                if g is None or g.shape != w.shape:
                    print(f"  {n}: output {k}: {'missing' if g is None else list(g.shape)}, "
                          f"expected {list(w.shape)}  FAIL")
                    bad += 1
                    continue
                e = rel_l2(w, g)
                ok = e < a.tol
                bad += not ok
                print(f"  {n}: {k} {list(w.shape)} rel L2 {e:.3g}  {'ok' if ok else 'FAIL'}")
    print(f"run_models: {len(names)} models, {'all passed' if not bad else f'{bad} FAILED'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
