#!/usr/bin/env bash
# run_fault.sh SINTER [--cuda]: the fault-injection sweep (a -DSINTER_FAULT=ON
# build, ir/fault.h). Each scenario is a whole run of sinter; a first run
# without faults counts its allocations, file operations, CUDA driver calls
# and NVRTC calls, then every one of them of the kinds the scenario sweeps
# is made to fail in turn, one per run. Each time sinter must end cleanly:
# with a message on stderr and the exit code of the failure's category (4
# for an allocation, 3 for a file operation, a CUDA or an NVRTC call), or
# 0 (the failure handled), no sanitizer report (ASan/UBSan/LSan), no hang (60 s), no
# partial output (each output either absent or byte-identical to the
# fault-free run's), no temp file left, and every input as it was.
#
# Without --cuda (CI, no GPU): ref runs, the default pass pipeline, an ONNX
# import, and a package compiled by NVRTC where NVRTC is installed. With
# --cuda (the GPU machine, scripts/gpu-fault): cuda runs of a small model
# and of samples, cold (NVRTC compiles) and warm (plan cache), and a
# package run, sweeping CUDA and NVRTC calls, and allocations and file
# operations where SINTER_FAULT_KINDS_ALL=1.
#
# SINTER_FAULT_JOBS runs that many at once (default: the number of
# cores); SINTER_FAULT_DEADLINE=S stops starting runs S seconds after the
# start, SINTER_FAULT_SWEEP_SECONDS=S after each sweep's start (the GPU
# machine's time is counted), and the summary says how far each sweep got;
# SINTER_FAULT_TIMEOUT (60 s) is a hang.
set -u
sinter=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mode=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
jobs=${SINTER_FAULT_JOBS:-$(nproc)}
deadline=${SINTER_FAULT_DEADLINE:-0}
FAULT_STOP_AT=0
[ "$deadline" -gt 0 ] && FAULT_STOP_AT=$(($(date +%s) + deadline))
export FAULT_STOP_AT

# the inputs every scenario may use, in $tmp/src
mkdir src
python3 "$here/cli/mkst.py" src/tiny.safetensors fc.weight:F32:2,3:1,2,3,-1,-1,-1 fc.bias:F32:2:0.5,-0.5
python3 "$here/cli/mkst.py" src/in.safetensors x:F32:2,3:1,1,1,2,0,-1
cp "$here/cli/tiny.sir" "$root/samples/resblock.sir" "$root/samples/mlp.sir" "$here/fuzz/corpus_onnx/convnet.onnx" src/
# a NumPy .npz input (frontend/npy.c), deflated
(cd src && python3 -c 'import struct, zipfile
h = "{\x27descr\x27: \x27<f4\x27, \x27fortran_order\x27: False, \x27shape\x27: (2, 3), }"
h += " " * (63 - (10 + len(h)) % 64) + "\n"
npy = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + struct.pack("<6f", 1, 1, 1, 2, 0, -1)
with zipfile.ZipFile("in.npz", "w", zipfile.ZIP_DEFLATED) as z: z.writestr("x.npy", npy)')
if [ "$mode" = --cuda ]; then
	# CUDA's driver maps memory where ASan keeps its shadow gap; its own
	# libraries' allocations at exit are not sinter's leaks
	printf 'leak:libcuda.so\nleak:libnvrtc\nleak:libcublas\nleak:libnvJitLink\n' >"$tmp/lsan.supp"
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}protect_shadow_gap=0"
	export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$tmp/lsan.supp"
	# a package of tiny.sir (N=2), for the package run
	"$sinter" compile src/tiny.sir --shape N=2 --target sm_90 --no-cache -o src/p.sinterpkg >/dev/null ||
		{ echo "FAIL: cannot compile the package"; exit 1; }
fi
fails=0 runs=0
: >summary.txt

# same_output FILE REF W W0: FILE, written in folder W, is REF written in W0. Plan
# files carry cubins, in whose line tables NVRTC writes the working directory:
# compared with W's name replaced by W0's (as long), and the header's checksum
# of the tables and cubins (bytes 24-31) left out
same_output() {
	cmp -s "$1" "$2" && return 0
	python3 - "$@" <<-'EOF'
		import sys
		a, b = (open(p, "rb").read() for p in sys.argv[1:3])
		w, w0 = (p.encode() for p in sys.argv[3:5])
		a = a.replace(w, w0)
		same = a[:8] == b"SINTPLAN" and len(a) == len(b) and a[:24] == b[:24] and a[32:] == b[32:]
		sys.exit(0 if same else 1)
	EOF
}
export -f same_output

# want_code KIND: the exit code of a failure of that kind (docs/CLI.md): an
# allocation that fails is internal (4), a file operation, a CUDA or an NVRTC
# call that fails is the environment (3)
want_code() {
	case $1 in ALLOC) echo 4 ;; *) echo 3 ;; esac
}
export -f want_code

