#!/usr/bin/env python3
"""signal_cleanup.py SINTER: Ctrl-C (SIGINT) or SIGTERM while `run -o`
writes its output leaves no hidden temp file (".out.safetensors.tmp-...")
behind, and the process still ends by the signal.

The signal is sent the moment inotify reports the temp file's creation,
while the 32 MB output is being written. A round whose process finished
first (exit 0) proves nothing and is run again; a temp file left behind
is a failure."""
import ctypes
import os
import select
import signal
import struct
import subprocess
import sys
import tempfile

IN_CREATE = 0x100
MODEL = "sinter 1\n\nfunc @main(%x: f32[N]) -> (f32[N]) {\n  %y = relu(%x)\n  return %y\n}\n"


def temps(d):
    return [f for f in os.listdir(d) if ".tmp-" in f]


def one_round(sinter, d, sig):
    """True: the signal landed during the run and was checked; False: the
    process finished before it (inconclusive)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    if fd < 0 or libc.inotify_add_watch(fd, d.encode(), IN_CREATE) < 0:
        sys.exit("signal_cleanup: inotify: %s" % os.strerror(ctypes.get_errno()))
    out = os.path.join(d, "out.safetensors")
    p = subprocess.Popen([sinter, "run", os.path.join(d, "big.sir"), "--device", "ref", "--init", "random",
                          "--shape", "N=8388608", "-o", out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    sent = False
    while not sent and p.poll() is None:
        r, _, _ = select.select([fd], [], [], 0.2)
        if not r:
            continue
        buf = os.read(fd, 65536)
        i = 0
        while i < len(buf):
            _, mask, _, n = struct.unpack_from("iIII", buf, i)
            name = buf[i + 16:i + 16 + n].rstrip(b"\0").decode()
            i += 16 + n
            if mask & IN_CREATE and name.startswith(".out.safetensors.tmp-"):
                p.send_signal(sig)
                sent = True
                break
    err = p.communicate()[1].decode()
    os.close(fd)
    left = temps(d)
    if left:
        sys.exit("FAIL: %s during run -o left %s behind (exit %s)\n%s" % (sig.name, left, p.returncode, err))
    if p.returncode == 0:
        return False
    if p.returncode != -sig:
        sys.exit("FAIL: %s during run -o: exit %s, want death by the signal\n%s" % (sig.name, p.returncode, err))
    return True


def main():
    sinter = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "big.sir"), "w") as f:
            f.write(MODEL)
        for sig in (signal.SIGTERM, signal.SIGINT):
            for _ in range(5):
                if one_round(sinter, d, sig):
                    break
            else:
                sys.exit("FAIL: %s never landed while run -o was writing (5 rounds)" % sig.name)
    print("signal_cleanup: no temp file left after SIGTERM or SIGINT during run -o")


main()
