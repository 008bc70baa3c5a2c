# bash completion for the sinter command (installed as
# share/bash-completion/completions/sinter; or: source this file).
# A command's options come from the command itself (sinter --list-options
# CMD), so they are never out of date; values, models and files from here.
_sinter() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local cmds="check print hash run compile bench generate cache import help"
	local i cmd="" sub=""
	# the command: the first word that is not a global option (-v, --trace F)
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--trace) ((i++)) ;;
		-*) ;;
		*)
			if [[ -z $cmd ]]; then
				cmd=${COMP_WORDS[i]}
				[[ $cmd == cache ]] || break
			else
				sub=${COMP_WORDS[i]}
				break
			fi
			;;
		esac
	done
	COMPREPLY=()
	case $prev in
	--trace | --inputs | --weights | -o)
		COMPREPLY=($(compgen -f -- "$cur"))
		return
		;;
	--dump-dir | --cache-dir | --dir)
		COMPREPLY=($(compgen -d -- "$cur"))
		return
		;;
	--device) COMPREPLY=($(compgen -W "ref cpu cuda" -- "$cur")) && return ;;
	--mode) COMPREPLY=($(compgen -W "default reduce-overhead max-autotune" -- "$cur")) && return ;;
	--precision) COMPREPLY=($(compgen -W "fp32 tf32 bf16 fp16 fp8" -- "$cur")) && return ;;
	--passes) COMPREPLY=($(compgen -W "canonicalize fold-bn layout precision attention" -- "$cur")) && return ;;
	--init) COMPREPLY=($(compgen -W "random" -- "$cur")) && return ;;
	--tune-progress) COMPREPLY=($(compgen -W "bar summary json quiet" -- "$cur")) && return ;;
	--target) COMPREPLY=($(compgen -W "sm_70 sm_75 sm_80 sm_86 sm_89 sm_90 sm_90a sm_100 sm_120" -- "$cur")) && return ;;
	--shape | --seed | --threads | --iters | --warmup | --duration | --tune-budget | --cache-remote) return ;;
	esac
	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--help --version -v -vv --trace" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$cmds" -- "$cur"))
		fi
		return
	fi
	case $cmd in
	help)
		COMPREPLY=($(compgen -W "$cmds" -- "$cur"))
		return
		;;
	cache)
		case $sub in
		"") COMPREPLY=($(compgen -W "stats clear export import merge explain --help" -- "$cur")) ;;
		stats) COMPREPLY=($(compgen -W "--dir --json" -- "$cur")) ;;
		clear) COMPREPLY=($(compgen -W "--dir" -- "$cur")) ;;
		explain) cmd="cache explain" ;;
		merge) [[ $cur == -* ]] && COMPREPLY=($(compgen -W "-o" -- "$cur")) || COMPREPLY=($(compgen -f -- "$cur")) ;;
		*) [[ $cur == -* ]] && COMPREPLY=($(compgen -W "--dir" -- "$cur")) || COMPREPLY=($(compgen -f -- "$cur")) ;;
		esac
		[[ $cmd == "cache explain" ]] || return
		;;
	esac
	if [[ $cur == -* ]]; then
		local opts
		opts=$("${COMP_WORDS[0]}" --list-options "$cmd" 2>/dev/null)
		COMPREPLY=($(compgen -W "${opts//=/}" -- "$cur"))
		return
	fi
	# the model: .sir, .onnx or a package, and folders to descend into
	local f
	while IFS= read -r f; do
		if [[ -d $f ]]; then
			COMPREPLY+=("$f/")
		else
			case $f in *.sir | *.onnx | *.sinterpkg) COMPREPLY+=("$f") ;; esac
		fi
	done < <(compgen -f -- "$cur")
	[[ ${#COMPREPLY[@]} == 1 && ${COMPREPLY[0]} == */ ]] && compopt -o nospace 2>/dev/null
	return 0
}
complete -F _sinter sinter
