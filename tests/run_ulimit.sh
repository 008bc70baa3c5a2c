#!/usr/bin/env bash
# run_ulimit.sh SINTER [--sanitized]: no command hangs when the address
# space is short (issue 31). Linked with OpenBLAS, sinter started its
# worker threads in every process; under `ulimit -v 300000` each retried
# its 128 MiB buffer for ever and the process hung at exit, --help
# included. Now OpenBLAS is opened only by a cpu plan that calls it, with
# one thread, after checking that its buffers fit (runtime/cpu_blas.c).
#  - always: `sinter --help` and a reference run do not load OpenBLAS at
#    all (LD_DEBUG=libs), and a cpu run of a product does;
#  - not under a sanitizer (ASan and TSan reserve terabytes of address
#    space, so ulimit -v cannot apply): --help, and a cpu run of a product
#    on 1 and 2 threads, under `ulimit -v 300000` end within the timeout,
#    with success or a clean "address space" error (exit 3), never a hang.
set -u
sinter=$(realpath "$1")
sanitized=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
# a product of more than 256 rows: on OpenBLAS (runtime/cpu_gemm.c)
cat >mm.sir <<'SIR'
sinter 1

func @main(%x: f32[300,64], %w: f32[64,64]) -> (f32[300,64]) {
  %y = matmul(%x, %w)
  %z = relu(%y)
  return %z
}
SIR
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

loads_blas() { LD_DEBUG=libs "$@" 2>&1 >/dev/null | grep -q 'calling init: .*libopenblas'; }
loads_blas "$sinter" --help && fail "sinter --help loads OpenBLAS"
loads_blas "$sinter" run mm.sir --device ref --init random && fail "a ref run loads OpenBLAS"
loads_blas "$sinter" run mm.sir --device cpu --init random --cache-dir c0 || fail "a cpu run of a product does not load OpenBLAS"

if [ "$sanitized" != --sanitized ]; then
	# under ulimit: rc 0, or 3 with the address-space message; 124 is a hang
	limited() { timeout 60 bash -c 'ulimit -v 300000; exec "$@"' _ "$@" >out.txt 2>err.txt; }
	limited "$sinter" --help
	rc=$?
	[ $rc = 0 ] || fail "sinter --help under ulimit -v 300000: exit $rc $(cat err.txt)"
	for t in 1 2; do
		limited "$sinter" run mm.sir --device cpu --init random --threads $t --cache-dir c$t
		rc=$?
		if [ $rc = 3 ]; then
			grep -q "address space" err.txt || fail "cpu run, $t threads, under ulimit: exit 3 but $(cat err.txt)"
		elif [ $rc != 0 ]; then
			fail "cpu run, $t threads, under ulimit -v 300000: exit $rc$([ $rc = 124 ] && echo ' (a hang)') $(cat err.txt)"
		fi
		echo "cpu run, $t threads, ulimit -v 300000: exit $rc"
	done
fi
[ $fails = 0 ] && echo "ulimit: ok"
exit $((fails > 0))
