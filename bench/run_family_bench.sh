#!/bin/sh
# bench/run_family_bench.sh — issue 14's benchmark: a Llama-family model of Qwen2.5-0.5B's shape
# (random BF16 weights, batch 1) in headlab, in PyTorch and in llama.cpp, in turns, at 16, 64,
# 256 and 1,024 tokens. Three tables:
#   every pattern recorded: headlab ÷ PyTorch (Hugging Face's eager attention returning every
#     pattern, float32), time and peak memory, against the targets (≤ 0.5 at 16 and 64 tokens,
#     ≤ 0.7 at 256 and 1,024; memory ≤ 0.6), the same argmax and max |diff| of the last logits;
#   plain forward (logits of every position, no record): headlab ÷ llama.cpp (the npm package's
#     libllama, 2 threads) from the BF16, F16 and Q8_0 GGUF files of the same weights (≤ 0.6 from
#     F16/BF16 and ≤ 1.0 from Q8_0 at 64 and 256 tokens), with max |diff| of the last logits;
#   the CPU time of one forward on every side (the work, apart from waiting on a busy machine).
# Each process runs one length and reports the median of REPEATS forwards after a warm-up; the
# engines take turns for ROUNDS rounds and the best round of each is printed, so a busy machine
# slows every engine alike rather than whichever ran during a burst. Progress goes to stderr.
# A whole run (3 repeats, 2 rounds, the four lengths) took 59 minutes on 2 cores at load 11,
# 34 of them at 1,024 tokens; `--lengths "16 64 256"` takes about a third of that.
#
#   bench/run_family_bench.sh [options] [BUILD_DIR] [REPEATS] [ROUNDS]      (build, 3, 2)
#     --lengths "16 64"    the token counts (default "16 64 256 1024"; 1,024 is the slow one)
#     --shape NAME         qwen2.5-0.5b (default) or llama-12x768, the Llama of issue 14's llama.cpp
#                          scale figure (default lengths "256", GGUF files "f32 f16")
#     --gguf "f16 q8_0"    which GGUF files llama.cpp runs (of f32 f16 bf16 q8_0)
#     --torch-bf16         also time PyTorch in bfloat16 (a column beside the ratio, never in it)
#     --headlab-bf16       also time headlab with --compute bf16 (the products' inputs rounded to
#                          bfloat16, AVX512_BF16 dot products where the CPU has them): a fourth
#                          table, its ratios to PyTorch float32 and bfloat16 and to llama.cpp,
#                          and how far its last logits move from PyTorch's float32 ones
#     --llama-threads N    llama.cpp's threads (default 2, as headlab's pool): 1 is for diagnosis on a
#                          loaded machine, where ggml's spinning barriers make 2 threads slower than 1
#     --no-torch, --no-llama   leave a peer out
# The model files are made when missing (bench/family_model.py, `headlab export --gguf`,
# llama.cpp's llama_model_quantize) in $HEADLAB_BENCH_MODELS/<shape> (default /tmp/headlab-bench):
# Qwen2.5-0.5B's shape takes 0.99 GB (BF16 folder) + 0.99 (BF16 GGUF) + 0.99 (F16) + 0.53 (Q8_0).
# Run it under `nice -n 10` on a shared machine (every engine then has the same niceness).
# Needs Debian's python3-torch and libjemalloc2 for the PyTorch peer (bench/bench_lib.sh gives it
# its fair configuration) and data/npm (npm ci --prefix data/npm) for llama.cpp.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/bench_lib.sh"

SHAPE=qwen2.5-0.5b LENGTHS="" GGUF="" TORCH_BF16=no HEADLAB_BF16=no USE_TORCH=yes USE_LLAMA=yes LLAMA_THREADS=2
while [ $# -gt 0 ]; do
  case $1 in
    --shape) SHAPE=$2; shift 2 ;;
    --lengths) LENGTHS=$2; shift 2 ;;
    --gguf) GGUF=$2; shift 2 ;;
    --torch-bf16) TORCH_BF16=yes; shift ;;
    --headlab-bf16) HEADLAB_BF16=yes; shift ;;
    --llama-threads) LLAMA_THREADS=$2; shift 2 ;;
    --no-torch) USE_TORCH=no; shift ;;
    --no-llama) USE_LLAMA=no; shift ;;
    -h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --*) echo "run_family_bench.sh: unknown option $1 (--help lists them)" >&2; exit 2 ;;
    *) break ;;
  esac
