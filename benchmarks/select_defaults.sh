#!/usr/bin/env bash
# Retired models (2026-11-26, issue 28): critic-flickr8k-robust, critic-flickr8k-hard, critic-flickr8k-ensemble and
# lceval-plus-flickr8k-coco no longer ship (docs/models/retired/). The steps that read them ran at or before commit
# 96ca0a9; to rerun them, export their folders from that commit into a folder and set CAPEVAL_MODELS_DIR to it.
# The runs behind BENCHMARKS.md's defaults rule (choosing the learned metrics' defaults) and the leaderboard: every candidate model of
# every learned metric, CIDEr-D, SPICE, METEOR, BLEU-4 and sentence_cosine, on every judged benchmark in the data
# directory, each as a `capeval bench --json` file with 95 % bootstrap intervals. Then the rule and the leaderboard.
#   benchmarks/select_defaults.sh OUT_DIR [BOOTSTRAP]      (default 1000 resamples; 0 fills the score cache only)
# Every run names its models explicitly, so the script measures the same candidates whatever the defaults are.
# Per-item scores are cached (~/.cache/capeval or $CAPEVAL_CACHE_DIR), so a second run only resamples.
set -euo pipefail
OUT=${1:?usage: select_defaults.sh OUT_DIR [BOOTSTRAP]}
BOOT=${2:-1000}
mkdir -p "$OUT"
TEXT="cider_d,spice,meteor,bleu_4,sentence_cosine"
# REFERENCE §6's untrained floor, and the same blend without the sentence encoder (clean everywhere)
FLOOR="blend:sentence_cosine+1/3*cider_d+1/3*spice+1/3*meteor"
RULES="blend:1/3*cider_d+1/3*spice+1/3*meteor"
bench() {  # bench NAME BENCHMARK [bench flags...]
  local name=$1; shift
  echo "== $name: capeval bench $*" >&2
  /usr/bin/time -f "   $name: %e s wall, %M KB peak" capeval bench "$@" --bootstrap "$BOOT" --json "$OUT/$name.json" > /dev/null
}
# --- text-only metrics and reference-only learned metrics, all four benchmarks (COMPOSITE: all 3 subsets)
for B in flickr8k-expert composite pascal50s thumb; do
  EXTRA=(); [ "$B" = flickr8k-expert ] && EXTRA=(--protocol clipscore)
  bench "$B-text" "$B" "${EXTRA[@]}" --metrics "$TEXT,$FLOOR,$RULES,lceval,lceval_plus,lceval_released,critic_ref" \
    --lceval-model lceval-flickr8k-coco --lceval-plus-model lceval-plus-flickr8k-coco \
    --critic-ref-model critic-flickr8k-ref
  bench "$B-alt1" "$B" "${EXTRA[@]}" --metrics lceval,lceval_plus,critic_ref \
    --lceval-model lceval-caption-flickr8k-coco --lceval-plus-model lceval-plus-caption-flickr8k-coco \
    --critic-ref-model critic-coco-ref
  bench "$B-alt2" "$B" "${EXTRA[@]}" --metrics critic_ref --critic-ref-model critic-flickr8k-joint
done
# --- metrics that read images: where every image is present (Flickr8k test, COMPOSITE-8k, PASCAL-50S)
for B in flickr8k-expert composite pascal50s; do
  EXTRA=(); [ "$B" = flickr8k-expert ] && EXTRA=(--protocol clipscore); [ "$B" = composite ] && EXTRA=(--subset 8k)
  bench "$B-img" "$B" "${EXTRA[@]}" --metrics critic,critic_img,critic_plus,cider_d \
    --critic-model critic-flickr8k --critic-img-model critic-flickr8k-img --critic-plus-model critic-flickr8k-plus
  for M in critic-flickr8k-caption critic-flickr8k-robust critic-flickr8k-coco critic-flickr8k-joint \
           critic-flickr8k-hard critic-flickr8k-ensemble; do
    bench "$B-img-$M" "$B" "${EXTRA[@]}" --metrics critic --critic-model "$M"
  done
done
if [ "$BOOT" != 0 ]; then
  python benchmarks/select_defaults.py "$OUT" --markdown "$OUT/selection.md"
  capeval leaderboard "$OUT" --markdown "$OUT/leaderboard.md"
fi
