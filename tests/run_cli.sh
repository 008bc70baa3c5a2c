#!/usr/bin/env bash
# run_cli.sh SINTER: the sinter command's behaviour as a user sees it: exit
# codes, messages, weights and inputs files, outputs checked against values
# worked out by hand. Runs in a scratch directory; prints every failure.
set -u
sinter=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$here/cli/tiny.sir" "$tmp/"
cd "$tmp"
mkst() { python3 "$here/cli/mkst.py" "$@"; }
fails=0
# expect CODE STDERR_PATTERN -- command...: exit code and a grep -E pattern on stderr
expect() {
	local code=$1 pat=$2
	shift 3
	"$@" >out.txt 2>err.txt
	local rc=$?
	if [ "$rc" != "$code" ] || { [ -n "$pat" ] && ! grep -qE -- "$pat" err.txt; }; then
		echo "FAIL: $* -> exit $rc (want $code), stderr:"; sed 's/^/    /' err.txt
		fails=$((fails + 1))
	fi
}
# expect_out PATTERN: the last command's stdout matches
expect_out() {
	if ! grep -qE -- "$1" out.txt; then
		echo "FAIL: stdout does not match '$1':"; sed 's/^/    /' out.txt
		fails=$((fails + 1))
	fi
}

# usage errors: exit 2
expect 2 "usage: sinter COMMAND" -- "$sinter"
expect 2 "unknown command 'frob'" -- "$sinter" frob
expect 2 "unknown option '--frob'" -- "$sinter" check tiny.sir --frob
expect 2 "no model file given" -- "$sinter" check
expect 2 "unknown device 'tpu'" -- "$sinter" run tiny.sir --device tpu
expect 2 "--shape wants SYM=VALUE" -- "$sinter" check tiny.sir --shape N
expect 2 "symbol M is bound but" -- "$sinter" check tiny.sir --shape M=3
expect 2 "symbol N is not bound" -- "$sinter" run tiny.sir --init random
expect 2 "--init takes 'random'" -- "$sinter" run tiny.sir --shape N=1 --init zeros
for c in check print hash run compile bench; do
	"$sinter" $c --help >out.txt 2>&1 || { echo "FAIL: $c --help exits nonzero"; fails=$((fails + 1)); }
	expect_out "usage: sinter $c"
done

# bad input: exit 1
expect 1 "cannot read nope.sir" -- "$sinter" check nope.sir
mkst in1.safetensors x:F32:1,3:1
expect 1 "cannot open empty.safetensors" -- "$sinter" run tiny.sir --weights empty.safetensors --inputs in1.safetensors
mkst empty.safetensors other:F32:1:1
expect 1 "tiny.sir:6:8: error: param \"fc.weight\" \(f32\[2,3\]\) is not in empty.safetensors" -- "$sinter" run tiny.sir --shape N=1 --weights empty.safetensors --inputs empty.safetensors
expect 1 "cannot open tiny.safetensors|tiny.safetensors: " -- "$sinter" run tiny.sir --shape N=1 --inputs empty.safetensors
mkst wrongshape.safetensors fc.weight:F32:3,2:1 fc.bias:F32:2:0
expect 2 "exclude each other" -- "$sinter" run tiny.sir --shape N=1 --weights wrongshape.safetensors --init random
expect 1 "tiny.sir:6:8: error: param \"fc.weight\" is f32\[3,2\] in wrongshape.safetensors, the model declares f32\[2,3\]" -- "$sinter" run tiny.sir --weights wrongshape.safetensors --inputs in1.safetensors
cp "$here/st/truncated.safetensors" trunc.safetensors
expect 1 "trunc.safetensors: tensor \"weight\": data_offsets \[0, 24\] exceed the data buffer of 10 bytes" -- "$sinter" run tiny.sir --shape N=1 --inputs trunc.safetensors --init random
head -c 5 trunc.safetensors >short.safetensors
expect 1 "short.safetensors" -- "$sinter" run tiny.sir --inputs short.safetensors --init random

