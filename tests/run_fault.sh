#!/usr/bin/env bash
# run_fault.sh SINTER: the fault-injection sweep (a -DSINTER_FAULT=ON build,
# ir/fault.h). For each scenario (a run reading a weights line and an
# inputs file and writing -o; the default pass pipeline; an ONNX import
# writing its pair of files) every allocation and every file operation is
# made to fail in turn, one per run. Each time sinter must end cleanly: an
# exit code 0-4 with no sanitizer report (ASan/UBSan/LSan abort otherwise),
# and no partial output: each output file is either absent (as before the
# run) or byte-identical to the fault-free run's, and no temp file is left.
set -u
sinter=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
python3 "$here/cli/mkst.py" tiny.safetensors fc.weight:F32:2,3:1,2,3,-1,-1,-1 fc.bias:F32:2:0.5,-0.5
python3 "$here/cli/mkst.py" in.safetensors x:F32:2,3:1,1,1,2,0,-1
cp "$here/cli/tiny.sir" "$root/samples/resblock.sir" "$here/fuzz/corpus_onnx/convnet.onnx" .
export SINTER_CACHE_DIR=$tmp/cache
fails=0 runs=0

# sweep NAME OUTPUTS -- command...: OUTPUTS is a comma list of files the command writes
sweep() {
	local name=$1 outs=$2
	shift 3
	local o
	IFS=, read -r -a files <<<"$outs"
	rm -f "${files[@]}"
	SINTER_FAULT_COUNT=1 "$@" >/dev/null 2>count.txt || { echo "FAIL: $name fails without faults"; cat count.txt; fails=$((fails + 1)); return; }
	mkdir -p ref && for o in "${files[@]}"; do cp "$o" "ref/$o"; done
	local na nf
	na=$(sed -n 's/^sinter-fault: \([0-9]*\) allocations, \([0-9]*\) file operations$/\1/p' count.txt)
	nf=$(sed -n 's/^sinter-fault: \([0-9]*\) allocations, \([0-9]*\) file operations$/\2/p' count.txt)
	for kind in ALLOC FILE; do
		local total=$na
		[ $kind = FILE ] && total=$nf
		for ((n = 1; n <= total; n++)); do
			rm -f "${files[@]}"
			timeout 60 env SINTER_FAULT_$kind=$n "$@" >out.txt 2>err.txt # 124: a hang
			local rc=$?
			runs=$((runs + 1))
			local bad=""
			if [ "$rc" -gt 4 ]; then
				bad="exit $rc"
			elif grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error|UndefinedBehaviorSanitizer" err.txt; then
				bad="sanitizer report"
			elif ls -A | grep -q "\.tmp-"; then
				bad="temp file left: $(ls -A | grep '\.tmp-' | head -1)"
			else
				for o in "${files[@]}"; do
					if [ -e "$o" ] && ! cmp -s "$o" "ref/$o"; then
						bad="partial or wrong $o"
					elif [ "$rc" = 0 ] && [ ! -e "$o" ]; then
						bad="exit 0 without $o"
					fi
				done
			fi
			if [ -n "$bad" ]; then
				echo "FAIL: $name, SINTER_FAULT_$kind=$n: $bad; again, with where the failure was injected:"
				rm -f "${files[@]}"
				timeout 60 env SINTER_FAULT_$kind=$n SINTER_FAULT_TRACE=1 "$@" >out.txt 2>err.txt
				sed 's/^/    /' err.txt | head -60
				fails=$((fails + 1))
				find . -name '.*tmp-*' -delete
			fi
		done
	done
	echo "$name: $na allocations and $nf file operations failed one at a time"
	rm -rf ref cache
}

sweep run-weights-inputs out.safetensors -- "$sinter" run tiny.sir --device ref --inputs in.safetensors -o out.safetensors
sweep passes-default out.safetensors -- "$sinter" run resblock.sir --device ref --shape N=1 --init random --mode default -o out.safetensors
sweep import conv.sir,conv.safetensors -- "$sinter" import convnet.onnx -o conv.sir
# NumPy files in and out (frontend/npy.c), with logging and a trace (not compared: it holds times)
python3 -c 'import struct, zipfile
h = "{\x27descr\x27: \x27<f4\x27, \x27fortran_order\x27: False, \x27shape\x27: (2, 3), }"
h += " " * (63 - (10 + len(h)) % 64) + "\n"
npy = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + struct.pack("<6f", 1, 1, 1, 2, 0, -1)
with zipfile.ZipFile("in.npz", "w", zipfile.ZIP_DEFLATED) as z: z.writestr("x.npy", npy)'
sweep npz-trace out.npz -- "$sinter" -v --trace t.json run tiny.sir --device ref --inputs in.npz -o out.npz
if [ "$fails" -ne 0 ]; then
	echo "$fails of $runs faulted runs failed"
	exit 1
fi
echo "fault: $runs faulted runs, all clean"
