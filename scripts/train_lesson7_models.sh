#!/usr/bin/env bash
# scripts/train_lesson7_models.sh — trains lesson 7's three models, one after the other:
# the same data, recipe and budget, only the positions differ (models/README.md, "Lesson 7"):
#   models/headlab-nopos    no positions (only the causal mask tells positions apart)
#   models/headlab-learned  learned absolute positions (GPT-2's wpe)
#   models/headlab-rope     rotary positions (RoPE, theta 10,000, all of each head)
# Each folder gets the model, its train_log.csv / train_log.json, the run's output
# (train_output.log) and the exact command (train_command.txt). About 15-25 minutes each on
# 2 shared cores.
#
#   scripts/train_lesson7_models.sh                 # all three
#   scripts/train_lesson7_models.sh rope nopos      # some of them
# Needs a build (HEADLAB_BIN, default build/headlab) and the corpus (data/corpus/build_corpus.sh,
# run here when missing). HEADLAB_NUM_THREADS (default 2) sets the trainer's threads.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${HEADLAB_BIN:-$root/build/headlab}"
corpus="$root/data/corpus/build"
export HEADLAB_NUM_THREADS="${HEADLAB_NUM_THREADS:-2}"

[ -x "$bin" ] || { echo "no headlab binary at $bin (build first, or set HEADLAB_BIN)" >&2; exit 1; }
[ -d "$corpus/sotu" ] || "$root/data/corpus/build_corpus.sh"

# name -> --positions
declare -A positions=([nopos]=none [learned]=learned [rope]=rotary)
# name -> --steps. The rotary model's induction head was still forming at step 3,000
# (induction 0.27), so the budget became 4,500 steps; the committed no-position model had
# been trained to 3,000 by then, with its scores flat from step 1,750 (models/README.md).
declare -A steps=([nopos]=3000 [learned]=4500 [rope]=4500)
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(nopos learned rope)

for name in "${names[@]}"; do
  pos="${positions[$name]:-}"
  [ -n "$pos" ] || { echo "unknown model '$name' (nopos, learned, rope)" >&2; exit 2; }
  out="$root/models/headlab-$name"
  # The recipe of models/headlab-tiny (Markov and repeated-random windows first, then State of
  # the Union text with both kinds mixed in), at context 64 and batch 32.
  # The tokenizer is headlab-tiny's (the same 4,096-token BPE for all four models).
  cmd=(nice -n 10 "$bin" train --config "models/headlab-$name/train_config.json" --tokenizer models/headlab-tiny
       --corpus data/corpus/build/sotu --heldout data/corpus/build/heldout --out "models/headlab-$name"
       --positions "$pos"
       --steps "${steps[$name]}" --batch 32 --context 64 --lr 1e-3 --warmup 100 --decay constant --weight-decay 0
       --markov 0.25 --repeated-random 0.25 --text-from-step 1500 --min-span 8 --max-span 32
       --log-every 50 --eval-every 250 --checkpoint-every 500 --seed 1)
  echo "== $name: ${cmd[*]}" >&2
  cd "$root"
  # the command as run, with paths relative to the repository
  printf 'HEADLAB_NUM_THREADS=%s %s\n' "$HEADLAB_NUM_THREADS" "${cmd[*]}" | sed "s#$root/##g" > "$out/train_command.txt"
  "${cmd[@]}" 2>&1 | tee "$out/train_output.log" >&2
  # the optimiser state is only for --resume (9 MB); the committed folders leave it out
  rm -f "$out/train_state.bin"
done
