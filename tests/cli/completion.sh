#!/usr/bin/env bash
# completion.sh SINTER: the bash completion (cli/completion/sinter.bash)
# completes commands, options, values and models; every option a command's
# --help names is one the command takes (sinter --list-options, which the
# completion scripts ask), and the reverse; the zsh script parses (and, in
# zsh, completes options) when zsh is installed.
set -u
sinter=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/models"
ln -s "$sinter" "$tmp/bin/sinter"
export PATH="$tmp/bin:$PATH"
cd "$tmp/models"
touch tiny.sir net.onnx pkg.sinterpkg notes.txt
mkdir -p sub
fails=0
# shellcheck source=/dev/null
source "$src/cli/completion/sinter.bash"
# comp WORD...: COMPREPLY for completing the last word, sorted, one line
comp() {
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_sinter
	printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//'
}
want() { # want EXPECTED WORD...
	local exp=$1 got
	shift
	got=$(comp "$@")
	if [ "$got" != "$exp" ]; then
		echo "FAIL: completing '$*': got '$got', want '$exp'"
		fails=$((fails + 1))
	fi
}
want "run" sinter r
want "cache check compile" sinter c
want "bench" sinter -v b
want "compile" sinter --trace t.json co
want "--inputs" sinter run tiny.sir --inp
want "--target" sinter compile --tar
want "--duration" sinter bench --dur
want "cpu cuda ref" sinter run tiny.sir --device ""
want "fp16 fp32 fp8" sinter bench --precision fp
want "sm_90 sm_90a" sinter compile --target sm_9
want "bench" sinter help be
want "stats" sinter cache st
want "--json" sinter cache stats --j
want "--cache-dir" sinter cache explain x.sir --cache-d
want "net.onnx notes.txt" sinter run --inputs n
want "net.onnx pkg.sinterpkg sub/ tiny.sir" sinter run ""
want "" sinter run --shape ""

# every option in a command's --help is one it takes, and the reverse
for c in check print hash run compile bench generate import; do
	"$sinter" --list-options "$c" | tr -d '=' | sort -u >listed.txt
	"$sinter" "$c" --help | grep -oE -- '(^|[ ([,])--?[a-z]([a-z-]*[a-z])?' | sed -E 's/^[ ([,]//' | sort -u >helped.txt
	extra=$(comm -13 listed.txt helped.txt | tr '\n' ' ')
	missing=$(comm -23 listed.txt helped.txt | grep -vx -- '--help' | tr '\n' ' ')
	[ -z "$extra" ] || { echo "FAIL: sinter $c --help names options it does not take: $extra"; fails=$((fails + 1)); }
	[ -z "$missing" ] || { echo "FAIL: sinter $c takes options its --help does not name: $missing"; fails=$((fails + 1)); }
done

if command -v zsh >/dev/null 2>&1; then
	zsh -n "$src/cli/completion/_sinter" || { echo "FAIL: _sinter does not parse"; fails=$((fails + 1)); }
fi

if [ "$fails" -ne 0 ]; then
	echo "$fails completion check(s) failed"
	exit 1
fi
echo "completion: all checks passed"
