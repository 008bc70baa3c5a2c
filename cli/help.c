/* help.c: the text of --help, per command. */
#include "cli.h"

const char cli_main_help[] =
	"usage: sinter COMMAND [ARGS]\n"
	"\n"
	"sinter is a graph compiler for neural networks. Commands:\n"
	"  check FILE.sir     parse, verify, infer shapes\n"
	"  print FILE.sir     print the canonical IR\n"
	"  hash  FILE.sir     print the structural hash (XXH3-128)\n"
	"  run   FILE.sir     run the model and summarize its outputs\n"
	"  compile FILE.sir   generate and compile the model's kernels\n"
	"  bench FILE.sir     compile times, warm start, memory, latency and throughput\n"
	"  generate FILE.sir  a decoder LLM's tokens: prefill, then decode on its KV cache\n"
	"  cache stats|clear|export|import|merge|explain  inspect, empty or share the caches\n"
	"  import FILE.onnx -o FILE.sir   ONNX to sinter IR plus its weights\n"
	"\n"
	"Options every command takes (docs/CLI.md):\n"
	"  -v, -vv            log compile stages and cache results (info), and each\n"
	"                     kernel's cache lookup (debug); also SINTER_LOG=warn|info|debug\n"
	"  --trace FILE.json  write a Chrome trace (Perfetto opens it): host stages and,\n"
	"                     for a run on cuda, each step's device time\n"
	"'sinter help COMMAND' (or 'sinter COMMAND --help') describes a command's options;\n"
	"a value may follow '=' (--inputs=FILE). Shell completion: cli/completion/.\n"
	"Exit codes: 0 ok, 1 bad input, 2 usage, 3 environment, 4 internal error.\n";

const char cli_shape_help[] =
	"  --shape SYM=VALUE  bind a symbolic dim, e.g. --shape N=32 (repeatable;\n"
	"                     also N=32,M=4)\n";

const char cli_check_help[] =
	"usage: sinter check FILE.sir [--shape SYM=VALUE]...\n"
	"\n"
	"Parses FILE, verifies it and infers every shape; prints a one-line summary.\n"
	"  --json             one JSON object: nodes, inputs, outputs, symbols, hash\n";
const char cli_print_help[] =
	"usage: sinter print FILE.sir [--passes a,b | --mode M] [--precision P] [--dump-dir D] [--shape SYM=VALUE]... [--groups]\n"
	"\n"
	"Prints the canonical text of FILE (parse, print, parse, print is a fixed point),\n"
	"after the graph passes asked for. --groups prints instead the fusion groups a\n"
	"CUDA compile would make (symbolic dims bound with --shape).\n"
	"  --dot              Graphviz dot instead of text (sinter print --dot F | dot -Tsvg)\n"
	"  --device cpu       the cpu plan's steps instead, with how many fall back to the\n"
	"                     reference interpreter (after the passes asked for)\n"
	"  --dump-dir D       write the IR after each pass to D (made if missing)\n";
const char cli_passes_help[] =
	"  --passes a,b,c     run these graph passes (canonicalize, fold-bn, layout, precision, attention)\n"
	"  --mode M           run mode M's pipeline: default, reduce-overhead, max-autotune\n"
	"  --precision P      fp32 (default), tf32, bf16, fp16 or fp8\n"
	"  --no-fusion        (compile, run, bench on cuda or cpu) one kernel or product per node\n";
const char cli_hash_help[] =
	"usage: sinter hash FILE.sir [--shape SYM=VALUE]...\n"
	"\n"
	"Prints the structural hash: topology, ops, attributes, shapes and dtypes;\n"
	"not value names, param keys or weight values.\n";
const char cli_run_help[] =
	"usage: sinter run FILE.sir [options]\n"
	"\n"
	"Runs the model and prints, per output, its type, mean, abs-max and first values.\n"
	"  --device D         ref (the reference interpreter), cpu (LLVM-compiled for\n"
	"                     this CPU) or cuda; default: cuda when a GPU is usable,\n"
	"                     else cpu when this build has it, else ref\n"
	"  --threads N        cpu: worker threads (default: the cores)\n"
	"  --inputs FILE      inputs from a .safetensors or NumPy .npz file, matched by\n"
	"                     input name, or a .npy for a model with one input\n"
	"                     (symbolic dims are bound from their shapes)\n"
	"  --init random      fill every param (and, without --inputs, every input)\n"
	"                     deterministically instead of reading the weights file\n"
	"  --seed S           seed for --init random (default 0)\n"
	"  --weights FILE     read params from FILE instead of the model's weights line;\n"
	"                     repeat it for several files (their keys as one set, a\n"
	"                     key in two refused); a sharded checkpoint's index\n"
	"                     (model.safetensors.index.json) names its shards\n"
	"  --weights-prefix P a key prefix the file's keys carry and the model's lack\n"
	"                     (or the other way): guessed and said when unique\n"
	"  -o FILE            write the outputs to a .safetensors or .npz file, named by\n"
	"                     output (.npy: a model with one output)\n"
	"  --cache-dir DIR    kernel and plan caches' folder instead of the default\n"
	"  --json             one JSON object: device, times, each output's summary\n"
	"%s"
	"FILE may be an AOT package (sinter compile -o FILE.sinterpkg): a CUDA one\n"
	"runs on cuda with no NVRTC, a cpu one (compile --device cpu) on cpu with no\n"
	"LLVM; inputs from --inputs or random (--seed).\n";