done
BUILD=${1:-$ROOT/build}
REPEATS=${2:-3}
ROUNDS=${3:-2}
case $SHAPE in
  qwen2.5-0.5b) LENGTHS=${LENGTHS:-16 64 256 1024}; GGUF=${GGUF:-bf16 f16 q8_0} ;;
  llama-12x768) LENGTHS=${LENGTHS:-256}; GGUF=${GGUF:-f32 f16} ;;
  *) echo "run_family_bench.sh: unknown shape $SHAPE (qwen2.5-0.5b or llama-12x768)" >&2; exit 2 ;;
esac
for t in $GGUF; do
  case $t in f32|f16|bf16|q8_0) ;; *) echo "run_family_bench.sh: --gguf takes f32 f16 bf16 q8_0, not $t" >&2; exit 2 ;; esac
done
MODELS=${HEADLAB_BENCH_MODELS:-/tmp/headlab-bench}/$SHAPE
HF=$MODELS/hf
NPM=$ROOT/data/npm/node_modules
LLAMA_LIBS=$NPM/@node-llama-cpp/linux-x64/bins/linux-x64
export LLAMA_BACKEND_DIR="$LLAMA_LIBS"
# headlab chooses OpenBLAS's kernels by the CPU's features (src/model/blas.h) unless the caller set
# OPENBLAS_CORETYPE, which some machines do in their environment: the benchmark measures headlab's
# own choice, and gives it to PyTorch. BENCH_KEEP_CORETYPE=1 keeps the caller's.
CALLER_CORETYPE=${OPENBLAS_CORETYPE:-}
if [ -n "$CALLER_CORETYPE" ] && [ "${BENCH_KEEP_CORETYPE:-0}" != 1 ]; then unset OPENBLAS_CORETYPE; fi
START=$(date +%s)
LOAD_START=$(bench_load)
say() { echo "[$(($(date +%s) - START)) s] $*" >&2; }

# ---- the programs ---------------------------------------------------------------------------
bench_build "$BUILD" headlab_engine_bench headlab_cli
HEADLAB_BENCH=$BUILD/bench/headlab_engine_bench
[ "$USE_TORCH" = yes ] && bench_torch_setup "$HEADLAB_BENCH" || TORCH=no
LLAMA_BENCH=$BUILD/bench/llama_bench
LLAMA_TOOL=$BUILD/bench/llama_logits
if [ "$USE_LLAMA" = yes ] && [ ! -f "$LLAMA_LIBS/libllama.v0.4.0.so" ]; then
  echo "note: llama.cpp's library is not in data/npm (npm ci --prefix data/npm): llama.cpp is left out"
  USE_LLAMA=no
fi
[ "$USE_LLAMA" = yes ] && bench_llama_peer "$BUILD"

# ---- the model files ------------------------------------------------------------------------
# make FILE COMMAND...: runs the command (which writes FILE.part) unless FILE exists, then renames
# it, so an interrupted run never leaves a half file that a later run would take as made.
make_file() {
  f=$1
  shift
  [ -f "$f" ] && return 0
  say "making $f"
  "$@"
  mv "$f.part" "$f"
}
if [ ! -f "$HF/model.safetensors" ]; then
  /usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "run_family_bench.sh: making the weights needs Debian's python3-torch" >&2; exit 1; }
  say "making the random $SHAPE weights in $HF"
  rm -rf "$HF.part" && /usr/bin/python3 "$ROOT/bench/family_model.py" "$HF.part" --shape "$SHAPE" && mv "$HF.part" "$HF"
