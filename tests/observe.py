#!/usr/bin/env python3
"""observe.py SINTER: logging (-v, -vv, SINTER_LOG), --trace (the host part;
the device part is checked on the GPU machine by scripts/gpu-observe),
print --dot and --json of check, compile, run and cache stats, as a user
sees them. Values are checked against ones worked out here by hand."""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sinter = os.path.abspath(sys.argv[1])
here = os.path.dirname(os.path.abspath(__file__))
tmp = tempfile.mkdtemp()
os.chdir(tmp)
shutil.copy(os.path.join(here, "cli", "tiny.sir"), "tiny.sir")
fails = 0


def ok(cond, what):
    global fails
    if not cond:
        fails += 1
        print("FAIL:", what)


def run(*args, env=None, code=0):
    e = dict(os.environ)
    e.pop("SINTER_LOG", None)
    e.update(env or {})
    p = subprocess.run([sinter, *args], capture_output=True, text=True, env=e)
    ok(p.returncode == code, "%s: exit %d (want %d): %s" % (" ".join(args), p.returncode, code, p.stderr[-500:]))
    return p


def st(path, tensors):
    """a safetensors file of f32 tensors {name: (shape, values)}"""
    header, blob = {}, b""
    for name, (shape, vals) in tensors.items():
        data = struct.pack("<%df" % len(vals), *vals)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(blob), len(blob) + len(data)]}
        blob += data
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + blob)


# tiny: y = relu(x @ w.T + b) * 2 with w = [[1,0,-1],[0.5,0.5,0.5]], b = [0, -1]
st("tiny.safetensors", {"fc.weight": ([2, 3], [1, 0, -1, 0.5, 0.5, 0.5]), "fc.bias": ([2], [0, -1])})
st("in.safetensors", {"x": ([2, 3], [3, 1, 1, 2, 2, -4])})
# row 0: h = [3-1, 0.5*5-1] = [2, 1.5] -> y = [4, 3]; row 1: h = [2+4, 0-1] = [6, -1] -> y = [12, 0]
want = [4.0, 3.0, 12.0, 0.0]

# ---- --json ----
c = json.loads(run("check", "tiny.sir", "--json").stdout)
ok(c["ok"] and c["nodes"] == 7 and c["symbols"] == ["N"], "check --json: %r" % c)
ok(c["inputs"] == [{"name": "x", "dtype": "f32", "shape": ["N", 3]}], "check --json inputs %r" % c["inputs"])
ok(c["outputs"][0]["name"] == "y" and c["outputs"][0]["shape"] == [None, 2], "check --json outputs %r" % c["outputs"])
ok(len(c["hash"]) == 32, "check --json hash")
bad = run("check", "missing.sir", "--json", code=1)
e = json.loads(bad.stdout)
ok(e["ok"] is False and e["status"] == 1 and "missing.sir" in e["error"], "error as JSON: %r" % e)
u = json.loads(run("check", "tiny.sir", "--json", "--frob", code=2).stdout)
ok(u["status"] == 2 and "--frob" in u["error"], "usage error as JSON: %r" % u)

r = json.loads(run("run", "tiny.sir", "--device", "ref", "--inputs", "in.safetensors", "--json").stdout)
o = r["outputs"][0]
ok(r["device"] == "ref" and o["shape"] == [2, 2] and o["first"] == want, "run --json: %r" % r)
ok(abs(o["mean"] - sum(want) / 4) < 1e-9 and o["abs_max"] == 12, "run --json mean/abs_max %r" % o)

# ---- logging ----
p = run("-v", "run", "tiny.sir", "--device", "ref", "--inputs", "in.safetensors")
ok("sinter: info: parse:" in p.stderr and "sinter: info: run (ref):" in p.stderr, "-v: %r" % p.stderr)
ok("debug" not in p.stderr, "-v shows no debug lines")
p = run("run", "tiny.sir", "--device", "ref", "--inputs", "in.safetensors", env={"SINTER_LOG": "info"})
ok("sinter: info: weights:" in p.stderr, "SINTER_LOG=info: %r" % p.stderr)
p = run("run", "tiny.sir", "--device", "ref", "--inputs", "in.safetensors")
ok("sinter: info" not in p.stderr, "quiet by default: %r" % p.stderr)
ok("4 3 12 0" in p.stdout, "the run's output: %r" % p.stdout)

