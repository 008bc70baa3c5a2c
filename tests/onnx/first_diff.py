#!/usr/bin/env python3
"""first_diff.py: the first node of an ONNX model whose output sinter gets
wrong, found by comparing every intermediate tensor with onnxruntime.

The model is rewritten (with the onnx package) so that every output of every
top-level node is also a graph output; onnxruntime (CPU, graph
optimizations off) and `sinter run --device DEV` (ref unless named) each run
the rewritten model on the same inputs, and each node's outputs are
compared in the graph's order (ONNX requires a topological one). The first
node with an output beyond the tolerance is printed with its op type,
attributes, its inputs' shapes, dtypes and errors, and its outputs' errors;
the nodes after it usually differ only because their inputs do.

With --expected (the framework's own outputs, e.g. PyTorch's, by output
name), the graph outputs of sinter and of onnxruntime are also compared
with them: when sinter matches onnxruntime at every node but both miss the
expected outputs, the export is what differs from the framework, not
sinter (issue 26's SegFormer: a module exported in training mode, whose
BatchNormalization the exporter folds with the running statistics while
PyTorch's forward normalizes with the batch's; rel. L2 0.91 on sinter and
onnxruntime alike).

Floating-point values are compared by relative L2 error (--tol, default
1e-4); integer and bool values must be equal. A value sinter did not write
is reported as missing, not as a difference.

usage: first_diff.py SINTER MODEL.onnx [--inputs IN.safetensors|.npz|.npy]
                     [--seed S] [--shape NAME=D0,D1,...] [--device ref|cpu]
                     [--tol T] [--keep DIR] [--all] [--json]
                     [--expected OUT.safetensors|.npz|.npy] [--perturb VALUE]
Without --inputs, every graph input is drawn at random (floats N(0,1),
integers in [0, 10), bools half true) from --seed (default 0); symbolic
dims need --shape for that input. Exit 0 when no node differs, 1 when one
does (or a value is missing, or the outputs miss --expected), 2 when a
run fails. --perturb VALUE adds 1 to the first element of onnxruntime's
VALUE before the comparison (the tool's own test: that value's node must
be reported first).
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_node_tests import first_line, read_st, rel_l2, run_cmd, write_st  # noqa: E402

import onnx  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402


def load_inputs(path):
    """{name: array} from a safetensors, .npz or .npy file (.npy: None key,
    bound to the model's one input by the caller)."""
    if path.endswith(".safetensors"):
        return read_st(path)
    if path.endswith(".npz"):
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    return {None: np.load(path)}


def graph_inputs(m):
    """The graph inputs that are not initializers (ONNX before IR 4 listed
    initializers among the inputs)."""
    init = {t.name for t in m.graph.initializer}
    return [i for i in m.graph.input if i.name not in init]


def random_inputs(m, seed, shapes):
    rng = np.random.default_rng(seed)
    out = {}
    for vi in graph_inputs(m):
        tt = vi.type.tensor_type
        dims = shapes.get(vi.name)
        if dims is None:
            dims = []
            for d in tt.shape.dim:
                if not d.HasField("dim_value"):
                    raise SystemExit(f"first_diff: input {vi.name} has the symbolic dim "
                                     f"{d.dim_param or '?'}: give --shape {vi.name}=D0,D1,...")
                dims.append(d.dim_value)
        dt = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if dt == np.bool_:
            a = rng.random(dims) < 0.5
        elif np.issubdtype(dt, np.integer):
            a = rng.integers(0, 10, dims).astype(dt)
        else:
            a = rng.standard_normal(dims).astype(dt)
        out[vi.name] = a
    return out


def expose_all(m):
    """A copy of m whose graph outputs are every top-level node output (in
    node order), after the original outputs. Returns (model, names)."""
    m2 = onnx.ModelProto()
    m2.CopyFrom(m)
    have = {o.name for o in m2.graph.output}
    names = []
    for nd in m2.graph.node:
        for o in nd.output:
            if o and o not in have:
                have.add(o)
                names.append(o)
                m2.graph.output.append(helper.make_value_info(o, onnx.TypeProto()))
    return m2, names


def attr_text(nd):
    parts = []
    for a in nd.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode(errors="replace")
        elif isinstance(v, onnx.TensorProto):
            arr = numpy_helper.to_array(v)
            v = arr.tolist() if arr.size <= 8 else f"tensor {arr.dtype}{list(arr.shape)}"
        elif isinstance(v, onnx.GraphProto):
            v = f"graph {v.name}"
        parts.append(f"{a.name}={v}")
    return ", ".join(parts)


def err_of(want, got, tol):
    """(error as a float or None, what differs or None)."""
    want, got = np.asarray(want), np.asarray(got)
    if want.shape != got.shape:
        return None, f"shape {list(got.shape)}, onnxruntime {list(want.shape)}"
    if want.dtype.kind in "fc" or got.dtype.kind in "fc":
        e = rel_l2(want.astype(np.float64), got.astype(np.float64)) if want.size else 0.0
        return e, (None if e <= tol else f"rel L2 {e:.3g}")
    bad = int(np.count_nonzero(want != got.astype(want.dtype)))
    return float(bad), (None if not bad else f"{bad} of {want.size} elements differ")


def describe(a):
    a = np.asarray(a)
    return f"{a.dtype}{list(a.shape)}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sinter")
    ap.add_argument("model")
    ap.add_argument("--inputs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shape", action="append", default=[], help="NAME=D0,D1,... for a random input")
    ap.add_argument("--device", default="ref")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--keep", help="keep the rewritten model, inputs and outputs in this directory")
    ap.add_argument("--all", action="store_true", help="print every node's error, not only the first bad one")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout instead of text")
    ap.add_argument("--expected", help="the framework's outputs by output name (.npy: the one output)")
    ap.add_argument("--perturb", help="add 1 to onnxruntime's VALUE (a self-test)")
    a = ap.parse_args()

    m = onnx.load(a.model)                      # external data read from beside the model
    shapes = {}
    for s in a.shape:
        k, _, v = s.partition("=")
        shapes[k] = [int(d) for d in v.split(",") if d]
    if a.inputs:
        feeds = load_inputs(a.inputs)
        if None in feeds:
            gi = graph_inputs(m)
            if len(gi) != 1:
                raise SystemExit("first_diff: a .npy holds one array; the model has "
                                 f"{len(gi)} inputs")
            feeds = {gi[0].name: feeds[None]}
    else:
        feeds = random_inputs(m, a.seed, shapes)

    m2, names = expose_all(m)
    work = a.keep or tempfile.mkdtemp(prefix="sinter-diff-")
    os.makedirs(work, exist_ok=True)
    report = {"model": a.model, "device": a.device, "tol": a.tol, "nodes": len(m.graph.node)}
    try:
        path = os.path.join(work, "exposed.onnx")
        big = m2.ByteSize() > 1_500_000_000 if hasattr(m2, "ByteSize") else False
        onnx.save_model(m2, path, save_as_external_data=big, all_tensors_to_one_file=True,
                        location="exposed.onnx.data")

        import onnxruntime as ort
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        onames = [o.name for o in sess.get_outputs()]
        want = dict(zip(onames, sess.run(onames, feeds)))
        if a.perturb:
            if a.perturb not in want or not np.asarray(want[a.perturb]).size:
                raise SystemExit(f"first_diff: --perturb {a.perturb}: no such non-empty value")
            v = np.array(want[a.perturb])
            v.flat[0] += 1
            want[a.perturb] = v

        ipath = os.path.join(work, "inputs.safetensors")
        opath = os.path.join(work, "outputs.safetensors")
        write_st(ipath, feeds)
        rc, text = run_cmd([a.sinter, "run", path, "--device", a.device, "--inputs", ipath, "-o", opath], 3600)
        if rc != 0:
            msg = f"sinter run exit {rc}: {first_line(text)}"
            if a.json:
                print(json.dumps(dict(report, ok=False, error=msg)))
            else:
                print(f"first_diff: {msg}")
            return 2
        got = read_st(opath)

        inits = {t.name: t for t in m.graph.initializer}
        first, rows, missing = None, [], []
        for i, nd in enumerate(m.graph.node):
            outs = []
            for o in nd.output:
                if not o or o not in want:
                    continue
                if o not in got:
                    missing.append(o)
                    continue
                e, bad = err_of(want[o], got[o], a.tol)
                outs.append({"name": o, "type": describe(want[o]), "err": e, "bad": bad})
            if not outs:
                continue
            row = {"index": i, "name": nd.name, "op": nd.op_type, "outputs": outs}
            rows.append(row)
            if first is None and any(o["bad"] for o in outs):
                ins = []
                for v in nd.input:
                    if not v:
                        ins.append({"name": "", "type": "(absent)"})
                    elif v in inits:
                        ins.append({"name": v, "type": describe(numpy_helper.to_array(inits[v])),
                                    "initializer": True,
                                    "value": (numpy_helper.to_array(inits[v]).tolist()
                                              if np.prod(inits[v].dims) <= 8 else None)})
                    elif v in feeds:
                        ins.append({"name": v, "type": describe(feeds[v]), "graph_input": True})
                    elif v in want:
                        e, bad = err_of(want[v], got[v], a.tol) if v in got else (None, "missing")
                        val = np.asarray(want[v])
                        ins.append({"name": v, "type": describe(val), "err": e, "bad": bad,
                                    "value": val.tolist() if val.size <= 8 else None})
                    else:
                        ins.append({"name": v, "type": "?"})
                first = dict(row, domain=nd.domain or "ai.onnx", attributes=attr_text(nd), inputs=ins)
        report.update(ok=first is None and not missing, first=first, missing=missing,
                      compared=sum(len(r["outputs"]) for r in rows))
        if a.expected:
            exp = load_inputs(a.expected)
            if None in exp:
                exp = {m.graph.output[0].name: exp[None]}
            vs = []
            for k, e in exp.items():
                if k not in want:
                    raise SystemExit(f"first_diff: --expected names {k}, not an output of the model")
                eo, bo = err_of(e, want[k], a.tol)
                es, bs = err_of(e, got[k], a.tol) if k in got else (None, "missing")
                vs.append({"name": k, "onnxruntime_err": eo, "sinter_err": es, "ort_bad": bo, "sinter_bad": bs})
            report["expected"] = vs
            report["ok"] = report["ok"] and not any(v["sinter_bad"] for v in vs)
        if a.all:
            report["rows"] = rows
        if a.json:
            print(json.dumps(report, default=str))
        else:
            print(f"first_diff: {a.model} on {a.device}: {report['compared']} values of "
                  f"{len(m.graph.node)} nodes compared with onnxruntime (tol {a.tol:g})")
            if a.all:
                for r in rows:
                    for o in r["outputs"]:
                        e = "-" if o["err"] is None else f"{o['err']:.3g}"
                        print(f"  #{r['index']:<5} {r['op']:<20} {o['name']:<40} {o['type']:<24} {e}"
                              f"{'  BAD' if o['bad'] else ''}")
            if missing:
                print(f"  sinter wrote no value for {len(missing)}: {', '.join(missing[:10])}"
                      f"{' ...' if len(missing) > 10 else ''}")
            if first is None:
                print("  no node differs")
            else:
                print(f"  first differing node: #{first['index']} {first['op']} "
                      f"(name {first['name'] or '(none)'}, domain {first['domain']})")
                print(f"    attributes: {first['attributes'] or '(none)'}")
                for k, v in enumerate(first["inputs"]):
                    extra = ""
                    if v.get("initializer"):
                        extra = " initializer"
                    elif v.get("graph_input"):
                        extra = " graph input"
                    elif "err" in v:
                        extra = (f" {v['bad']}" if v["bad"] else
                                 f" matches ({'-' if v['err'] is None else format(v['err'], '.2g')})")
                    if v.get("value") is not None:
                        extra += f" = {v['value']}"
                    print(f"    input {k}: {v['name'] or '(absent)'} {v['type']}{extra}")
                for o in first["outputs"]:
                    print(f"    output {o['name']} {o['type']}: {o['bad'] or 'matches'}")
            for v in report.get("expected", []):
                def f(x):
                    return "-" if x is None else f"{x:.3g}"
                print(f"  against --expected, output {v['name']}: onnxruntime rel L2 {f(v['onnxruntime_err'])}, "
                      f"sinter {f(v['sinter_err'])}")
                if v["sinter_bad"] and v["ort_bad"] and first is None and not missing:
                    print("    sinter matches onnxruntime at every node: the export differs from the framework "
                          "(a module exported in training mode? BatchNorm and Dropout export with inference "
                          "semantics)")
        return 0 if report["ok"] else 1
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
