#!/usr/bin/env python3
"""cpu_ref.py: the cpu device against the reference interpreter.

Ops: every program of ref_numpy.py (fresh random inputs and params; they
cover the ops of ir/ops.def together with the extra program below, and the
script fails if an op of ops.def appears in none) runs on cpu, fused and
with --no-fusion, and on ref; every output is compared.
Samples: every samples/*.sir (batch 1, --init random --seed S) on cpu and
on ref; with --tokens T, gpt2.sir on T tokens instead of its 512 (the
same ops, layers and weights: what CI's ASan build can afford).

Tolerance: floats by relative L2 error < 2e-5 over the output (NaN and
infinities must sit at the same places). The cpu device computes in fp32
(products and reductions accumulate in fp32, transcendental functions are
libm's float ones, each within 1-2 ulp), the reference in fp64 rounded once:
a chain of n roundings of 6e-8 each, plus a sum of K fp32 terms whose error
grows as sqrt(K) * 6e-8 (K = 4608 in ResNet-50's largest reduction, 3072 in
GPT-2's), stays well under 1e-5 relative; 2e-5 leaves room for the
cancellation in layer_norm's variance. Integers and bools are compared
exactly.

--precision bf16: both devices run the precision pass (every float value
stored as bf16; the reference interpreter computes each node in fp64 and
rounds it to bf16, the cpu device computes in fp32, rounds each bf16 node
as a store would, and accumulates products and reductions in fp32 before
the one rounding), compared within 2e-2 relative L2, the CUDA bf16 tests'
tolerance (tests/gpu/test_cuda_precision.c): bf16 keeps 8 bits, a
rounding is up to 2^-9 = 2e-3 relative, and a chain of them through a
model's layers stays well inside 2e-2. Integers and bools computed from
bf16 floats (comparisons, argmax) may then differ where two values round
to the same bf16 on one side only: they are compared by the fraction of
elements that differ (at most 1 %).

usage: cpu_ref.py SINTER SAMPLES_DIR [--seed S] [--keep DIR] [--ops-only | --samples-only] [--only mlp,resblock]
                  [--tokens T]  (gpt2.sir on T tokens instead of 512) [--precision bf16]
"""
import os
import random
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_numpy as R  # noqa: E402

TOL = 2e-5
PREC = []  # ["--precision", "bf16"] under --precision bf16


def extra_case(rng):
    """The ops the ref_numpy programs leave out."""
    c = R.Case("cpu_extra")
    x = rng.uniform(-3, 3, size=(2, 3, 8)).astype(np.float32)
    x[0, 0, 0] = np.inf
    c.input("x", x)
    c.input("k", rng.integers(-5, 5, size=(2, 3, 8)).astype(np.int64))
    c.line("%c = const f32[1] [0.5]")
    c.line("%i = iota i64[2,3,8] axis=2")
    c.line("%n = neg(%x)")
    c.line("%a = abs(%n)")
    c.line("%r = relu(%x)")
    c.line("%e = equal(%i, %k)")
    c.line("%g = greater(%i, %k)")
    c.line("%ci = cast(%i) dtype=f32")
    c.line("%cb = cast(%g) dtype=f32")
    c.line("%s1 = add(%a, %ci)")
    c.line("%s2 = mul(%s1, %c)")
    c.line("%s3 = add(%s2, %cb)")
    c.line("%inf = isinf(%x)")
    c.line("%fl = flatten(%s3) axis=1")
    c.line("%u = unsqueeze(%fl) axes=[0]")
    c.line("%sq = squeeze(%u) axes=[0]")
    c.line("%kr = abs(%k)")
    c.line("%kn = neg(%kr)")
    c.line("%kc = cast(%kn) dtype=f32")
    c.line("%kz = relu(%kc)")
    c.out("r", np.zeros((2, 3, 8)))
    c.out("e", np.zeros((2, 3, 8)), np.bool_)
    c.out("inf", np.zeros((2, 3, 8)), np.bool_)
    c.out("sq", np.zeros((2, 24)))
    c.out("kz", np.zeros((2, 3, 8)))
    return c