fi
export_gguf() { "$BUILD/headlab" export --gguf "$MODELS/$1.gguf.part" --model "$HF" --dtype "$1" >/dev/null; }
quantize_gguf() { "$LLAMA_TOOL" quantize "$MODELS/f16.gguf" "$MODELS/$1.gguf.part" 7 >/dev/null; }
if [ "$USE_LLAMA" = yes ]; then
  for t in $GGUF; do
    case $t in
      q8_0) make_file "$MODELS/f16.gguf" export_gguf f16; make_file "$MODELS/q8_0.gguf" quantize_gguf q8_0 ;;
      *) make_file "$MODELS/$t.gguf" export_gguf "$t" ;;
    esac
  done
fi

# ---- what runs where ------------------------------------------------------------------------
echo "# family benchmark, $SHAPE, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); load average at the start: $LOAD_START"
echo "files: $(cd "$MODELS" && du -sh hf $(for t in $GGUF; do echo "$t.gguf"; done) 2>/dev/null | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1 }')"
echo "headlab kernels: $("$HEADLAB_BENCH" --kernels) (the caller's OPENBLAS_CORETYPE: ${CALLER_CORETYPE:-unset}, $([ "${BENCH_KEEP_CORETYPE:-0}" = 1 ] && echo kept || echo "not used"))"
if [ "$USE_LLAMA" = yes ]; then
  "$LLAMA_BENCH" --info | sed -n '1s/^/llama.cpp: /p; 2s/^/llama.cpp system info: /p'
fi
[ "$TORCH" = yes ] && echo "PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)') in float32 (from_pretrained's default for a BF16 file; the arithmetic headlab does), OPENBLAS_CORETYPE=$BLAS_CORE"
echo "REPEATS=$REPEATS (median of each process) ROUNDS=$ROUNDS (best round of each engine), lengths: $LENGTHS"

# ---- the runs -------------------------------------------------------------------------------
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
# keep NAME LINE: NAME's result line of this round, and its best median so far.
keep() {
  echo "$2" >"$D/$1.line"
  bench_min "$(cat "$D/$1.best" 2>/dev/null || true)" "$(bench_field "$2" median_ms)" >"$D/$1.best.new"
  mv "$D/$1.best.new" "$D/$1.best"
}
best() { cat "$D/$1.best" 2>/dev/null || echo nan; }
get() { bench_field "$(cat "$D/$1.line" 2>/dev/null || true)" "$2"; }
# max |diff| of two dumps of the last logits (float32 files), or "-".
maxdiff() {
  [ -f "$1" ] && [ -f "$2" ] || { echo -; return; }
  /usr/bin/python3 -c 'import sys, numpy as n; a, b = (n.fromfile(p, n.float32) for p in sys.argv[1:]); print("%.2g" % abs(a.astype(float) - b).max())' "$1" "$2"
}
target_patterns() { case $1 in 16|64) echo 0.5 ;; *) echo 0.7 ;; esac; }
target_plain() {  # FILE_TYPE TOKENS
  case $2 in 64|256) ;; *) echo -; return ;; esac
  case $1 in f16|bf16) echo 0.6 ;; q8_0) echo 1.0 ;; *) echo - ;; esac
}
met() { awk -v r="$1" -v t="$2" 'BEGIN { if (r == "-" || t == "-") print "-"; else print (r + 0 <= t + 0) ? "yes" : "NO" }'; }
same() { [ "$1" = "$2" ] && [ -n "$1" ] && echo yes || echo NO; }
run_headlab() { OPENBLAS_NUM_THREADS=2 "$HEADLAB_BENCH" --model "$HF" --repeats "$REPEATS" "$@"; }

printf '%7s  %10s  %10s  %6s  %6s  %4s  %10s  %10s  %6s  %4s  %6s  %9s  %10s\n' tokens headlab_ms pytorch_ms ratio target met \
  headlab_MB pytorch_MB ratio met argmax max_diff torch_bf16 >"$D/table_patterns"
printf '%7s  %5s  %10s  %10s  %6s  %6s  %4s  %10s  %10s  %6s  %9s\n' tokens file headlab_ms llama_ms ratio target met \
  headlab_MB llama_MB argmax max_diff >"$D/table_plain"
