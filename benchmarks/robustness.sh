#!/usr/bin/env bash
# Reproduces the robustness table of docs/benchmarks/measurements.md §9 ("Robustness (Cui et al. 2018 §3.4)"): every Flickr8k test caption
# against its image's other 4, transformed by RC / WP / RW at gamma = 0, 0.1, ..., 1 (seed 0), scored by BLEU-4,
# CIDEr-D, METEOR and SPICE; normalised mean-score curves and their AUC (lower = more robust).
# Usage: benchmarks/robustness.sh [OUT_DIR] [extra capeval robustness options, e.g. --images-limit 500]
# Needs the data (CAPEVAL_DATA_DIR, default ../shared/data) and spaCy (SPICE); no Java. Scores are cached
# under $CAPEVAL_CACHE_DIR and RC's image features in the feature cache, so a re-run only computes what is new.
set -euo pipefail
out="${1:-out/robustness}"
shift || true
mkdir -p "$out"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"   # a shared 2-core machine: see docs/benchmarks/measurements.md §7
/usr/bin/time -v capeval robustness --metrics bleu_4,cider_d,meteor,spice --json "$out/robustness.json" \
  --plot "$out/robustness.png" --markdown "$out/robustness.md" --progress "$@" 2> >(tee "$out/stderr.log" >&2) \
  | tee "$out/robustness.txt"