# ---- --trace (host) ----
p = run("run", "tiny.sir", "--trace", "t.json", "--device", "ref", "--inputs", "in.safetensors")
t = json.load(open("t.json"))
ev = [e for e in t["traceEvents"] if e["ph"] == "X"]
names = [e["name"] for e in ev]
# run parses twice when --inputs binds a symbol (the model is loaded again bound)
ok(names[-2:] == ["weights", "run (ref)"] and names[0] == "parse", "trace events %r" % names)
ok(all(e["pid"] == 1 and e["ts"] >= 0 and e["dur"] >= 0 for e in ev), "trace host events %r" % ev)
ok(all(ev[i]["ts"] + ev[i]["dur"] <= ev[i + 1]["ts"] + 1 for i in range(len(ev) - 1)), "trace spans in order")
run("--trace", "nodir/t.json", "check", "tiny.sir", code=1)  # found before the work
ok(not os.path.exists("nodir"), "no folder made for --trace")

# ---- compile: stages, kernel cache misses then hits (NVRTC present in CI) ----
args = ["compile", "tiny.sir", "--shape", "N=2", "--target", "sm_90", "--cache-dir", "cache"]
p1 = subprocess.run([sinter, "-vv", "--trace", "c.json", *args, "--json"], capture_output=True, text=True)
if p1.returncode == 3:
    print("NVRTC absent: compile checks skipped")
else:
    j = json.loads(p1.stdout)
    ok(j["ok"] and j["kernels"] >= 1 and j["cache_hits"] == 0 and j["target"] == "sm_90", "compile --json %r" % j)
    ok("kernel cache:" in p1.stderr and "miss (no entry" in p1.stderr, "-vv kernel cache misses: %r" % p1.stderr)
    stages = [e["name"] for e in json.load(open("c.json"))["traceEvents"] if e["ph"] == "X"]
    ok(all(s in stages for s in ("parse", "passes", "codegen", "nvrtc")), "compile trace %r" % stages)
    p2 = run("-vv", *args, "--json")
    j2 = json.loads(p2.stdout)
    ok(j2["cache_hits"] == j2["unique_kernels"] and " hit" in p2.stderr, "second compile: hits %r" % j2)
    s = json.loads(run("cache", "stats", "--dir", "cache", "--json").stdout)
    ok(s["kernels"]["entries"] == j["unique_kernels"] and s["kernels"]["bytes"] > 0, "cache stats --json %r" % s)

# ---- print --dot ----
d = run("print", "--dot", "tiny.sir").stdout
ok(d.startswith('digraph "main" {') and d.rstrip().endswith("}"), "dot framing")
ok(d.count(" [label=") == 7 + 1 and d.count(" -> ") == 6 + 1, "dot nodes and edges: %r" % d)
ok("linear" in d and "f32[N,2]" in d, "dot labels")
os.makedirs("sub", exist_ok=True)
run("print", "tiny.sir", "--passes", "canonicalize", "--dump-dir", "sub/new")
ok(os.path.isdir("sub/new") and os.listdir("sub/new"), "print --dump-dir makes its folder")
h = run("compile", "--help").stdout
ok(h.count("--dump-dir") == 2, "compile --help lists --dump-dir once (and in the usage line): %d" % h.count("--dump-dir"))

