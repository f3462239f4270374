#!/usr/bin/env bash
# scripts/train_lesson7_models.sh — trains lesson 7's three models, one after the other:
# the same data, recipe and budget, only the positions differ (models/README.md, "Lesson 7"):
#   models/headlab-nopos    no positions (only the causal mask tells positions apart)
#   models/headlab-learned  learned absolute positions (GPT-2's wpe)
#   models/headlab-rope     rotary positions (RoPE, theta 10,000, all of each head)
# Each folder gets the model, its train_log.csv / train_log.json, the run's output
# (train_output.log) and the exact command (train_command.txt). 7,500 steps each: about 16
# minutes on 2 idle cores, 30-60 on 2 busy shared ones.
#
#   scripts/train_lesson7_models.sh                 # all three
#   scripts/train_lesson7_models.sh rope nopos      # some of them
#   LESSON7_STEPS=6000 LESSON7_KEEP_STATE=1 scripts/train_lesson7_models.sh rope
#   LESSON7_STEPS=7500 LESSON7_RESUME=1 scripts/train_lesson7_models.sh rope
#                                                   # stop at 6,000 keeping the optimiser state, then
#                                                   # continue to 7,500: the same as one 7,500-step run
# Needs a build (HEADLAB_BIN, default build/headlab) and the corpus (data/corpus/build_corpus.sh,
# run here when missing). HEADLAB_NUM_THREADS (default 2) sets the trainer's threads; two
# models trained at once with 1 thread each take the same two cores.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${HEADLAB_BIN:-$root/build/headlab}"
corpus="$root/data/corpus/build"
export HEADLAB_NUM_THREADS="${HEADLAB_NUM_THREADS:-2}"

[ -x "$bin" ] || { echo "no headlab binary at $bin (build first, or set HEADLAB_BIN)" >&2; exit 1; }
[ -d "$corpus/sotu" ] || "$root/data/corpus/build_corpus.sh"

# name -> --positions
declare -A positions=([nopos]=none [learned]=learned [rope]=rotary)
# One budget for all three (models/README.md says why 7,500). The learning rate is constant
# after warm-up, so a run resumed to more steps is the same as one run of that many.
steps="${LESSON7_STEPS:-7500}"
resumed="${LESSON7_RESUME:-0}"
resume=(--force)  # a new run replaces the committed model (train refuses to without it)
[ "$resumed" = 1 ] && resume=(--resume)
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
       --steps "$steps" --batch 32 --context 64 --lr 1e-3 --warmup 100 --decay constant --weight-decay 0
       --markov 0.25 --repeated-random 0.25 --text-from-step 1500 --min-span 8 --max-span 32
       --log-every 50 --eval-every 250 --checkpoint-every 500 --seed 1 "${resume[@]}")
  echo "== $name: ${cmd[*]}" >&2
  cd "$root"
  # the command as run, with paths relative to the repository (a resumed run adds its line)
  line="$(printf 'HEADLAB_NUM_THREADS=%s %s\n' "$HEADLAB_NUM_THREADS" "${cmd[*]}" | sed "s#$root/##g")"
  if [ "$resumed" = 1 ]; then
    printf '%s\n' "$line" >> "$out/train_command.txt"
    "${cmd[@]}" 2>&1 | tee -a "$out/train_output.log" >&2
  else
    printf '%s\n' "$line" > "$out/train_command.txt"
    "${cmd[@]}" 2>&1 | tee "$out/train_output.log" >&2
  fi
  # the optimiser state is only for --resume (9 MB); the committed folders leave it out
  [ "${LESSON7_KEEP_STATE:-0}" = 1 ] || rm -f "$out/train_state.bin"
done
