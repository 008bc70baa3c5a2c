#!/usr/bin/env python3
"""suite_check.py: benchmarks/suite.py without torch or a GPU (ctest
benchmarks.suite). The listing (--dry-run: at least 40 models over every
family, each with its parameter count and input shapes), the selection
(--models, --family, --shard), and the summary and table code on
synthetic records with hand-worked figures: pass rate, the geomean of
sinter over torch.compile's best mode (no clipping at 1.0), the worst
model, mean cold compile, statuses from errors against the tolerance."""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# suite.py's export cache defaults to build-suite-cache/ in the tree: a
# test leaves the checkout as it found it, so this one's goes to a
# temporary folder (removed at exit), for its own runs and their children
_CACHE = tempfile.TemporaryDirectory(prefix="suite-check-cache-")
os.environ["SINTER_SUITE_CACHE"] = _CACHE.name
SUITE = os.path.join(ROOT, "benchmarks", "suite.py")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import suite  # noqa: E402
import suite_models  # noqa: E402

fails = 0


def check(cond, what):
    global fails
    if not cond:
        fails += 1
        print("FAIL: " + what)


def run(*args):
    p = subprocess.run([sys.executable, SUITE] + list(args), capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


# 1. the listing: plain python3, no torch
rc, out, err = run("--dry-run")
check(rc == 0, "--dry-run exits 0 (%d: %s)" % (rc, err.strip()[-300:]))
lines = out.splitlines()
last = [ln for ln in lines if " models: " in ln]
check(len(last) == 1, "--dry-run prints one 'N models: ...' line")
n = int(last[0].split()[0]) if last else 0
check(n >= 40, "at least 40 models (%d)" % n)
fams = dict((f.split()[0], int(f.split()[1])) for f in last[0].split(": ", 1)[1].split(", ")) if last else {}
check(set(fams) == set(suite_models.FAMILIES), "every family listed (%s)" % sorted(fams))
check(sum(fams.values()) == n, "family counts add up")
rows = [ln for ln in lines if ln.split() and ln.split()[0] in suite_models.BY_NAME]
check(len(rows) == n == len(suite_models.MODELS), "one line per model")
check(all(ln.split()[2] != "n/a" and ln.split()[2].endswith("M") for ln in rows), "every model has its parameter count")
check(all(re.search(r" \d+x\d+", ln) for ln in rows), "every model shows its input shapes")
names = [m["name"] for m in suite_models.MODELS]
check(len(set(names)) == len(names), "model names are unique")
check(all(m["tol"] in suite_models.TOL_CLASSES for m in suite_models.MODELS), "known tolerance classes")
check(any(m["name"].startswith("llama") and m["inputs"][0][1][1] == 512 for m in suite_models.MODELS) and
      any(m["name"].startswith("llama") and m["inputs"][0][1][1] == 2048 for m in suite_models.MODELS),
      "a Llama prefill at 512 and 2048 tokens")
rc, out, _ = run("--dry-run", "--family", "llm,diffusion")
check(rc == 0 and "models: llm %d, diffusion %d" % (fams.get("llm"), fams.get("diffusion")) in out, "--family")
rc, out, err = run("--dry-run", "--models", "resnet50,no_such_model")
check(rc != 0 and "no_such_model" in err, "an unknown model is refused by name")

# 2. selection: shards partition the suite
parts = [suite.select(suite_models.MODELS, shard=(i, 3)) for i in (1, 2, 3)]
flat = [m["name"] for p in parts for m in p]
check(sorted(flat) == sorted(names) and len(flat) == len(names), "--shard 1/3..3/3 cover every model once")
check([m["name"] for m in suite.select(suite_models.MODELS, names=["vgg16", "resnet18"])] == ["resnet18", "vgg16"],
      "--models keeps the suite's order")


# 3. records -> statuses, ratios, summary
def rec(name, tc, sinter, tol=0.02, errors=(), dtype="bf16"):
    return suite.finish_record({"name": name, "family": "tv-cls", "dtype": dtype, "params": 1e6, "tol": tol,
                                "torch": tc, "sinter": sinter, "errors": list(errors)})


T = {"eager": {"median_ms": 4.0, "err": 0.01, "peak_bytes": 3 * 2**20},
     "default": {"median_ms": 2.0, "err": 0.01, "peak_bytes": 2 * 2**20},
     "reduce-overhead": {"median_ms": 1.0, "err": 0.01, "peak_bytes": 5 * 2**20}}
a = rec("a", T, {"cli:default": {"median_ms": 0.9, "err": 0.01, "cold_compile_s": 1.0, "warm_start_s": 0.05,
                                 "mem_bytes": 2**20},
                 "cli:reduce-overhead": {"median_ms": 0.5, "err": 0.015}})
b = rec("b", T, {"cli:default": {"median_ms": 2.5, "err": 0.001, "cold_compile_s": 3.0},
                 "py:reduce-overhead": {"median_ms": 2.0, "err": 0.001}})
c = rec("c", T, {"cli:default": {"median_ms": 0.1, "err": 0.5, "cold_compile_s": 2.0}})     # wrong answer
d = rec("d", T, {"cli:default": {"error": "sinter bench exit 4: out of memory"}})
e = rec("e", {}, {}, errors=[{"stage": "export", "error": "RuntimeError: unsupported"}])
f = rec("f", {"eager": {"median_ms": 4.0, "err": 0.01}}, {"cli:default": {"median_ms": 1.0, "err": 0.0}})
g = rec("g", T, {"cli:default": {"median_ms": 9.0, "err": 0.001}}, dtype="fp16")
check(a["status"] == "pass" and a["sinter_best"] == "cli:reduce-overhead", "a passes, best mode reduce-overhead")
check(abs(a["ratio_tc"] - 0.5) < 1e-12 and abs(a["ratio_eager"] - 0.125) < 1e-12, "a's ratios")
check(a["torch_peak_bytes"] == 2 * 2**20 and a["cold_compile_s"] == 1.0 and a["warm_start_s"] == 0.05,
      "a's memory (PyTorch's leanest mode) and compile")
check(b["status"] == "pass" and b["sinter_best"] == "py:reduce-overhead" and abs(b["ratio_tc"] - 2.0) < 1e-12,
      "b passes 2x slower than torch.compile's best (not clipped)")
check(c["status"] == "fail" and "rel L2" in c["message"] and c["ratio_tc"] is None, "c: a wrong answer fails")
check(d["status"] == "error" and "out of memory" in d["message"], "d: a sinter error")
check(e["status"] == "error" and e["message"].startswith("export: RuntimeError"), "e: an export error")
check(f["status"] == "pass" and f["ratio_tc"] is None and abs(f["ratio_eager"] - 0.25) < 1e-12,
      "f: without torch.compile only the eager ratio")
recs = [a, b, c, d, e, f, g]
s = suite.summarize(recs, "bf16")
check(s["models"] == 6 and s["passed"] == 3 and abs(s["pass_rate"] - 0.5) < 1e-12, "pass rate 3/6")
check(s["failed"] == 1 and s["errors"] == 2, "1 wrong answer, 2 errors")
check(abs(s["geomean_vs_tc_best"] - 1.0) < 1e-12 and s["ratio_models"] == 2, "geomean of 0.5 and 2.0 is 1.0")
check(s["worst"] == {"name": "b", "ratio": 2.0} and s["over_1"] == 1, "worst model b at 2.0")
check(abs(s["geomean_vs_eager"] - 0.25) < 1e-12, "geomean against eager: (0.125 x 0.5 x 0.25)^(1/3)")
check(abs(s["mean_cold_compile_s"] - 2.0) < 1e-12 and s["max_cold_compile_s"] == 3.0,
      "mean cold compile over the models that compiled (1, 3, 2 s)")
check(suite.summarize(recs, "fp16")["models"] == 1, "summaries are per dtype")
line = suite.summary_line(s)
check("3/6 passed (50.0%)" in line and "geomean sinter/torch.compile-best 1.00x over 2" in line and
      "worst b 2.00x" in line, "summary line: " + line)

# 4. the table, in process and through --table on a results file
text = suite.table(recs, "bf16")
body = [ln for ln in text.splitlines() if ln.startswith("| ")]
check(len(body) == 8, "header, separator and one row per bf16 model")
rowa = [ln for ln in body if ln.startswith("| a |")]
check(rowa and "0.500" in rowa[0] and "| 0.50 |" in rowa[0] and "| pass |" in rowa[0], "a's row")
rowc = [ln for ln in body if ln.startswith("| c |")]
check(rowc and "FAIL" in rowc[0] and "0.100" not in rowc[0] and "| 5.0e-01 |" in rowc[0],
      "a wrong answer shows FAIL, not its time, and its error")
check("- c: cli:default: rel L2" in text and "- e: export: RuntimeError" in text, "failures listed")
res = {"format": suite.FORMAT, "runs": [], "records": []}
for r in recs:
    suite.put_record(res, r)
suite.put_record(res, rec("a", T, {"cli:default": {"median_ms": 0.6, "err": 0.01}}))
check(len(res["records"]) == 7 and [r for r in res["records"] if r["name"] == "a"][0]["ratio_tc"] == 0.6,
      "a record of the same model and dtype is replaced")
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "suite.json")
    suite.write_json(path, res)
    check(json.load(open(path))["summary"]["bf16"]["passed"] == 3, "the results file carries the summary")
    rc, out, err = run("--table", path, "--dtype", "bf16")
    check(rc == 0 and out.count("\n| ") == 8 and "| a | tv-cls | 1.0 | pass |" in out, "--table FILE")
    rc, out, err = run("--summary", path)
    check(rc == 0 and len(out.strip().splitlines()) == 2 and out.startswith("suite bf16: 3/6"), "--summary FILE")