printf '%7s  %13s  %8s  %8s  %6s  %4s  %6s  %9s  %11s  %8s  %8s\n' tokens headlab_bf16_ms ÷torch ÷torch16 target met argmax max_diff plain_bf16 ÷llama16 ÷llamaQ8 \
  >"$D/table_bf16"
printf '%7s  %12s  %10s  %13s' tokens headlab_patt pytorch headlab_plain >"$D/table_cpu"
[ "$USE_LLAMA" = yes ] && for t in $GGUF; do printf '  %10s' "llama_$t" >>"$D/table_cpu"; done
echo >>"$D/table_cpu"
for T in $LENGTHS; do
  rm -f "$D"/*.best "$D"/*.line "$D"/*.last
  r=1
  while [ $r -le "$ROUNDS" ]; do
    say "$T tokens, round $r of $ROUNDS: headlab (patterns)"
    keep headlab "$(run_headlab --tokens "$T" --dump-last "$D/headlab.last")"
    if [ "$TORCH" = yes ]; then
      say "$T tokens, round $r: PyTorch (float32, patterns)"
      keep torch "$(bench_torch "$ROOT/bench/torch_family_bench.py" --model "$HF" --tokens "$T" --repeats "$REPEATS" --dump-last "$D/torch.last")"
    fi
    say "$T tokens, round $r: headlab (plain)"
    keep plain "$(run_headlab --tokens "$T" --plain --dump-last "$D/plain.last")"
    if [ "$USE_LLAMA" = yes ]; then
      for t in $GGUF; do
        say "$T tokens, round $r: llama.cpp ($t)"
        keep "llama_$t" "$("$LLAMA_BENCH" --model "$MODELS/$t.gguf" --tokens "$T" --repeats "$REPEATS" --threads "$LLAMA_THREADS" --dump-last "$D/llama_$t.last")"
      done
    fi
    if [ "$HEADLAB_BF16" = yes ]; then
      say "$T tokens, round $r: headlab --compute bf16 (patterns, then plain)"
      keep headlab_bf16 "$(run_headlab --tokens "$T" --compute bf16 --dump-last "$D/headlab_bf16.last")"
      keep plain_bf16 "$(run_headlab --tokens "$T" --plain --compute bf16)"
    fi
    if [ "$TORCH" = yes ] && [ "$TORCH_BF16" = yes ]; then
      say "$T tokens, round $r: PyTorch (bfloat16, patterns)"
      keep torch_bf16 "$(bench_torch "$ROOT/bench/torch_family_bench.py" --model "$HF" --tokens "$T" --repeats "$REPEATS" --dtype bfloat16)"
    fi
    r=$((r + 1))
  done
  ratio=$(bench_ratio "$(best headlab)" "$(best torch)")
  mem=$(bench_ratio "$(get headlab peak_rss_mb)" "$(get torch peak_rss_mb)")
  printf '%7s  %10s  %10s  %6s  %6s  %4s  %10s  %10s  %6s  %4s  %6s  %9s  %10s\n' "$T" "$(best headlab)" "$(best torch)" \
    "$ratio" "$(target_patterns "$T")" "$(met "$ratio" "$(target_patterns "$T")")" "$(get headlab peak_rss_mb)" \
    "$(get torch peak_rss_mb)" "$mem" "$(met "$mem" 0.6)" "$(same "$(get headlab argmax_last)" "$(get torch argmax_last)")" \
    "$(maxdiff "$D/headlab.last" "$D/torch.last")" "$(best torch_bf16)" >>"$D/table_patterns"
  if [ "$USE_LLAMA" = yes ]; then
    for t in $GGUF; do
      ratio=$(bench_ratio "$(best plain)" "$(best "llama_$t")")
      printf '%7s  %5s  %10s  %10s  %6s  %6s  %4s  %10s  %10s  %6s  %9s\n' "$T" "$t" "$(best plain)" "$(best "llama_$t")" \
        "$ratio" "$(target_plain "$t" "$T")" "$(met "$ratio" "$(target_plain "$t" "$T")")" "$(get plain peak_rss_mb)" \
        "$(get "llama_$t" peak_rss_mb)" "$(same "$(get plain argmax_last)" "$(get "llama_$t" argmax_last)")" \
        "$(maxdiff "$D/plain.last" "$D/llama_$t.last")" >>"$D/table_plain"
    done
  fi
  if [ "$HEADLAB_BF16" = yes ]; then
    ratio=$(bench_ratio "$(best headlab_bf16)" "$(best torch)")
    llama16=$(echo "$GGUF" | tr ' ' '\n' | grep -E '^(bf16|f16)$' | head -1 || true)
    printf '%7s  %13s  %8s  %8s  %6s  %4s  %6s  %9s  %11s  %8s  %8s\n' "$T" "$(best headlab_bf16)" "$ratio" \
      "$(bench_ratio "$(best headlab_bf16)" "$(best torch_bf16)")" "$(target_patterns "$T")" \
      "$(met "$ratio" "$(target_patterns "$T")")" "$(same "$(get headlab_bf16 argmax_last)" "$(get torch argmax_last)")" \
      "$(maxdiff "$D/headlab_bf16.last" "$D/torch.last")" "$(best plain_bf16)" \
      "$(bench_ratio "$(best plain_bf16)" "$(best "llama_${llama16:-none}")")" "$(bench_ratio "$(best plain_bf16)" "$(best llama_q8_0)")" \
      >>"$D/table_bf16"
  fi
  printf '%7s  %12s  %10s  %13s' "$T" "$(get headlab cpu_ms)" "$(get torch cpu_ms)" "$(get plain cpu_ms)" >>"$D/table_cpu"
  [ "$USE_LLAMA" = yes ] && for t in $GGUF; do printf '  %10s' "$(get "llama_$t" cpu_ms)" >>"$D/table_cpu"; done
  echo >>"$D/table_cpu"
  say "$T tokens done"
done

echo
echo "## every pattern recorded: headlab ÷ PyTorch (float32, eager attention returning every pattern)"
cat "$D/table_patterns"
echo "(ms: the best round's median; MB: peak resident memory; argmax and max_diff: the last position's logits, headlab against PyTorch; torch_bf16: PyTorch in bfloat16, not in the ratio)"
if [ "$USE_LLAMA" = yes ]; then
  echo
  echo "## plain forward (logits of every position): headlab ÷ llama.cpp, from each GGUF file"
  cat "$D/table_plain"
  echo "(argmax and max_diff: headlab's last logits (BF16 folder) against llama.cpp's on that file, which rounds its activations to the weights' type)"
  echo "llama.cpp: $(get "llama_$(echo $GGUF | cut -d' ' -f1)" model), $(get "llama_$(echo $GGUF | cut -d' ' -f1)" backend), $LLAMA_THREADS thread(s), F32 KV cache, flash attention off"
fi
if [ "$HEADLAB_BF16" = yes ]; then
  echo
  echo "## headlab --compute bf16 (the products' inputs rounded to bfloat16, float32 sums): ÷ PyTorch float32 (the ratio against the target), ÷ PyTorch bfloat16, ÷ llama.cpp"
  cat "$D/table_bf16"
  echo "(argmax and max_diff: headlab --compute bf16's last logits against PyTorch float32's; ÷torch16 needs --torch-bf16; ÷llama16: the plain forward against llama.cpp's $(echo "$GGUF" | tr ' ' '\n' | grep -E '^(bf16|f16)$' | head -1 || echo -) file; compute=$(get headlab_bf16 compute) kernels=$(get headlab_bf16 kernels))"
fi
echo
echo "## CPU time of one forward, every thread (ms, the last round's median): the work, apart from waiting on a busy machine"
cat "$D/table_cpu"
echo "(llama.cpp's includes its threads spinning at each step's barrier, which a loaded machine makes long)"
echo "headlab weights in memory: matrices $(get plain dtype), $(get plain weights_mb) MB, $(get plain bytes_per_weight) bytes per weight (resident memory the load added: float32 is 4, BF16 2, plus any packed copy)"
echo "headlab kernels: $(get plain cpu) linear=$(get plain linear)$(get plain kernels) blas=$(get plain blas); PyTorch: $(get torch blas)"
echo "load average: $LOAD_START at the start, $(bench_load) at the end; took $(($(date +%s) - START)) s"