const char cli_compile_help[] =
	"usage: sinter compile FILE.sir [--target sm_XX | --device cpu] [--dump-dir DIR] [-o FILE.sinterpkg]\n"
	"                      [--shape SYM=VALUE]...\n"
	"\n"
	"Generates CUDA C for every kernel of the model and compiles it with NVRTC\n"
	"through the kernel cache. With --target no GPU is needed; without it the\n"
	"present GPU's arch is used. With --device cpu: the cpu plan, its kernels\n"
	"compiled by LLVM for this machine's CPU (through the kernel cache).\n"
	"  --target sm_XX     compile for this arch (e.g. sm_80, sm_90)\n"
	"  --device cpu       compile for the cpu device (--precision fp32 or bf16)\n"
	"  --dump-dir DIR     write every kernel's source to DIR (made if missing)\n"
	"  --no-cache         do not read or write the kernel cache\n"
	"  --cache-dir DIR    the kernel cache's folder instead of the default\n"
	"  --json             one JSON object: steps, kernels, cache hits, times, arena\n"
	"  -o FILE.sinterpkg  write an AOT package: plan, cubins and weights in one\n"
	"                     file that 'sinter run' and 'sinter bench' take where\n"
	"                     NVRTC is absent (weights: --weights, --weights-prefix,\n"
	"                     --init random and --seed as for run, else the\n"
	"                     model's); with\n"
	"                     --device cpu: plan, compiled objects and weights, which\n"
	"                     'sinter run' runs on a CPU with this one's features\n";
const char cli_bench_help[] =
	"usage: sinter bench FILE.sir [options]\n"
	"\n"
	"On the GPU: cold compile (empty kernel cache) split into parse, codegen,\n"
	"NVRTC, load and upload; warm start (kernel cache hit); device memory;\n"
	"latency (median, min, mean, p90, p99, max) and throughput over --iters\n"
	"calls timed with CUDA events after --warmup calls. Weights and inputs: as\n"
	"for run (default --init random).\n"
	"  --iters N          timed calls (default 50)\n"
	"  --duration S       timed calls for S seconds instead of --iters\n"
	"  --warmup N         untimed calls first (default 5)\n"
	"  --json             one JSON object instead of text\n"
	"  --profile          also time each step alone and list the top ones (on cpu:\n"
	"                     each step timed where it runs, mean of 20 calls)\n"
	"  -o FILE            write the outputs of the first run to a .safetensors, .npz\n"
	"                     or .npy file\n"
	"  --device cpu       the cpu device instead of the GPU (latency timed by the\n"
	"                     wall clock); --threads N: its worker threads\n"
	"  --inputs, --weights, --weights-prefix, --seed: as for run\n"
	"%s";
const char cli_tune_help[] =
	"  --tune-budget S    max-autotune: seconds of tuning for the whole model (default 20)\n"
	"  --tune-progress P  max-autotune progress on stderr: bar, summary, json or quiet\n"
	"                     (default: a bar on a terminal, else one summary line)\n"
	"  --cache-remote URL tuning records also in Redis (redis://HOST:PORT; default\n"
	"                     $SINTER_CACHE_REMOTE)\n";
const char cli_import_help[] =
	"usage: sinter import MODEL.onnx -o MODEL.sir [--shape SYM=VALUE]...\n"
	"\n"
	"Translates an ONNX model to sinter IR: writes MODEL.sir and, beside it,\n"
	"MODEL.safetensors with the initializers (the .sir's weights line names it).\n"
	"Every command that takes a .sir also takes a .onnx directly.\n";
const char cli_cache_help[] =
	"usage: sinter cache stats|clear [--dir DIR]\n"
	"       sinter cache export FILE [--dir DIR]    tuning records into FILE\n"
	"       sinter cache import FILE [--dir DIR]    tuning records from FILE (faster wins)\n"
	"       sinter cache merge A B -o C             one record per kernel and device: the faster\n"
	"       sinter cache explain FILE [run's options: --device, --shape, --mode, --precision, --weights,\n"
	"                            --init random --seed S, --cache-dir]   why a compile hits or misses\n"
	"                            (cuda: on the GPU; --device cpu: the cpu plan cache, no GPU needed)\n"
	"       sinter cache stats [--dir DIR] --json     one JSON object\n"
	"\n"
	"The kernel and plan caches live in $SINTER_CACHE_DIR, else $XDG_CACHE_HOME/sinter,\n"
	"else ~/.cache/sinter (docs/CACHE.md).\n";