def attention_case(rng):
    """scaled_dot_product_attention with masks, all run natively on cpu
    (main checks the plan): f32 masks added (full rank 4 with -inf in it,
    (1, 1, L, S)), bool masks (L, S) with one row wholly masked (NaN in
    both), (H, 1, S) broadcast over the queries, causal with L != S, GQA,
    odd lengths and dims."""
    c = R.Case("cpu_attention")

    def f32(*shape):
        return rng.uniform(-2, 2, size=shape).astype(np.float32)

    B, H, Hk, L, S, D, Dv = 2, 4, 2, 7, 13, 5, 3
    c.input("q", f32(B, H, L, D))
    c.input("k", f32(B, H, S, D))
    c.input("v", f32(B, H, S, Dv))
    c.input("kg", f32(B, Hk, S, D))
    c.input("vg", f32(B, Hk, S, Dv))
    c.input("qc", f32(B, H, 9, D))
    add4 = f32(B, H, L, S)
    add4[rng.random(add4.shape) < 0.2] = -np.inf
    add4[..., 0] = 0.0
    c.input("madd4", add4)
    c.input("madd2", f32(1, 1, L, S))
    mb = rng.random((L, S)) < 0.6
    mb[:, 1] = True
    mb[3, :] = False  # a row with every score masked: NaN in both
    c.input("mb2", mb)
    mh = rng.random((H, 1, S)) < 0.5
    mh[:, 0, 2] = True
    c.input("mbh", mh)
    c.line("%a4 = scaled_dot_product_attention(%q, %k, %v, %madd4)")
    c.line("%a2 = scaled_dot_product_attention(%q, %kg, %vg, %madd2) scale=0.7")
    c.line("%b2 = scaled_dot_product_attention(%q, %k, %v, %mb2)")
    c.line("%bh = scaled_dot_product_attention(%q, %kg, %vg, %mbh)")
    c.line("%cs = scaled_dot_product_attention(%q, %k, %v) causal=true")
    c.line("%cl = scaled_dot_product_attention(%qc, %kg, %vg) causal=true")
    # causal over several 32-row blocks (runtime/cpu_ops.c attn_rows):
    # more queries than keys, and fewer
    c.input("qb", f32(B, H, 70, D))
    c.input("kb", f32(B, H, 45, D))
    c.input("vb", f32(B, H, 45, Dv))
    c.input("qm", f32(B, H, 40, D))
    c.input("km", f32(B, H, 75, D))
    c.input("vm", f32(B, H, 75, Dv))
    c.line("%cb = scaled_dot_product_attention(%qb, %kb, %vb) causal=true")
    c.line("%cm = scaled_dot_product_attention(%qm, %km, %vm) causal=true")
    for n, l in (("a4", L), ("a2", L), ("b2", L), ("bh", L), ("cs", L), ("cl", 9), ("cb", 70), ("cm", 40)):
        c.out(n, np.zeros((B, H, l, Dv)))
    return c


def products_case(rng):
    """Products and convolutions on packed weights (runtime/cpu_gemm.c
    cpu_pk_tile: 6 x 16 tiles, 256-deep K blocks, 192-row blocks): rows,
    columns and depths off those multiples, B as k x n and as n x k, bias,
    residual, relu and tanh-GELU fused, convolutions with partial channel
    panels and two K blocks."""
    c = R.Case("cpu_products")

    def f32(*shape):
        return rng.uniform(-1, 1, size=shape).astype(np.float32)

    c.input("x1", f32(37, 300))
    c.param("w1", f32(45, 300))
    c.param("b1", f32(45))
    c.input("x2", f32(2, 13, 515))
    c.param("w2", f32(515, 33))
    c.param("b2", f32(33))
    c.input("r2", f32(2, 13, 33))
    c.input("x3", f32(250, 64))
    c.param("w3", f32(64, 200))
    c.input("xc", f32(1, 20, 11, 13))
    c.param("wc1", f32(37, 20, 3, 3))
    c.param("bc1", f32(37))
    c.input("xd", f32(1, 300, 11, 13))
    c.param("wc2", f32(70, 300, 1, 1))
    c.param("bc2", f32(70))
    c.line("%l1 = linear(%x1, %w1, %b1)")
    c.line("%g1 = gelu(%l1) approximate=tanh")
    c.line("%m2 = matmul(%x2, %w2)")
    c.line("%a2 = add(%m2, %b2)")
    c.line("%s2 = add(%a2, %r2)")
    c.line("%y2 = relu(%s2)")
    c.line("%y3 = matmul(%x3, %w3)")
    c.line("%k1 = conv2d(%xc, %wc1, %bc1) stride=[2,2] pad=[1,1,1,1]")
    c.line("%yc1 = relu(%k1)")
    c.line("%yc2 = conv2d(%xd, %wc2, %bc2)")
    c.out("g1", np.zeros((37, 45)))
    c.out("y2", np.zeros((2, 13, 33)))
    c.out("y3", np.zeros((250, 200)))
    c.out("yc1", np.zeros((1, 37, 6, 7)))
    c.out("yc2", np.zeros((1, 70, 11, 13)))
    return c


