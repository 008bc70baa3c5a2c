#!/usr/bin/env python3
"""test_torch.py: sinter.compile on torch modules, on the GPU machine
(ctest gpu.torch; scripts/gpu-python-check). Each compiled callable is
checked against the module's own output on fresh random inputs: fp32
within 1e-4 relative L2, bf16 within 5e-2. Also: a run on a side stream
whose input is produced on that stream just before (the current torch
stream is respected), outputs as fresh CUDA tensors, errors for a CPU tensor
and a wrong shape. Prints "skipped: no CUDA device" and exits 77 (ctest's
SKIP_RETURN_CODE for it, tests/python.cmake) without torch or a GPU. The
random seed is printed; $SINTER_TEST_SEED replays a run."""
import os
import sys

SKIP = 77  # tests/gpu/gpu_check.h GPU_SKIP
try:
    import torch
except ImportError:
    print("skipped: no CUDA device (torch is not installed)")
    sys.exit(SKIP)
if not torch.cuda.is_available():
    print("skipped: no CUDA device (torch sees none)")
    sys.exit(SKIP)

import sinter

fails = 0


def ok(cond, what):
    global fails
    print(("ok  " if cond else "FAIL"), what, flush=True)
    fails += not cond


def rel(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


seed = int(os.environ.get("SINTER_TEST_SEED") or int.from_bytes(os.urandom(4), "little"))
print(f"seed {seed} (SINTER_TEST_SEED={seed} replays it)", flush=True)
torch.manual_seed(seed)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(16)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        h = torch.relu(self.bn(self.conv(x)))
        return torch.softmax(self.fc(h.mean((2, 3))), -1), h.amax((1, 2, 3))


net = Net().cuda().eval()
with torch.no_grad():
    net.bn.running_mean.uniform_(-0.5, 0.5)
    net.bn.running_var.uniform_(0.5, 2)
x = torch.randn(4, 3, 32, 32, device="cuda")
fast = sinter.compile(net, (x,))
with torch.no_grad():
    x2 = torch.randn(4, 3, 32, 32, device="cuda")
    want = net(x2)
    got = fast(x2)
ok(isinstance(got, tuple) and len(got) == 2 and got[0].is_cuda and got[0].shape == (4, 10), "two CUDA outputs")
ok(rel(got[0], want[0]) < 1e-4 and rel(got[1], want[1]) < 1e-4,
   "fp32 conv-bn-relu-pool-linear-softmax: rel %.2e %.2e" % (rel(got[0], want[0]), rel(got[1], want[1])))

# the current stream: the input is written on s right before the call
s = torch.cuda.Stream()
with torch.no_grad(), torch.cuda.stream(s):
    x3 = torch.empty(4, 3, 32, 32, device="cuda")
    torch.cuda._sleep(20_000_000)  # keeps s busy, so a run ignoring s would read garbage
    x3.copy_(x2 * 2)
    got3 = fast(x3)
    want3 = net(x3)
s.synchronize()
ok(rel(got3[0], want3[0]) < 1e-4, "on a side stream after a delayed write: rel %.2e" % rel(got3[0], want3[0]))

mlp = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 256)).cuda().eval()
xm = torch.randn(8, 256, device="cuda")
for prec, tol in (("fp32", 1e-4), ("bf16", 5e-2)):
    f = sinter.compile(mlp, (xm,), mode="reduce-overhead", precision=prec)
    with torch.no_grad():
        xi = torch.randn(8, 256, device="cuda")
        r = rel(f(xi), mlp(xi))
        r2 = rel(f(xi + 1), mlp(xi + 1))  # a replay with new values
    ok(r < tol and r2 < tol, "mlp reduce-overhead %s: rel %.2e, %.2e" % (prec, r, r2))

try:
    fast(x2.cpu())
    ok(False, "a CPU tensor is refused")
except sinter.SinterError as e:
    ok(e.status == 1, "a CPU tensor is refused: %s" % e)
try:
    fast(torch.randn(2, 3, 32, 32, device="cuda"))
    ok(False, "a wrong shape is refused")
except sinter.SinterError as e:
    ok(e.status == 1 and "shape" in str(e), "a wrong shape is refused: %s" % e)

print("gpu.torch: %s" % ("all checks passed" if not fails else "%d failures" % fails))
sys.exit(1 if fails else 0)