# 5. --resume: a record counts as done when it holds every mode asked for
args = suite.parse_args(["--skip-torch-compile"])
check(suite.covers(f, args) is False, "f lacks reduce-overhead on the Python path: measured again")
check(suite.covers(a, suite.parse_args(["--skip-torch-compile", "--py-path", "off"])), "a covers an eager-only call")
check(not suite.covers(f, suite.parse_args(["--py-path", "off"])), "f lacks torch.compile's modes")
check(suite.covers(e, suite.parse_args([])), "a model that ended in an export error is not retried")

# 6. --time-budget: a model whose estimate does not fit is not started
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "s.json")
    rc, out, err = run("--no-sinter", "--time-budget", "10", "--models", "resnet18,vgg16", "--out", path)
    check(rc == 0 and "stopped before resnet18" in out and "2 models left" in out, "--time-budget stops cleanly")
    check(os.path.exists(path) and json.load(open(path))["records"] == [], "nothing recorded for models not run")

# 7. --gpus: models side by side; a worker that dies is recorded with why
with tempfile.TemporaryDirectory() as tmp:
    fake = os.path.join(tmp, "fake", "torch")
    os.makedirs(fake)
    with open(os.path.join(fake, "__init__.py"), "w") as fh:
        fh.write("raise ImportError('suite_check: no torch here')\n")
    path = os.path.join(tmp, "s.json")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(fake))
    p = subprocess.run([sys.executable, SUITE, "--no-sinter", "--gpus", "2", "--models",
                        "resnet18,squeezenet1_1,mobilenet_v2", "--out", path], capture_output=True, text=True,
                       timeout=120, env=env)
    recs = json.load(open(path))["records"] if os.path.exists(path) else []
    check(p.returncode == 0 and "GPU 0" in p.stdout and "GPU 1" in p.stdout, "--gpus 2 uses both GPUs")
    check(sorted(r["name"] for r in recs) == ["mobilenet_v2", "resnet18", "squeezenet1_1"] and
          all(r["status"] == "error" and "died (exit 1)" in r["message"] and "no torch here" in r["message"]
              for r in recs), "every worker's death recorded with its reason")

if fails:
    print("suite_check: %d checks failed" % fails)
    sys.exit(1)
print("suite_check: all checks passed")
