#!/usr/bin/env python3
"""check_generate.py SINTER MODEL DEVICE...: sinter generate's greedy tokens,
from the KV cache kept as state (a prefill, then one token per call), equal
the tokens from running the whole sequence so far once per token with no
cache carried over (`sinter run` on the reference interpreter, the cache
starting zeroed and written by that one call): an independent check of the
state's persistence, the cache writes at each position and the decode
path. Random params (--init random --seed), a 5-token prompt, 8 new tokens.

A token may differ only where the two runs' logits tie within rounding
(the largest two within 1e-4 of each other, relative to the largest
magnitude); the check then stops, the sequences having parted legitimately,
and says so. Sampling: two runs with one --seed give the same tokens, and
--top-k 1 gives the greedy tokens whatever the temperature. numpy only."""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

PROMPT = [3, 1, 4, 1, 5]
NEW = 8
SEED = 7


def generate(sinter, model, device, *extra):
    cmd = [sinter, "generate", model, "--prompt-ids", ",".join(map(str, PROMPT)), "--max-new", str(NEW),
           "--init", "random", "--seed", str(SEED), "--device", device, "--json", *extra]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("%s failed (%d):\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    out = json.loads(r.stdout)
    assert out["ok"] and len(out["ids"]) == NEW, out
    return out


def logits_no_cache(sinter, model, seq, work):
    """The last row of the logits of one call on the whole sequence."""
    inp = os.path.join(work, "in.npz")
    out = os.path.join(work, "out.npy")
    np.savez(inp, input_ids=np.array([seq], dtype=np.int64), pos=np.array(0, dtype=np.int64))
    cmd = [sinter, "run", model, "--device", "ref", "--inputs", inp, "--init", "random", "--seed", str(SEED),
           "-o", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("%s failed (%d):\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    lg = np.load(out)
    assert lg.shape == (1, len(seq), lg.shape[-1]), lg.shape
    return lg[0, -1].astype(np.float64)


def main():
    sinter, model, devices = sys.argv[1], sys.argv[2], sys.argv[3:]
    fails = 0
    with tempfile.TemporaryDirectory() as work:
        for device in devices:
            got = generate(sinter, model, device)
            ids = got["ids"]
            seq = list(PROMPT)
            checked = 0
            for k, tok in enumerate(ids):
                lg = logits_no_cache(sinter, model, seq, work)
                want = int(np.argmax(lg))
                if tok != want:
                    top = np.sort(lg)[-2:]
                    gap = abs(lg[want] - lg[tok]) / max(1e-30, np.abs(lg).max())
                    if gap < 1e-4:
                        print("%s: token %d: %d against %d, a tie within rounding (relative gap %.2g): "
                              "stopped there" % (device, k, tok, want, gap))
                        break
                    print("FAIL %s: token %d is %d, the no-cache run's argmax is %d (logits %s, top two %s)"
                          % (device, k, tok, want, lg[[tok, want]], top))
                    fails += 1
                    break
                checked += 1
                seq.append(tok)
            print("%s: %d of %d greedy tokens equal the no-cache runs' (%s); ttft %.2f ms, %.1f tokens/s"
                  % (device, checked, NEW, ",".join(map(str, ids)), got["ttft_s"] * 1e3, got["tokens_per_s"]))
            if checked < NEW // 2:
                print("FAIL %s: fewer than half the tokens checked" % device)
                fails += 1
            # sampling: seeded, and top-k 1 is greedy
            a = generate(sinter, model, device, "--temperature", "0.8", "--top-k", "20")["ids"]
            b = generate(sinter, model, device, "--temperature", "0.8", "--top-k", "20")["ids"]
            c = generate(sinter, model, device, "--temperature", "5", "--top-k", "1")["ids"]
            if a != b:
                print("FAIL %s: two sampled runs with --seed %d differ: %s, %s" % (device, SEED, a, b))
                fails += 1
            if c != ids:
                print("FAIL %s: --top-k 1 gives %s, not the greedy %s" % (device, c, ids))
                fails += 1
    print("generate: %s" % ("all checks passed" if not fails else "%d failures" % fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
