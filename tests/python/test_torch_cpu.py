#!/usr/bin/env python3
"""test_torch_cpu.py: sinter.compile(module, device=...) where torch runs,
with no GPU needed (ctest python.torch): device "cpu" and "ref" on torch
CPU tensors, and the default device (the best present that torch can
feed), each against the module's own output on fresh random inputs (fp32:
within 1e-4 relative L2). Also: the device named on the callable, the wrong
kind of tensor refused, a freed callable refused. Prints "skipped: ..." and
exits 77 (ctest's SKIP_RETURN_CODE) without torch, onnxscript or NumPy;
runs "ref" only without the cpu device. The seed is printed;
$SINTER_TEST_SEED replays a run."""
import os
import sys
import tempfile

SKIP = 77
try:
    import numpy  # noqa: F401 (sinter needs it)
    import onnxscript  # noqa: F401 (torch.onnx.export(dynamo=True) needs it)
    import torch
except ImportError as e:
    print("skipped: %s" % e)
    sys.exit(SKIP)

import sinter

fails = 0


def ok(cond, what):
    global fails
    print(("ok  " if cond else "FAIL"), what, flush=True)
    fails += not cond


def rel(a, b):
    a, b = a.double().cpu(), b.double().cpu()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


seed = int(os.environ.get("SINTER_TEST_SEED") or int.from_bytes(os.urandom(4), "little"))
print(f"seed {seed} (SINTER_TEST_SEED={seed} replays it)", flush=True)
torch.manual_seed(seed)
os.environ.setdefault("SINTER_CACHE_DIR", tempfile.mkdtemp(prefix="sinter-cache-"))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8, 10)

    def forward(self, x):
        h = torch.relu(self.conv(x))
        return torch.softmax(self.fc(h.mean((2, 3))), -1), h.amax((1, 2, 3))


net = Net().eval()
x = torch.randn(2, 3, 16, 16)
have_cpu, why = sinter.cpu_available()
if not have_cpu:
    print("no cpu device in this library (%s): ref only" % why)
for dev in ("cpu", "ref") if have_cpu else ("ref",):
    fast = sinter.compile(net, (x,), device=dev)
    ok(fast.device == dev and dev in repr(fast), "compiled for %s: %r" % (dev, fast))
    with torch.no_grad():
        x2 = torch.randn(2, 3, 16, 16)
        want = net(x2)
    got = fast(x2)
    ok(isinstance(got, tuple) and len(got) == 2 and got[0].device.type == "cpu" and got[0].shape == (2, 10),
       "%s: two CPU tensors" % dev)
    r0, r1 = rel(got[0], want[0]), rel(got[1], want[1])
    ok(r0 < 1e-4 and r1 < 1e-4, "%s: conv-relu-pool-linear-softmax: rel %.2e %.2e" % (dev, r0, r1))
    try:
        fast(x2.numpy())
        ok(False, "%s: a NumPy array is refused" % dev)
    except sinter.SinterError as e:
        ok(e.status == 1 and "torch" in str(e), "%s: a NumPy array is refused: %s" % (dev, e))
    try:
        fast(x2, x2)
        ok(False, "%s: two inputs for one are refused" % dev)
    except sinter.SinterError as e:
        ok(e.status == 2, "%s: two inputs for one are refused: %s" % (dev, e))
    if torch.cuda.is_available():
        try:
            fast(x2.cuda())
            ok(False, "%s: a CUDA tensor is refused" % dev)
        except sinter.SinterError as e:
            ok(e.status == 1 and "CPU tensor" in str(e), "%s: a CUDA tensor is refused: %s" % (dev, e))
    fast.close()
    try:
        fast(x2)
        ok(False, "%s: a closed callable is refused" % dev)
    except sinter.FreedError as e:
        ok(True, "%s: a closed callable is refused: %s" % (dev, e))

# the default: the best device present that torch can feed
from sinter._torch import torch_default_device  # noqa: E402

best = torch_default_device()
fast = sinter.compile(net, (x,))
ok(fast.device == best, "default device %s (sinter's best: %s)" % (fast.device, sinter.default_device()))
x3 = torch.randn(2, 3, 16, 16)
with torch.no_grad():
    want = net(x3)
got = fast(x3.cuda() if best == "cuda" else x3)
ok(rel(got[0], want[0]) < 1e-4 and got[0].device.type == ("cuda" if best == "cuda" else "cpu"),
   "default device %s against the module: rel %.2e" % (best, rel(got[0], want[0])))

print("python.torch: %s" % ("all checks passed" if not fails else "%d failures" % fails))
sys.exit(1 if fails else 0)