# ---- NumPy files on the command line (written and read here by hand, spec of numpy.lib.format) ----
def npy(values, shape, descr="<f4", fmt="f"):
    d = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, "".join("%d," % x for x in shape))
    h = d + " " * (64 - (10 + len(d) + 1) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + struct.pack("<%d%s" % (len(values), fmt), *values)


def load_npy(b):
    hl = struct.unpack("<H", b[8:10])[0]
    hdr = b[10:10 + hl].decode()
    return hdr, struct.unpack("<%df" % ((len(b) - 10 - hl) // 4), b[10 + hl:])


import zipfile
open("x.npy", "wb").write(npy([3, 1, 1, 2, 2, -4], [2, 3]))
with zipfile.ZipFile("in.npz", "w") as z:  # stored, as np.savez
    z.writestr("x.npy", npy([3, 1, 1, 2, 2, -4], [2, 3]))
    z.writestr("other.npy", npy([1], [1]))
with zipfile.ZipFile("inz.npz", "w", compression=zipfile.ZIP_DEFLATED) as z:  # as np.savez_compressed
    z.writestr("x.npy", npy([3, 1, 1, 2, 2, -4], [2, 3]))
for f in ("x.npy", "in.npz", "inz.npz"):
    run("run", "tiny.sir", "--device", "ref", "--inputs", f, "-o", "o.npz")
    with zipfile.ZipFile("o.npz") as z:
        ok(z.namelist() == ["y.npy"], "-o .npz entries %r" % z.namelist())
        hdr, vals = load_npy(z.read("y.npy"))
    ok("'shape': (2, 2)" in hdr and list(vals) == want, "%s -> o.npz: %s %r" % (f, hdr, vals))
run("run", "tiny.sir", "--device", "ref", "--inputs", "x.npy", "-o", "o.npy")
hdr, vals = load_npy(open("o.npy", "rb").read())
ok(list(vals) == want and "'<f4'" in hdr, "-o .npy: %r" % (vals,))
with zipfile.ZipFile("wrong.npz", "w") as z:
    z.writestr("a.npy", npy([1, 2], [2]))
    z.writestr("b.npy", npy([5], [1], "<i8", "q"))
p = run("run", "tiny.sir", "--device", "ref", "--inputs", "wrong.npz", "--shape", "N=2", code=1)
ok("no tensor for input %x" in p.stderr and "a f32[2], b i64[1]" in p.stderr, "missing input names the file's: %r" % p.stderr)
run("run", "tiny.sir", "--device", "ref", "--inputs", "x.npy", "-o", "nodir/o.npz", code=1)

# ---- the cpu device (issue 31, item 10): bench --profile, cache explain,
# a trace's spans per step (the values of tiny worked out above) ----
cpu = subprocess.run([sinter, "run", "tiny.sir", "--device", "cpu", "--inputs", "in.safetensors", "--cache-dir", "cc"],
                     capture_output=True, text=True)
if cpu.returncode:
    print("observe: the cpu device's part skipped: %s" % cpu.stderr.strip())
else:
    p = run("bench", "tiny.sir", "--device", "cpu", "--shape", "N=2", "--iters", "3", "--warmup", "1", "--profile")
    prof = p.stdout[p.stdout.find("profile:"):].splitlines()
    ok(prof and prof[0].startswith("profile: 2 steps, ") and "each step timed where it runs" in prof[0],
       "bench --device cpu --profile: %r" % p.stdout)
    rows = [r.split() for r in prof[2:]]
    # y = relu(x @ w.T + b) * 2: the product with its relu (sgemm), then the mul (a generated kernel)
    ok(sorted((r[0][0] == "k", r[1]) for r in rows) == [(False, "linear"), (True, "mul")] and
       [r[0] for r in rows if r[1] == "linear"] == ["sgemm"], "cpu profile rows %r" % rows)
    p = run("--trace", "tc.json", "run", "tiny.sir", "--device", "cpu", "--inputs", "in.safetensors", "--cache-dir", "cc")
    steps = [e["name"] for e in json.load(open("tc.json"))["traceEvents"] if e.get("cat") == "cpu step"]
    ok(sorted(steps) == ["linear sgemm", "mul k0"], "cpu trace spans %r" % steps)
    p = run("cache", "explain", "tiny.sir", "--device", "cpu", "--inputs", "in.safetensors", "--cache-dir", "cc")
    ok(p.stdout.startswith("cache cc\nplan: hit cc/plans/"), "cache explain --device cpu: %r" % p.stdout)

shutil.rmtree(tmp)
print("observe: %s" % ("all checks passed" if not fails else "%d failures" % fails))
sys.exit(1 if fails else 0)