# one DIR OUTS KIND N CMD...: one faulted run in a fresh copy of src (DIR/w-KIND-N),
# its cache a copy of DIR/cache0 when there is one; prints "ok" or "FAIL: why"
one() {
	local dir=$1 outs=$2 kind=$3 n=$4
	shift 4
	if [ "$FAULT_STOP_AT" -gt 0 ] && [ "$(date +%s)" -ge "$FAULT_STOP_AT" ]; then
		echo "skip $kind=$n"
		return
	fi
	# the same length as the fault-free run's folder (w-REF__-000000): NVRTC writes the
	# working directory into the cubins' line tables, and outputs are compared up to it
	local w o f
	w=$dir/w-$(printf '%-5s' "$kind" | tr ' ' _)-$(printf '%06d' "$n")
	rm -rf "$w" && cp -r src "$w" || { echo "FAIL: $kind=$n: cannot copy the inputs"; return; }
	[ -d "$dir/cache0" ] && cp -r "$dir/cache0" "$w/cache"
	cd "$w" || return
	SINTER_CACHE_DIR=$w/cache timeout "${SINTER_FAULT_TIMEOUT:-60}" env "SINTER_FAULT_$kind=$n" "$@" >out.txt 2>err.txt # 124: a hang
	local rc=$? bad=""
	IFS=, read -r -a files <<<"$outs"
	if [ "$rc" -gt 4 ]; then
		bad="exit $rc"
	elif grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error|UndefinedBehaviorSanitizer" err.txt; then
		bad="sanitizer report"
	elif [ "$rc" != 0 ] && ! grep -q '[a-z]' err.txt; then
		bad="exit $rc without a message"
	elif [ "$rc" != 0 ] && [ "$rc" != "$(want_code "$kind")" ]; then
		bad="exit $rc: a failed $kind call is exit $(want_code "$kind") (docs/CLI.md)"
	elif [ -n "$(find . -name '*.tmp-*' | head -1)" ]; then
		bad="temp file left: $(find . -name '*.tmp-*' | head -1)"
	else
		for f in "$dir"/../src/*; do
			cmp -s "$f" "$(basename "$f")" || bad="input $(basename "$f") changed"
		done
		for o in "${files[@]}"; do
			if [ -e "$o" ] && ! same_output "$o" "$dir/ref/$o" "$w" "$dir/w-REF__-000000"; then
				bad="partial or wrong $o"
			elif [ "$rc" = 0 ] && [ ! -e "$o" ]; then
				bad="exit 0 without $o"
			fi
		done
	fi
	if [ -n "$bad" ]; then
		printf 'FAIL: SINTER_FAULT_%s=%s: exit %s, %s; stderr:\n%s\n' "$kind" "$n" "$rc" "$bad" \
			"$(sed 's/^/    /' err.txt | head -40)"
	else
		echo "ok $kind=$n exit $rc"
	fi
	cd "$dir" && rm -rf "$w"
}
export -f one

# sweep NAME OUTPUTS KINDS [--warm] -- command...: OUTPUTS and KINDS are comma lists
# (outputs the command writes; ALLOC FILE CUDA NVRTC); --warm: every run starts from the
# cache the fault-free run filled (a warm start), else from an empty one
sweep() {
	local name=$1 outs=$2 kinds=$3 warm=""
	shift 3
	[ "$1" = --warm ] && { warm=1; shift; }
	shift
	local dir=$tmp/$name
	mkdir -p "$dir/ref"
	# the fault-free run, twice when warm (the first fills the cache)
	local w0=$dir/w-REF__-000000
	rm -rf "$w0" && cp -r src "$w0" && cd "$w0" || return
	if [ -n "$warm" ]; then
		SINTER_CACHE_DIR=$w0/cache "$@" >/dev/null 2>count.txt || true
		IFS=, read -r -a files <<<"$outs"
		rm -f "${files[@]}"
		cp -r cache "$dir/cache0"
	fi
	rm -rf cache
	[ -d "$dir/cache0" ] && cp -r "$dir/cache0" cache
	if ! SINTER_CACHE_DIR=$w0/cache SINTER_FAULT_COUNT=1 "$@" >/dev/null 2>count.txt; then
		echo "FAIL: $name fails without faults:"; sed 's/^/    /' count.txt
		fails=$((fails + 1))
		cd "$tmp"
		return
	fi
	IFS=, read -r -a files <<<"$outs"
	for o in "${files[@]}"; do cp "$o" "$dir/ref/$o"; done
	local counts
	counts=$(sed -n 's/^sinter-fault: \([0-9]*\) allocations, \([0-9]*\) file operations, \([0-9]*\) CUDA calls, \([0-9]*\) NVRTC calls$/ALLOC=\1 FILE=\2 CUDA=\3 NVRTC=\4/p' count.txt)
	cd "$tmp" && rm -rf "$w0"
	local kind total list=$dir/list
	: >"$list"
	for kind in ${kinds//,/ }; do
		total=$(echo "$counts" | tr ' ' '\n' | sed -n "s/^$kind=//p")
		for ((n = 1; n <= ${total:-0}; n++)); do echo "$kind $n"; done >>"$list"
	done
	local planned
	planned=$(wc -l <"$list")
	if [ -n "${SINTER_FAULT_SWEEP_SECONDS:-}" ]; then
		FAULT_STOP_AT=$(($(date +%s) + SINTER_FAULT_SWEEP_SECONDS))
		export FAULT_STOP_AT
	fi
	# the runs, $jobs at a time (xargs appends each line's KIND N to the
	# command; the wrapper moves them in front); past the deadline the rest
	# are skipped
	xargs -P "$jobs" -L 1 bash -c 'a=("$@"); k=${a[-2]}; n=${a[-1]}; one "$0" "${a[0]}" "$k" "$n" "${a[@]:1:${#a[@]}-3}"' \
		"$dir" "$outs" "$@" <"$list" >"$dir/results.txt" 2>&1
	local done_ bad skipped
	done_=$(grep -c '^ok ' "$dir/results.txt")
	skipped=$(grep -c '^skip ' "$dir/results.txt")
	bad=$(grep -c '^FAIL' "$dir/results.txt")
	awk '/^FAIL/ { on = 1; print; next } /^    / && on { print; next } { on = 0 }' "$dir/results.txt" | head -200
	runs=$((runs + done_ + bad))
	fails=$((fails + bad))
	local rcs
	rcs=$(sed -n 's/^ok .* exit \([0-9]*\)$/\1/p' "$dir/results.txt" | sort | uniq -c | awk '{printf "%s exit %s, ", $1, $2}')
	echo "$name: $counts; swept $kinds: $((done_ + bad)) of $planned runs, $bad failed (${rcs%, })$([ "$skipped" -gt 0 ] && echo "; $skipped skipped: past the deadline")" | tee -a summary.txt
}

if [ "$mode" = --cuda ]; then
	kinds=CUDA,NVRTC
	[ "${SINTER_FAULT_KINDS_ALL:-0}" = 1 ] && kinds=CUDA,NVRTC,ALLOC,FILE
	sweep cuda-cold out.safetensors "$kinds" -- "$sinter" run tiny.sir --device cuda --inputs in.safetensors -o out.safetensors
	sweep cuda-warm out.safetensors "$kinds" --warm -- "$sinter" run tiny.sir --device cuda --inputs in.safetensors -o out.safetensors
	sweep cuda-mlp out.safetensors CUDA --warm -- "$sinter" run mlp.sir --device cuda --shape N=2 --init random -o out.safetensors
	sweep cuda-resblock out.safetensors CUDA --warm -- "$sinter" run resblock.sir --device cuda --shape N=1 --init random --mode reduce-overhead -o out.safetensors
	sweep cuda-package out.safetensors CUDA -- "$sinter" run p.sinterpkg --inputs in.safetensors -o out.safetensors
else
	sweep run-weights-inputs out.safetensors ALLOC,FILE -- "$sinter" run tiny.sir --device ref --inputs in.safetensors -o out.safetensors
	sweep passes-default out.safetensors ALLOC,FILE -- "$sinter" run resblock.sir --device ref --shape N=1 --init random --mode default -o out.safetensors
	# the cpu device where the build has it: lowering, LLVM (its own
	# allocations are not faulted), the object cache, the runtime
	if SINTER_CACHE_DIR="$tmp/cpu-probe" "$sinter" run src/tiny.sir --device cpu --shape N=1 --init random >/dev/null 2>&1; then
		sweep cpu-tiny out.safetensors ALLOC,FILE -- "$sinter" run tiny.sir --device cpu --inputs in.safetensors -o out.safetensors
	fi
	sweep import conv.sir,conv.safetensors ALLOC,FILE -- "$sinter" import convnet.onnx -o conv.sir
	# NumPy files in and out, with logging and a trace (not compared: it holds times)
	sweep npz-trace out.npz ALLOC,FILE -- "$sinter" -v --trace t.json run tiny.sir --device ref --inputs in.npz -o out.npz
	if [ -e /usr/local/cuda/lib64/libnvrtc.so ] || ldconfig -p 2>/dev/null | grep -q libnvrtc; then
		sweep compile-package t.sinterpkg ALLOC,FILE,NVRTC -- "$sinter" compile tiny.sir --shape N=4 --target sm_90 --init random --seed 2 --no-cache -o t.sinterpkg
	fi
fi
echo "== summary"
cat summary.txt
if [ "$fails" -ne 0 ]; then
	echo "$fails of $runs faulted runs failed"
	exit 1
fi
echo "fault: $runs faulted runs, all clean"
