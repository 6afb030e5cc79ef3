#!/usr/bin/env bash
# Retired models (2026-11-26, issue 28): critic-flickr8k-robust, critic-flickr8k-hard, critic-flickr8k-ensemble and
# lceval-plus-flickr8k-coco no longer ship (docs/models/retired/). The steps that read them ran at or before commit
# 96ca0a9; to rerun them, export their folders from that commit into a folder and set CAPEVAL_MODELS_DIR to it.
# Reproduces the LCEval numbers of docs/benchmarks/measurements.md §11: the shipped lceval / lceval_plus networks (trained on COCO Karpathy
# test + Flickr8k train pairs, every reported benchmark's images left out), the feature-group ablation (Table 5),
# the benchmark rows of lceval, lceval_released and lceval_plus, and the speed benchmark.
# Usage: benchmarks/lceval.sh [OUT_DIR]   (CAPEVAL_DATA_DIR, default ../shared/data; the captioner outputs for the
# Flickr8k train images from benchmarks/critic.sh step 2 at $CRITIC/system-train.jsonl and samples-train.jsonl)
set -euo pipefail
out="${1:-out/lceval}"
critic="${CRITIC:-out/critic}"
mkdir -p "$out"
export OMP_NUM_THREADS=1   # a shared 2-core machine: see docs/benchmarks/measurements.md §7
machine=(--machine-captions "$critic/system-train.jsonl" "$critic/samples-train.jsonl")
train=(--rc-per-image 3 --epochs 200 --patience 20 --seed 0 --progress)
# 1. the networks (features are cached per caption and references: the second command reuses the first's)
capeval lceval train "${machine[@]}" "${train[@]}" --out "$out/lceval-flickr8k-coco"
capeval lceval train "${machine[@]}" "${train[@]}" --plus --out "$out/lceval-plus-flickr8k-coco"
capeval lceval train "${machine[@]}" --rc-per-image 0 --epochs 200 --patience 20 --seed 0 --out "$out/lceval-paper-pairs"
# 2. ship them (config.json + model.safetensors + training.json)
for name in lceval-flickr8k-coco lceval-plus-flickr8k-coco; do
  mkdir -p "modules/capeval/pretrained/$name"
  cp "$out/$name/config.json" "$out/$name/model.safetensors" "$out/$name/training.json" "modules/capeval/pretrained/$name/"
done
# 3. the ablation (paper Table 5; seven networks on the same training features)
capeval lceval ablate "${machine[@]}" "${train[@]}" --out "$out/ablation" --json "$out/ablation.json"
# 4. benchmark rows
m=lceval,lceval_released,lceval_plus
capeval bench composite --metrics "$m,spice,cider_d" --json "$out/composite.json" | tee "$out/composite.txt"
capeval bench pascal50s --refs expert --metrics "$m,cider_d,meteor" --json "$out/pascal50s.json" | tee "$out/pascal50s.txt"
capeval bench flickr8k-expert --protocol clipscore --metrics "$m,cider_d,spice" --json "$out/f8k-clipscore.json" \
  | tee "$out/f8k-clipscore.txt"
capeval bench flickr8k-expert --protocol cui --metrics "$m,cider_d,spice" --json "$out/f8k-cui.json" | tee "$out/f8k-cui.txt"
capeval bench thumb --metrics "$m,cider_d,spice" --json "$out/thumb.json" | tee "$out/thumb.txt"
# the paper's pairs only (no mismatched negatives), for comparison
pp=(--metrics lceval --lceval-model "$out/lceval-paper-pairs")
capeval bench composite "${pp[@]}" | tee "$out/pp-composite.txt"
capeval bench pascal50s --refs expert "${pp[@]}" | tee "$out/pp-pascal50s.txt"
capeval bench flickr8k-expert --protocol clipscore "${pp[@]}" | tee "$out/pp-f8k-clipscore.txt"
# ABSTRACT-50S: needs <data dir>/abstract50s/ (not in shared/data)
[ -d "${CAPEVAL_DATA_DIR:-../shared/data}/abstract50s" ] && \
  capeval bench abstract50s --metrics "$m,cider_d" --json "$out/abstract50s.json" | tee "$out/abstract50s.txt"
# 5. speed and memory (PASCAL-50S, cold / warm-references / warm)
PYTHONPATH=modules python benchmarks/lceval_speed.py --json "$out/speed.json"
PYTHONPATH=modules python benchmarks/lceval_speed.py --candidates first --json "$out/speed-first.json"   # the 4,000 first candidates
# 6. LCEval+ with critic-coco-ref as its critic feature (docs/benchmarks/measurements.md §11; not shipped: dev loss .345 > .312)
capeval lceval train "${machine[@]}" "${train[@]}" --plus --extra-critic critic-coco-ref --out "$out/lceval-plus-coco"
pc=(--metrics lceval_plus --lceval-plus-model "$out/lceval-plus-coco")
capeval bench pascal50s --refs expert "${pc[@]}" | tee "$out/plus-coco-pascal50s.txt"
capeval bench composite "${pc[@]}" --json "$out/plus-coco-composite.json" | tee "$out/plus-coco-composite.txt"
for p in clipscore cui; do capeval bench flickr8k-expert --protocol $p "${pc[@]}" | tee "$out/plus-coco-f8k-$p.txt"; done
capeval bench thumb "${pc[@]}" | tee "$out/plus-coco-thumb.txt"
# 7. the caption-level networks (docs/benchmarks/measurements.md §11, shipped): human vs mismatched captions only (Cui et al. 2018 §4.4),
#    no machine captions; LCEval+ reads critic-coco-ref (trained on none of these images)
cap=(--negatives mismatched --rc-per-image 3 --epochs 200 --patience 20 --seed 0 --progress)
capeval lceval train "${cap[@]}" --out "$out/lceval-caption-flickr8k-coco"
capeval lceval train "${cap[@]}" --plus --extra-critic critic-coco-ref --out "$out/lceval-plus-caption-flickr8k-coco"
for name in lceval-caption-flickr8k-coco lceval-plus-caption-flickr8k-coco; do
  mkdir -p "modules/capeval/pretrained/$name"
  cp "$out/$name/config.json" "$out/$name/model.safetensors" "$out/$name/training.json" "modules/capeval/pretrained/$name/"
done
for pair in "lceval --lceval-model lceval-caption-flickr8k-coco" \
            "lceval_plus --lceval-plus-model lceval-plus-caption-flickr8k-coco"; do
  set -- $pair
  tag="${3%-flickr8k-coco}"
  capeval bench pascal50s --refs expert --metrics $pair | tee "$out/$tag-pascal50s.txt"
  capeval bench composite --metrics $pair | tee "$out/$tag-composite.txt"
  for p in clipscore cui; do capeval bench flickr8k-expert --protocol $p --metrics $pair | tee "$out/$tag-f8k-$p.txt"; done
  capeval bench thumb --metrics $pair | tee "$out/$tag-thumb.txt"
  if [ -d "${CAPEVAL_DATA_DIR:-../shared/data}/abstract50s" ]; then
    capeval bench abstract50s --metrics $pair | tee "$out/$tag-abstract50s.txt"
  fi
done