# the right answer: w = [[1,2,3],[-1,-1,-1]], b = [0.5,-0.5]; x = [[1,1,1],[2,0,-1]]
# h = [[6.5,-3.5],[-0.5,-1.5]] -> relu*2 = [[13,0],[0,0]]
mkst tiny.safetensors fc.weight:F32:2,3:1,2,3,-1,-1,-1 fc.bias:F32:2:0.5,-0.5
mkst in.safetensors x:F32:2,3:1,1,1,2,0,-1
expect 0 "" -- "$sinter" run tiny.sir --device ref --inputs in.safetensors -o out.safetensors
expect_out "%y: f32\[2,2\]  mean 3.25  abs-max 13  first: 13 0 0 0"
python3 - <<'PY' || { echo "FAIL: out.safetensors"; fails=$((fails + 1)); }
import json, struct
raw = open("out.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n])
assert h["y"]["dtype"] == "F32" and h["y"]["shape"] == [2, 2], h
b, e = h["y"]["data_offsets"]
assert struct.unpack("<4f", raw[8 + n + b:8 + n + e]) == (13.0, 0.0, 0.0, 0.0)
PY
# N was bound from the inputs; an input of the wrong dtype is refused
mkst in64.safetensors x:F64:2,3:1
expect 0 "" -- "$sinter" run tiny.sir --device ref --inputs in64.safetensors
mkst ini.safetensors x:I64:2,3:1
expect 1 "input %x: got i64\[2,3\], the model takes f32\[2,3\]" -- "$sinter" run tiny.sir --device ref --inputs ini.safetensors
mkst nox.safetensors z:F32:2,3:1
expect 1 "no tensor for input %x" -- "$sinter" run tiny.sir --device ref --shape N=2 --inputs nox.safetensors

# --init random is deterministic and depends on the seed
"$sinter" run tiny.sir --device ref --shape N=4 --init random --seed 3 -o a.safetensors >/dev/null 2>&1
"$sinter" run tiny.sir --device ref --shape N=4 --init random --seed 3 -o b.safetensors >/dev/null 2>&1
"$sinter" run tiny.sir --device ref --shape N=4 --init random --seed 4 -o c.safetensors >/dev/null 2>&1
cmp -s a.safetensors b.safetensors || { echo "FAIL: --init random is not deterministic"; fails=$((fails + 1)); }
cmp -s a.safetensors c.safetensors && { echo "FAIL: --seed does not change the result"; fails=$((fails + 1)); }

# print and hash: value names do not change the hash, an attribute does
"$sinter" hash tiny.sir >h1.txt
sed 's/%h/%hidden/g' tiny.sir >renamed.sir
"$sinter" hash renamed.sir >h2.txt
sed 's/relu(%h)/gelu(%h)/' tiny.sir >other.sir
"$sinter" hash other.sir >h3.txt
cmp -s h1.txt h2.txt || { echo "FAIL: renaming a value changed the hash"; fails=$((fails + 1)); }
cmp -s h1.txt h3.txt && { echo "FAIL: changing an op kept the hash"; fails=$((fails + 1)); }
grep -qE "^[0-9a-f]{32}$" h1.txt || { echo "FAIL: hash format"; fails=$((fails + 1)); }

# devices this build or machine lacks: exit 3
if ! nvidia-smi >/dev/null 2>&1; then
	expect 3 "" -- "$sinter" run tiny.sir --device cuda --shape N=1 --init random
	expect 3 "pass --target" -- "$sinter" compile tiny.sir --shape N=1
fi
# the cpu device: runs where the build has it (else exit 3 saying so); what
# it does not take is a usage error
if "$sinter" run tiny.sir --device cpu --shape N=1 --init random >out.txt 2>err.txt; then
	expect_out "ran tiny.sir on cpu"
	expect 2 "precision fp16 is not built for it" -- "$sinter" run tiny.sir --device cpu --shape N=1 --init random --precision fp16
	expect 0 "" -- "$sinter" run tiny.sir --device cpu --shape N=1 --init random --precision bf16
	expect_out "ran tiny.sir on cpu"
	expect 2 "max-autotune has no cpu" -- "$sinter" run tiny.sir --device cpu --shape N=1 --init random --mode max-autotune
	expect 2 "--threads wants a count" -- "$sinter" run tiny.sir --device cpu --threads 0
	expect 0 "" -- "$sinter" print tiny.sir --shape N=1 --device cpu
	expect_out "on the reference interpreter"
	# cpu packages: the plan, its compiled objects and its weights in one
	# file; run with no cache and no LLVM. y = relu(x w^T + b) * 2 with
	# w = [[1,2,3],[-1,0,1]], b = [0.5,-0.5], x = [[1,1,1],[2,0,-1]]:
	# [[13,0],[0,0]] by hand
	mkst pw.safetensors fc.weight:F32:2,3:1,2,3,-1,0,1 fc.bias:F32:2:0.5,-0.5
	mkst px.safetensors x:F32:2,3:1,1,1,2,0,-1
	for p in fp32 bf16; do
		expect 0 "" -- "$sinter" compile tiny.sir --shape N=2 --device cpu --precision $p --weights pw.safetensors -o cpu.$p.sinterpkg --cache-dir cpucache
		expect_out "package written to cpu.$p.sinterpkg"
		expect 0 "" -- "$sinter" run cpu.$p.sinterpkg --inputs px.safetensors -o pkg.$p.safetensors --cache-dir nocache
		expect_out "first: 13 0 0 0"
		expect_out "ran cpu.$p.sinterpkg on cpu"
		expect 0 "" -- "$sinter" run cpu.$p.sinterpkg --inputs px.safetensors --json
		python3 -c 'import json,sys; d=json.load(open("out.txt")); o=d["outputs"][0]; sys.exit(not (d["ok"] and d["package"] and d["device"] == "cpu" and o["shape"] == [2, 2] and o["first"] == [13, 0, 0, 0]))' ||
			{ echo "FAIL: run PKG --json:"; sed 's/^/    /' out.txt; fails=$((fails + 1)); }
		[ ! -e nocache ] || { echo "FAIL: a cpu package run touched a cache"; fails=$((fails + 1)); }
		expect 0 "" -- "$sinter" run tiny.sir --shape N=2 --device cpu --precision $p --weights pw.safetensors --inputs px.safetensors -o plan.$p.safetensors --cache-dir cpucache
		cmp -s pkg.$p.safetensors plan.$p.safetensors || { echo "FAIL: the $p package's output differs from the compiled plan's"; fails=$((fails + 1)); }
	done
	expect 2 "runs on cpu, not on cuda" -- "$sinter" run cpu.fp32.sinterpkg --device cuda
	expect 2 "a package runs on cuda or cpu" -- "$sinter" run cpu.fp32.sinterpkg --device ref
	expect 2 "no --target or --dump-dir" -- "$sinter" compile tiny.sir --shape N=2 --device cpu --target sm_90
	for n in 0 5 63 64 4096 $(($(stat -c %s cpu.fp32.sinterpkg) - 1)); do
		head -c "$n" cpu.fp32.sinterpkg >trunc.sinterpkg
		expect 1 "trunc.sinterpkg: (truncated|not a sinter)" -- "$sinter" run trunc.sinterpkg --device cpu
	done
	cp cpu.fp32.sinterpkg flip.sinterpkg
	printf '\x55' | dd of=flip.sinterpkg bs=1 seek=300 conv=notrunc 2>/dev/null
	expect 1 "flip.sinterpkg: checksum mismatch" -- "$sinter" run flip.sinterpkg
else
	expect 3 "no cpu backend" -- "$sinter" run tiny.sir --device cpu --shape N=1 --init random
fi

# modes: the library decides what they mean; max-autotune times kernels on
# the GPU, so a compile without one refuses it, and its options are checked
expect 2 "max-autotune times kernels on the GPU" -- "$sinter" compile tiny.sir --target sm_90 --mode max-autotune --shape N=1 --no-cache
expect 2 "--tune-budget wants seconds > 0" -- "$sinter" run tiny.sir --mode max-autotune --tune-budget -3 --shape N=1 --init random
expect 2 "--tune-progress takes" -- "$sinter" run tiny.sir --mode max-autotune --tune-progress loud --shape N=1 --init random
expect 2 "unknown mode 'turbo'" -- "$sinter" compile tiny.sir --target sm_90 --mode turbo --shape N=1 --no-cache

# AOT packages: written without a GPU (NVRTC only), refused to run without one
if command -v nvcc >/dev/null 2>&1 || [ -e /usr/local/cuda/lib64/libnvrtc.so ]; then
	expect 0 "" -- "$sinter" compile tiny.sir --shape N=4 --target sm_90 --init random --seed 2 -o tiny.sinterpkg --cache-dir cache
	expect_out "package written to tiny.sinterpkg"
	[ -s tiny.sinterpkg ] || { echo "FAIL: no package written"; fails=$((fails + 1)); }
	if ! nvidia-smi >/dev/null 2>&1; then
		expect 3 "" -- "$sinter" run tiny.sinterpkg
	fi
	expect 2 "a package runs on cuda or cpu" -- "$sinter" run tiny.sinterpkg --device ref
	expect 2 "a CUDA package .*: it runs on cuda, not on cpu" -- "$sinter" run tiny.sinterpkg --device cpu
	printf 'not a plan' >bad.sinterpkg
	expect 1 "bad.sinterpkg: not a sinter plan" -- "$sinter" run bad.sinterpkg
	# a truncated package (read through checked copies, never mapped): a clean error, any length
	for n in 0 63 64 4096 $(($(stat -c %s tiny.sinterpkg) - 1)); do
		head -c "$n" tiny.sinterpkg >trunc.sinterpkg
		expect 1 "trunc.sinterpkg" -- "$sinter" run trunc.sinterpkg
	done
	expect 2 "-o writes a package" -- "$sinter" compile tiny.sir --shape N=4 --target sm_90 --init random -o tiny.bin
	# a package path that is a symlink (here to the model) is refused before any work
	cp tiny.sir keep.sir
	ln -sf tiny.sir link.sinterpkg
	expect 1 "link.sinterpkg" -- "$sinter" compile tiny.sir --shape N=4 --target sm_90 --init random -o link.sinterpkg
	cmp -s tiny.sir keep.sir || { echo "FAIL: compile -o through a symlink changed the model"; fails=$((fails + 1)); }
	SINTER_NVRTC_LIBRARY=/nonexistent/libnvrtc.so "$sinter" compile tiny.sir --shape N=4 --target sm_90 --no-cache >out.txt 2>err.txt
	rc=$?
	if [ $rc != 3 ] || ! grep -q "SINTER_NVRTC_LIBRARY" err.txt; then
		echo "FAIL: compile without NVRTC -> exit $rc (want 3)"; sed 's/^/    /' err.txt; fails=$((fails + 1))
	fi
	"$sinter" cache stats --dir cache >out.txt 2>&1
	expect_out "kernel cache cache: [1-9][0-9]* entries"
	expect_out "plan cache cache: 0 entries"
fi
# issue 16: nothing the user gave is lost, no input hangs, exit codes by category
expect 1 "cannot read /dev/zero: not a regular file" -- timeout 10 "$sinter" check /dev/zero
mkfifo fifo.sir
expect 1 "not a regular file" -- timeout 10 "$sinter" check fifo.sir
expect 1 "not a regular file" -- timeout 10 "$sinter" run tiny.sir --device ref --weights fifo.sir --inputs in.safetensors
rm -f fifo.sir
# -o onto the model, its weights (by the weights line or --weights) or the inputs: refused before any work
for victim in tiny.sir tiny.safetensors in.safetensors; do
	cp "$victim" keep.bin
	expect 1 "same file as the input" -- "$sinter" run tiny.sir --device ref --inputs in.safetensors -o "$victim"
	cmp -s keep.bin "$victim" || { echo "FAIL: run -o $victim changed it"; fails=$((fails + 1)); }
done
ln tiny.safetensors hardlink.safetensors
expect 1 "same file as the input" -- "$sinter" run tiny.sir --device ref --inputs in.safetensors -o hardlink.safetensors
expect 1 "same file as the input" -- "$sinter" run tiny.sir --device ref --weights tiny.safetensors --inputs in.safetensors -o hardlink.safetensors
# -o into a directory or a missing folder: the same category, checked before the run
mkdir -p outdir
expect 1 "cannot write outdir: it is a directory" -- "$sinter" run tiny.sir --device ref --inputs in.safetensors -o outdir
expect 1 "cannot write nofolder/o.safetensors: folder nofolder" -- "$sinter" run tiny.sir --device ref --inputs in.safetensors -o nofolder/o.safetensors
grep -q "^ran " out.txt && { echo "FAIL: -o into a missing folder ran the model first"; fails=$((fails + 1)); }
if [ "$(id -u)" != 0 ]; then
	mkdir -p rodir && chmod 555 rodir
	expect 3 "cannot write rodir/o.safetensors" -- "$sinter" run tiny.sir --device ref --inputs in.safetensors -o rodir/o.safetensors
fi
expect 1 "--dump-dir nofolder/d: No such file or directory" -- "$sinter" print tiny.sir --passes canonicalize --dump-dir nofolder/d
expect 1 "--dump-dir tiny.sir: Not a directory" -- "$sinter" print tiny.sir --passes canonicalize --dump-dir tiny.sir
expect 0 "" -- "$sinter" print tiny.sir --passes canonicalize --dump-dir newdump
[ -f newdump/00-input.sir ] || { echo "FAIL: --dump-dir newdump was not made and filled"; fails=$((fails + 1)); }
# a symlink planted in the dump folder is replaced, never written through
printf 'victim' >victim.txt
ln -sf "$PWD/victim.txt" newdump/00-input.sir
expect 0 "" -- "$sinter" print tiny.sir --passes canonicalize --dump-dir newdump
[ "$(cat victim.txt)" = victim ] && [ ! -L newdump/00-input.sir ] || { echo "FAIL: --dump-dir wrote through a symlink"; fails=$((fails + 1)); }
# -o onto a symlink (the rename would replace the link), a device or /dev/stdout: refused
ln -s tiny.safetensors wlink.safetensors
expect 1 "symbolic link" -- "$sinter" run tiny.sir --device ref --inputs in.safetensors -o wlink.safetensors
expect 1 "symbolic link|not a regular file" -- "$sinter" run tiny.sir --device ref --inputs in.safetensors -o /dev/stdout
[ -L /dev/stdout ] || { echo "FAIL: /dev/stdout is no longer a symlink"; fails=$((fails + 1)); }
# a .sir weights line stays in the model's folder
mkdir -p sub
sed 's|weights "tiny.safetensors"|weights "../tiny.safetensors"|' tiny.sir >sub/up.sir
expect 1 "leads outside the model's folder" -- "$sinter" run sub/up.sir --device ref --inputs in.safetensors
sed "s|weights \"tiny.safetensors\"|weights \"$PWD/tiny.safetensors\"|" tiny.sir >sub/abs.sir
expect 1 "is not a relative path inside the model's folder" -- "$sinter" run sub/abs.sir --device ref --inputs in.safetensors
expect 0 "" -- "$sinter" run sub/abs.sir --device ref --inputs in.safetensors --weights tiny.safetensors
# import never replaces an ONNX model's own external data (the .safetensors it
# would write beside the .sir, or a hard link to it), nor writes half a pair
python3 "$here/cli/mkonnx_ext.py" ext.onnx ext.safetensors 4
python3 -c "import struct; open('ext.safetensors', 'wb').write(struct.pack('<4f', 1, 2, 3, 4))"
cp ext.safetensors ext.keep
expect 1 "cannot write ext.safetensors: it is the same file as .*ext.safetensors, which the model was read from" -- "$sinter" import ext.onnx -o ext.sir
ln ext.safetensors extlink.sir
expect 1 "refusing to overwrite an input" -- "$sinter" import ext.onnx -o extlink.sir
ln ext.safetensors extlink.safetensors
expect 1 "refusing to overwrite an input" -- "$sinter" run ext.onnx --device ref --init random -o extlink.safetensors
cmp -s ext.safetensors ext.keep || { echo "FAIL: import changed the model's external data"; fails=$((fails + 1)); }
[ -e ext.sir ] && { echo "FAIL: import wrote ext.sir without its weights"; fails=$((fails + 1)); }
expect 0 "" -- "$sinter" import ext.onnx -o extout.sir
expect 0 "" -- "$sinter" check extout.sir
# strict --shape syntax and --mode, whatever the command: exit 2
for bad in "N= 3" "N=+5" "N=1," ",N=1" "N=3x" "N=1,N=2" "=3"; do
	expect 2 "--shape" -- "$sinter" check tiny.sir --shape "$bad"
done
expect 2 "unknown mode 'turbo'" -- "$sinter" print tiny.sir --mode turbo
expect 2 "unknown mode 'turbo'" -- "$sinter" compile tiny.sir --mode turbo
expect 2 "unknown mode 'turbo'" -- "$sinter" compile tiny.sir --mode turbo --target sm_90
# sizes: checked before allocating, exit 1 with the size
expect 1 "needs 1200000000000 bytes" -- "$sinter" run tiny.sir --device ref --shape N=100000000000 --init random
printf 'sinter 1\n\nfunc @main(%%x: f32[1000000000000000000]) -> (f32[1000000000000000000]) {\n  %%y = relu(%%x)\n  return %%y\n}\n' >eb.sir
expect 1 "f32\\[1000000000000000000\\] needs 4e\\+18 bytes" -- "$sinter" check eb.sir

# issue 31, item 11: paper cuts
# --opt=value for every option that takes one; a flag takes none
expect 0 "" -- "$sinter" run tiny.sir --device=ref --inputs=in.safetensors --weights=tiny.safetensors -o eq.safetensors
expect_out "first: 13 0 0 0"
cmp -s eq.safetensors out.safetensors || { echo "FAIL: run with --opt=value wrote another output"; fails=$((fails + 1)); }
expect 0 "" -- "$sinter" check tiny.sir --shape=N=2 --json
expect_out '"symbols": \[\]'
expect 2 "option --json takes no value" -- "$sinter" run tiny.sir --json=yes
expect 2 "option --inputs needs a value" -- "$sinter" run tiny.sir --inputs
# did you mean: options (this command's), commands, cache commands
expect 2 "unknown option '--inptus' \(did you mean '--inputs'\?\)" -- "$sinter" run tiny.sir --inptus in.safetensors
expect 2 "unknown option '--target' for run \(compile takes it\)" -- "$sinter" run tiny.sir --target sm_90
expect 2 "unknown option '--dot' for run \(print takes it\)" -- "$sinter" run tiny.sir --dot
expect 2 "unknown command 'complie' \(did you mean 'compile'\?\)" -- "$sinter" complie tiny.sir
expect 2 "unknown cache command 'stat' \(did you mean 'stats'\?\)" -- "$sinter" cache stat
expect 2 "unknown option '--frobnicate'\s*$" -- "$sinter" check tiny.sir --frobnicate
# sinter help CMD is sinter CMD --help
for c in check print hash run compile bench import cache; do
	"$sinter" help $c >help1.txt 2>&1 || { echo "FAIL: sinter help $c exits nonzero"; fails=$((fails + 1)); }
	"$sinter" $c --help >help2.txt 2>&1
	cmp -s help1.txt help2.txt || { echo "FAIL: sinter help $c differs from sinter $c --help"; fails=$((fails + 1)); }
done
expect 2 "unknown command 'rn' \(did you mean 'run'\?\)" -- "$sinter" help rn
# -o: the format by the extension; another is refused before any work
expect 2 "-o FILE: the format is chosen by the extension, .safetensors, .npz or .npy; got 'result.txt'" -- "$sinter" run tiny.sir --device ref --inputs in.safetensors -o result.txt
[ -e result.txt ] && { echo "FAIL: -o result.txt was written"; fails=$((fails + 1)); }
expect 0 "" -- "$sinter" run tiny.sir --device ref --inputs in.safetensors -o one.npy
python3 -c 'import struct,sys; b=open("one.npy","rb").read(); sys.exit(not b.startswith(b"\x93NUMPY"))' ||
	{ echo "FAIL: -o one.npy is not a .npy"; fails=$((fails + 1)); }
printf 'sinter 1\n\nfunc @main(%%x: f32[2]) -> (f32[2], f32[2]) {\n  %%a = relu(%%x)\n  %%b = neg(%%x)\n  return %%a, %%b\n}\n' >two.sir
expect 2 "two.npy: a .npy holds one array, the model has 2 outputs: write a .npz" -- "$sinter" run two.sir --device ref --init random -o two.npy
grep -q "^ran " out.txt && { echo "FAIL: -o two.npy ran the model first"; fails=$((fails + 1)); }
expect 0 "" -- "$sinter" run two.sir --device ref --init random -o two.npz
expect 2 "-o names the .sir to write" -- "$sinter" import ext.onnx -o ext.txt
expect 2 "-o writes a package: FILE.sinterpkg, got 'x.bin'" -- "$sinter" compile tiny.sir --shape N=1 --device cpu -o x.bin
# --target sm_90a: what NVRTC users write; the same kernels as sm_90
expect 2 "--target wants sm_XX or sm_XXa" -- "$sinter" compile tiny.sir --shape N=1 --target sm_90b
expect 2 "--target wants sm_XX or sm_XXa" -- "$sinter" compile tiny.sir --shape N=1 --target sm_a
if command -v nvcc >/dev/null 2>&1 || [ -e /usr/local/cuda/lib64/libnvrtc.so ]; then
	expect 0 "" -- "$sinter" compile tiny.sir --shape N=2 --target sm_90a --no-cache --dump-dir src90a --json
	python3 -c 'import json,sys; d=json.load(open("out.txt")); sys.exit(not (d["ok"] and d["target"] == "sm_90" and d["kernels"] >= 1))' ||
		{ echo "FAIL: compile --target sm_90a --json:"; sed 's/^/    /' out.txt; fails=$((fails + 1)); }
	expect 0 "" -- "$sinter" compile tiny.sir --shape N=2 --target=sm_90 --no-cache --dump-dir src90
	diff -r src90 src90a >/dev/null || { echo "FAIL: sm_90a and sm_90 kernels differ"; fails=$((fails + 1)); }
fi
# print --groups and print --device cpu show what a compile makes: the
# default pipeline when none is named (--passes '' shows the graph as written)
res="$here/../samples/resblock.sir"
"$sinter" print "$res" --shape N=2 --groups >g1.txt 2>&1
"$sinter" print "$res" --shape N=2 --groups --mode default >g2.txt 2>&1
cmp -s g1.txt g2.txt || { echo "FAIL: print --groups is not the default pipeline's groups"; fails=$((fails + 1)); }
"$sinter" print "$res" --shape N=2 --groups --passes '' >g3.txt 2>&1
grep -q "batch_norm" g3.txt || { echo "FAIL: print --groups --passes '' ran passes"; fails=$((fails + 1)); }
if "$sinter" compile "$res" --shape N=2 --device cpu --json --cache-dir cpucache2 >c.json 2>err.txt; then
	"$sinter" print "$res" --shape N=2 --device cpu >plan.txt 2>&1
	steps=$(python3 -c 'import json; print(json.load(open("c.json"))["steps"])')
	grep -qE "^$steps steps: " plan.txt || { echo "FAIL: print --device cpu lists another plan than compile's $steps steps:"; sed 's/^/    /' plan.txt; fails=$((fails + 1)); }
	expect 2 "precision fp16 is not built for it" -- "$sinter" print "$res" --shape N=2 --device cpu --precision fp16
	expect 2 "--no-fusion is not taken" -- "$sinter" print "$res" --shape N=2 --device cpu --no-fusion
	# bench runs an ONNX file's own weights (its initializers), as run does,
	# not random params: the outputs of the two agree bit for bit
	gm="$here/onnx/models/gpt2"
	"$sinter" run "$gm/model.onnx" --device cpu --inputs "$gm/inputs.safetensors" -o own_run.safetensors >/dev/null 2>&1
	"$sinter" bench "$gm/model.onnx" --device cpu --inputs "$gm/inputs.safetensors" --iters 2 --warmup 1 -o own_bench.safetensors >bench_own.txt 2>&1
	cmp -s own_run.safetensors own_bench.safetensors ||
		{ echo "FAIL: bench of an ONNX file did not run its own weights:"; sed 's/^/    /' bench_own.txt; fails=$((fails + 1)); }
	grep -q "params random" bench_own.txt && { echo "FAIL: bench said it filled an ONNX file's params randomly"; fails=$((fails + 1)); }
	# a model whose weights file is missing: random params, said so
	expect 0 "params random" -- "$sinter" bench "$res" --device cpu --shape N=2 --iters 2 --warmup 1
	# bench: latency percentiles and throughput, --duration, in text and JSON
	expect 0 "" -- "$sinter" bench tiny.sir --device cpu --shape N=2 --iters 9 --warmup 1
	expect_out "latency: +median [0-9.]+ ms, min [0-9.]+ ms, mean [0-9.]+ ms, p90 [0-9.]+ ms, p99 [0-9.]+ ms, max [0-9.]+ ms"
	expect_out "over 9 calls \(1 warm-up\) in [0-9.]+ s: [0-9.]+ inferences/s"
	expect 0 "" -- "$sinter" bench tiny.sir --device cpu --shape N=2 --duration 0.3 --json
	python3 - <<'PY' || { echo "FAIL: bench --duration --json:"; sed 's/^/    /' out.txt; fails=$((fails + 1)); }
import json
d = json.load(open("out.txt"))
k = ["min_ms", "median_ms", "mean_ms", "p90_ms", "p99_ms", "max_ms"]
assert all(d[x] > 0 for x in k), d
assert d["min_ms"] <= d["median_ms"] <= d["p90_ms"] <= d["p99_ms"] <= d["max_ms"], d
assert d["min_ms"] <= d["mean_ms"] <= d["max_ms"], d
assert d["duration_s"] == 0.3 and d["iters"] > 1 and 0.2 < d["timed_s"] < 1.5, d
assert abs(d["throughput_per_s"] - 1e3 / d["mean_ms"]) <= 1e-3 * d["throughput_per_s"], d
PY
	# the JSON holds any file name (a quote in it was written raw)
	cp tiny.sir 'q"uote.sir'
	expect 0 "" -- "$sinter" bench 'q"uote.sir' --device cpu --shape N=2 --iters 2 --json
	python3 -c 'import json,sys; sys.exit(json.load(open("out.txt"))["file"] != "q\"uote.sir")' ||
		{ echo "FAIL: bench --json with a quote in the file name:"; sed 's/^/    /' out.txt; fails=$((fails + 1)); }
	expect 2 "--iters and --duration exclude each other" -- "$sinter" bench tiny.sir --device cpu --shape N=2 --iters 3 --duration 1
	expect 2 "--duration wants seconds > 0" -- "$sinter" bench tiny.sir --device cpu --shape N=2 --duration 0
	# the per-step profile on cpu (issue 31, item 10): the product and the mul
	expect 0 "" -- "$sinter" bench tiny.sir --device cpu --shape N=2 --iters 3 --profile
	expect_out "^profile: 2 steps, .* \(each step timed where it runs, mean of 20 calls\)"
	expect_out "^  sgemm +linear "
fi
# issue 31, item 16: cache clear deletes all it can, names each entry it
# cannot (here a directory where an entry should be), and exits non-zero
mkdir -p clr/kernels/00 clr/kernels/01 clr/kernels/ff clr/plans/02
h=0123456789abcdef0123456789abcd
for d in 00 01 ff; do printf x >clr/kernels/$d/$h.cubin; done
printf x >clr/plans/02/$h.plan
mkdir -p clr/kernels/7f/$h.cubin && printf x >clr/kernels/7f/$h.cubin/inside
mkdir -p clr/plans/03/$h.plan && printf x >clr/plans/03/$h.plan/inside
expect 3 "cannot delete .*kernels/7f/$h.cubin" -- "$sinter" cache clear --dir clr
grep -q "cannot delete .*plans/03/$h.plan" err.txt || { echo "FAIL: cache clear did not name the second entry it could not delete"; sed 's/^/    /' err.txt; fails=$((fails + 1)); }
expect_out "removed 4 entries"
left=$(find clr -type f ! -name inside | wc -l)
[ "$left" = 0 ] || { echo "FAIL: cache clear left $left deletable entries"; find clr -type f; fails=$((fails + 1)); }
expect 0 "" -- "$sinter" cache stats --dir=clr

# The reference interpreter's total: values that each fit but together do
# not are refused before the run, naming the total and the limit (exit 3),
# where they ended in the OOM killer or "out of memory" after minutes.
# %a, %b and %c are live at once. Under a sanitizer (which reserves
# terabytes of address space: ulimit -v cannot apply) the values are 0.9 of
# this machine's memory each, and the allocator returns NULL past 2 GiB
# rather than feed the OOM killer should the check be gone; otherwise
# 400 MB each under `ulimit -v 1000000` (1 GB).
bigsir() {
	printf 'sinter 1\n\nfunc @main(%%x: f32[1]) -> (f32[%s]) {\n  %%a = expand(%%x) shape=[%s]\n' "$1" "$1"
	printf '  %%b = neg(%%a)\n  %%c = add(%%a, %%b)\n  return %%c\n}\n'
}
if ldd "$sinter" 2>/dev/null | grep -qE 'lib[at]san'; then
	k=$(awk '/^MemTotal:/ {printf "%.0f", $2 * 1024 * 0.9 / 4}' /proc/meminfo)
	bigsir "$k" >big.sir
	ASAN_OPTIONS="${ASAN_OPTIONS:-}:allocator_may_return_null=1:max_allocation_size_mb=2048" \
		expect 3 "big.sir: the reference interpreter needs [0-9]+ bytes \(.*\) live at once \(at %c, node 3 of 4\), more than .* allows \([0-9]+ bytes, .*\): refused before running" -- "$sinter" run big.sir --device ref --init random
else
	bigsir 100000000 >big.sir
	expect 3 "big.sir: the reference interpreter needs 1200000000 bytes \(1.1 GiB\) live at once \(at %c, node 3 of 4\), more than the address-space limit \(ulimit -v\) allows" -- bash -c 'ulimit -v 1000000; exec "$@"' _ "$sinter" run big.sir --device ref --init random
fi

# issue 31, items 8, 15, 17: checkpoints as they ship. y = relu(x w^T + b) * 2
# with x = (0.5, -1, 2), both rows of w (0.5, -1.25, 2), b = (0.25, -3):
# x.w = 5.5, y = (11.5, 5)
mkst wx.safetensors x:F32:1,3:0.5,-1,2
mkst pfx.safetensors transformer.fc.weight:F32:2,3:0.5,-1.25,2 transformer.fc.bias:F32:2:0.25,-3
expect 0 'the keys of pfx.safetensors carry the prefix "transformer." that the model.s param keys lack' -- "$sinter" run tiny.sir --device ref --weights pfx.safetensors --inputs wx.safetensors
expect_out "first: 11.5 5"
expect 0 "" -- "$sinter" run tiny.sir --device ref --weights pfx.safetensors --weights-prefix transformer. --inputs wx.safetensors
expect_out "first: 11.5 5"
grep -q warning err.txt && { echo "FAIL: --weights-prefix given and still a warning:"; sed 's/^/    /' err.txt; fails=$((fails + 1)); }
expect 1 'param "fc.weight" \(f32\[2,3\]\) is not in pfx.safetensors, nor is any other param' -- "$sinter" run tiny.sir --device ref --weights pfx.safetensors --weights-prefix= --inputs wx.safetensors
mkst sh1.safetensors fc.weight:F32:2,3:0.5,-1.25,2
mkst sh2.safetensors fc.bias:F32:2:0.25,-3
expect 0 "" -- "$sinter" run tiny.sir --device ref --weights sh1.safetensors --weights sh2.safetensors --inputs wx.safetensors
expect_out "first: 11.5 5"
mkdir -p ckpt && cp sh1.safetensors sh2.safetensors ckpt/
printf '{"metadata": {"total_size": 32}, "weight_map": {"fc.weight": "sh1.safetensors", "fc.bias": "sh2.safetensors"}}' >ckpt/model.safetensors.index.json
expect 0 "" -- "$sinter" run tiny.sir --device ref --weights ckpt/model.safetensors.index.json --inputs wx.safetensors
expect_out "first: 11.5 5"
expect 1 'duplicate key "fc.bias" in .*ckpt/sh2.safetensors and sh2.safetensors' -- "$sinter" run tiny.sir --device ref --weights ckpt/model.safetensors.index.json --weights sh2.safetensors --inputs wx.safetensors
printf '{"weight_map": {"fc.weight": "../sh1.safetensors"}}' >ckpt/bad.index.json
expect 1 'leads outside the model.s folder' -- "$sinter" run tiny.sir --device ref --weights ckpt/bad.index.json --inputs wx.safetensors
mkst intw.safetensors fc.weight:I64:2,3:1,-2,3 fc.bias:F32:2:0.25,-3
expect 1 'tiny.sir:6:8: error: param "fc.weight" is I64 in intw.safetensors, the model declares f32: not converted' -- "$sinter" run tiny.sir --device ref --weights intw.safetensors --inputs wx.safetensors
sed 's/"fc.bias"/"fc.weight"/; s/param f32\[2\]/param f32[2]/' tiny.sir >twokey.sir
expect 1 'twokey.sir:7:8: error: param "fc.weight" is f32\[2\] here and f32\[2,3\] at line 6: one key cannot hold two shapes' -- "$sinter" check twokey.sir
sed 's/^weights .*/weights "."/' tiny.sir >dotw.sir
expect 1 'the weights file "." names a folder \(.*\), not a file' -- "$sinter" run dotw.sir --shape N=1 --device ref --inputs wx.safetensors

if [ "$fails" -ne 0 ]; then
	echo "$fails CLI check(s) failed"
	exit 1
fi
echo "cli: all checks passed"
