#!/usr/bin/env bash
# Issue 38 item 2: the selection rule's cells of the recommended critic (critic-flickr8k-joint, as critic_ref and as
# critic) re-measured with the critics' default since 2026-11-27, critic_oov=glove-map (the rule's tables were
# measured with unk). Same cells, statistics and bootstrap as benchmarks/select_defaults.sh; CIDEr-D in the same run
# with the paired interval of the difference (--compare).
#   benchmarks/oov_rerun.sh OUT_DIR [BOOTSTRAP]
set -euo pipefail
OUT=${1:?usage: oov_rerun.sh OUT_DIR [BOOTSTRAP]}
BOOT=${2:-1000}
mkdir -p "$OUT"
bench() {  # bench NAME BENCHMARK [bench flags...]
  local name=$1; shift
  echo "== $name: capeval bench $*" >&2
  /usr/bin/time -f "   $name: %e s wall, %M KB peak" capeval bench "$@" --bootstrap "$BOOT" --json "$OUT/$name.json" > /dev/null
}
for B in flickr8k-expert composite pascal50s thumb; do
  EXTRA=(); [ "$B" = flickr8k-expert ] && EXTRA=(--protocol clipscore)
  bench "$B-critic_ref" "$B" "${EXTRA[@]}" --metrics critic_ref,cider_d --critic-ref-model critic-flickr8k-joint \
    --critic-oov glove-map --compare critic_ref,cider_d
done
for B in flickr8k-expert composite pascal50s; do
  EXTRA=(); [ "$B" = flickr8k-expert ] && EXTRA=(--protocol clipscore); [ "$B" = composite ] && EXTRA=(--subset 8k)
  bench "$B-critic" "$B" "${EXTRA[@]}" --metrics critic,cider_d --critic-model critic-flickr8k-joint \
    --critic-oov glove-map --compare critic,cider_d
done
