#!/usr/bin/env python3
"""check_skip.py BUILD: the GPU tests' skip contract (ctest tests.gpu_skip).
Every ctest test labelled "gpu" must declare SKIP_RETURN_CODE 77, so that a
test with no device to run on is counted as skipped, not passed; and a GPU
test run here must either run (printing the seed of its random draws,
which $SINTER_TEST_SEED sets) or print "skipped: no CUDA device" and exit
77. Runs gpu_test_cuda_elem (the shared harness, gpu_check.c) and
test_torch.py's skip path when torch or a device is missing."""
import json
import os
import subprocess
import sys

build = sys.argv[1]
fails = 0


def check(cond, what):
    global fails
    print(("ok  " if cond else "FAIL"), what)
    fails += not cond


info = json.loads(subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"], check=True,
                                 capture_output=True, text=True).stdout)
gpu = []
for t in info["tests"]:
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    if "gpu" in (props.get("LABELS") or []):
        gpu.append(t["name"])
        check(str(props.get("SKIP_RETURN_CODE")) == "77", f"{t['name']}: SKIP_RETURN_CODE 77")
check(len(gpu) >= 2, f"{len(gpu)} tests labelled gpu")

env = dict(os.environ, SINTER_TEST_SEED="4242")
exe = os.path.join(build, "tests", "gpu_test_cuda_elem")
if os.path.exists(exe):
    r = subprocess.run([exe], capture_output=True, text=True, env=env, timeout=600)
    if "skipped: no CUDA device" in r.stdout:
        check(r.returncode == 77, f"gpu_test_cuda_elem without a device: exit {r.returncode} (want 77)")
    else:
        check("seed 4242 " in r.stdout, "gpu_test_cuda_elem prints the seed $SINTER_TEST_SEED gives")
        check(r.returncode == 0, f"gpu_test_cuda_elem with a device: exit {r.returncode}")
torch_test = os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_torch.py")
r = subprocess.run([sys.executable, "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"],
                   capture_output=True)
if r.returncode != 0:  # test_torch.py skips here: it must say so with 77
    r = subprocess.run([sys.executable, torch_test], capture_output=True, text=True, timeout=600)
    check(r.returncode == 77 and "skipped: no CUDA device" in r.stdout,
          f"test_torch.py without torch or a device: exit {r.returncode} (want 77)")
print("gpu skip contract:", "all checks passed" if not fails else f"{fails} failed")
sys.exit(1 if fails else 0)
