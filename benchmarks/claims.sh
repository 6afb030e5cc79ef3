#!/usr/bin/env bash
# Paired comparisons behind every "beats" in BENCHMARKS.md: the defaults (named explicitly) against CIDEr-D, SPICE and
# sentence_cosine, and REFERENCE §6's untrained floor against sentence_cosine, on each benchmark, 1,000 paired
# bootstrap resamples (95 % interval of the difference; "beats" = it excludes 0).
#   benchmarks/claims.sh OUT_DIR        (scores come from the cache that select_defaults.sh filled)
set -euo pipefail
OUT=${1:?usage: claims.sh OUT_DIR}
mkdir -p "$OUT"
FLOOR="blend:sentence_cosine+1/3*cider_d+1/3*spice+1/3*meteor"
MODELS=(--lceval-model lceval-caption-flickr8k-coco --lceval-plus-model lceval-plus-caption-flickr8k-coco
        --critic-ref-model critic-flickr8k-joint --critic-model critic-flickr8k-joint
        --critic-plus-model critic-flickr8k-plus)
cmp() {  # cmp A: --compare A,cider_d --compare A,spice --compare A,sentence_cosine
  echo --compare "$1,cider_d" --compare "$1,spice" --compare "$1,sentence_cosine"
}
run() {  # run NAME BENCHMARK [flags...]
  local name=$1; shift
  echo "== $name: capeval bench $*" >&2
  /usr/bin/time -f "   $name: %e s wall, %M KB peak" capeval bench "$@" "${MODELS[@]}" --bootstrap 1000 \
    --json "$OUT/$name.json" > "$OUT/$name.txt"
}
for B in flickr8k-expert composite pascal50s thumb; do
  EXTRA=(); [ "$B" = flickr8k-expert ] && EXTRA=(--protocol clipscore)
  # shellcheck disable=SC2046
  run "$B-text" "$B" "${EXTRA[@]}" --metrics "lceval,lceval_plus,critic_ref,cider_d,spice,sentence_cosine,$FLOOR" \
    $(cmp lceval) $(cmp critic_ref) $(cmp lceval_plus) --compare "$FLOOR,sentence_cosine"
done
for B in flickr8k-expert composite pascal50s; do
  EXTRA=(); [ "$B" = flickr8k-expert ] && EXTRA=(--protocol clipscore); [ "$B" = composite ] && EXTRA=(--subset 8k)
  # shellcheck disable=SC2046
  run "$B-img" "$B" "${EXTRA[@]}" --metrics "critic,critic_plus,cider_d,spice,sentence_cosine" \
    $(cmp critic) --compare critic_plus,sentence_cosine
done