def winograd_case(rng):
    """3x3 stride-1 convolutions on the Winograd path (runtime/cpu_conv.c
    run_wino): F(4x4, 3x3) on maps of 20x20 and more (edge blocks past
    the map, no pad, 2 images), F(2x2, 3x3) on 7x7 to 19x19; channels off
    the transforms' 8-wide steps and the 16-column panels, more than 256
    input channels (two K blocks), and U over 1 MiB (output channels split
    over the tasks); bias and relu fused or none."""
    c = R.Case("cpu_winograd")

    def f32(*shape):
        return rng.uniform(-1, 1, size=shape).astype(np.float32)

    convs = (  # name, x shape (N, C, H, W), output channels, pad, bias
        ("f4", (2, 21, 22, 23), 37, 1, True),
        ("f4n", (1, 16, 24, 24), 24, 0, False),
        ("f2s", (1, 32, 7, 7), 48, 1, True),
        ("f2m", (1, 40, 14, 15), 19, 1, True),
        ("f2k", (1, 260, 7, 9), 20, 1, False),
        ("f2u", (1, 160, 9, 9), 128, 1, True),
    )
    for name, (n, ci, h, w), o, pad, bias in convs:
        c.input("x" + name, f32(n, ci, h, w))
        c.param("w" + name, (f32(o, ci, 3, 3) / np.sqrt(9 * ci)).astype(np.float32))
        args = "%%x%s, %%w%s" % (name, name)
        if bias:
            c.param("b" + name, f32(o))
            args += ", %%b%s" % name
        c.line("%%k%s = conv2d(%s) pad=[%d,%d,%d,%d]" % (name, args, pad, pad, pad, pad))
        c.line("%%y%s = relu(%%k%s)" % (name, name))
        c.out("y" + name, np.zeros((n, o, h - 2 + 2 * pad, w - 2 + 2 * pad)))
    return c


def native_attention(sinter, sir, want):
    """The plan runs want attention steps and nothing on the reference
    interpreter (1 failure if not)."""
    p = subprocess.run([sinter, "print", sir, "--device", "cpu"], capture_output=True, text=True)
    m = re.search(r"(\d+) attention, .* (\d+) on the reference interpreter", p.stdout)
    ok = p.returncode == 0 and m and int(m.group(1)) == want and int(m.group(2)) == 0
    print("%s cpu_attention plan: %s" % ("ok  " if ok else "FAIL", m.group(0) if m else p.stdout + p.stderr))
    return 0 if ok else 1


def compare(got, want):
    """(what, failed) of cpu output got against ref output want."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return ("%s %s, ref %s %s" % (got.dtype, got.shape, want.dtype, want.shape), True)
    if got.dtype.kind != "f":
        bad = np.count_nonzero(got != want)
        return ("%d of %d elements differ" % (bad, want.size), bad > (0.01 * want.size if PREC else 0))
    g, w = got.astype(np.float64), want.astype(np.float64)
    fin = np.isfinite(w)
    if not np.array_equal(np.isnan(g), np.isnan(w)) or not np.array_equal(g[np.isinf(w)], w[np.isinf(w)]) or \
            not np.all(np.isfinite(g[fin])):
        return ("NaN or infinities at other places", True)
    num, den = np.linalg.norm(g[fin] - w[fin]), max(np.linalg.norm(w[fin]), 1e-30)
    return ("relative L2 error %.3g" % (num / den), num / den >= TOL)


def run(sinter, args, out):
    if os.path.exists(out):
        os.remove(out)
    p = subprocess.run([sinter, "run"] + args + ["-o", out], capture_output=True, text=True)
    if p.returncode != 0:
        return None, "exited %d\n%s%s" % (p.returncode, p.stdout, p.stderr)
    return dict(np.load(out)), None


def check(sinter, label, args, work, name):
    want, err = run(sinter, args + ["--device", "ref"] + PREC, os.path.join(work, name + ".ref.npz"))
    if err:
        print("FAIL %s (ref): %s" % (label, err))
        return 1
    failures = 0
    for extra in ([], ["--no-fusion"]) if "--ops" in label else ([],):
        got, err = run(sinter, args + ["--device", "cpu"] + PREC + extra, os.path.join(work, name + ".cpu.npz"))
        tag = label + (" unfused" if extra else "")
        if err:
            print("FAIL %s: %s" % (tag, err))
            failures += 1
            continue
        for k in want:
            what, bad = compare(got[k], want[k]) if k in got else ("missing", True)
            print("%s %s.%s: %s" % ("FAIL" if bad else "ok  ", tag, k, what))
            failures += bad
    return failures


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__)
        return 2
    sinter, samples = args[0], args[1]
    seed = int(os.environ.get("SINTER_SEED", random.randrange(1 << 31)))
    if "--seed" in args:
        seed = int(args[args.index("--seed") + 1])
    keep = args[args.index("--keep") + 1] if "--keep" in args else None
    global TOL, PREC
    if "--precision" in args:
        p = args[args.index("--precision") + 1]
        if p != "bf16":
            print("cpu_ref: --precision takes bf16 (fp32 is the default)")
            return 2
        TOL, PREC = 2e-2, ["--precision", "bf16"]
    print("cpu_ref: seed %d (replay with --seed %d)%s" % (seed, seed, " bf16" if PREC else ""))
    rng = np.random.default_rng(seed)
    tmp = tempfile.TemporaryDirectory()
    work = keep or tmp.name
    os.makedirs(work, exist_ok=True)
    os.environ["SINTER_CACHE_DIR"] = os.path.join(work, "cache")
    failures = 0
    text = ""
    for c in list(R.cases(rng)) + [extra_case(rng), attention_case(rng), products_case(rng), winograd_case(rng)] if "--samples-only" not in args else []:
        text += c.sir()
        sir = os.path.join(work, c.name + ".sir")
        with open(sir, "w") as f:
            f.write(c.sir())
        R.st_write(os.path.join(work, c.name + ".safetensors"), c.params)
        inp = os.path.join(work, c.name + ".in.safetensors")
        R.st_write(inp, c.inputs)
        failures += check(sinter, "--ops " + c.name, [sir, "--inputs", inp], work, c.name)
        if c.name == "cpu_attention":
            failures += native_attention(sinter, sir, 8)
    ops_def = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ir", "ops.def")
    ops = [l.split("(")[1].split(",")[0].strip() for l in open(ops_def) if l.startswith("OP(")]
    missing = [o for o in ops if o != "input" and not re.search(r"\b%s\b" % o, text)]
    if missing and "--samples-only" not in args:
        print("FAIL ops of ops.def in no program: %s" % " ".join(missing))
        failures += 1
    if "--ops-only" not in args:
        for f in sorted(os.listdir(samples)):
            only = args[args.index("--only") + 1].split(",") if "--only" in args else None
            if f.endswith(".sir") and (not only or f[:-4] in only):
                sir = os.path.join(samples, f)
                if f == "gpt2.sir" and "--tokens" in args:
                    # the same ops and weights on fewer tokens (the sample's
                    # 512 is its only sequence length; CI's ASan budget)
                    t = int(args[args.index("--tokens") + 1])
                    sir = os.path.join(work, "gpt2_t%d.sir" % t)
                    with open(os.path.join(samples, f)) as src, open(sir, "w") as dst:
                        dst.write(re.sub(r"\b512\b", str(t), src.read()))
                failures += check(sinter, "sample " + f, [sir, "--shape", "N=1", "--init", "random", "--seed",
                                                           str(seed % 1000)], work, f[:-4])
    print("cpu_ref: %d failure(s), seed %d" % (failures, seed))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
