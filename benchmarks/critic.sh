#!/usr/bin/env bash
# Reproduces the critic numbers of BENCHMARKS.md §9: machine captions of Flickr8k from capeval's captioner, the
# shipped critics (trained on Flickr8k train only; dev selects the epoch), their benchmark rows, the per-system
# 2-fold protocol and the scoring speed.
# Usage: benchmarks/critic.sh [OUT_DIR]   (CAPEVAL_DATA_DIR, default ../shared/data; the Flickr8k grid features of
# benchmarks/learned_foundation.sh step 1 at $LEARNED/grid224.safetensors)
set -euo pipefail
out="${1:-out/critic}"
learned="${LEARNED:-out/learned}"
mkdir -p "$out"
export OMP_NUM_THREADS=1   # a shared 2-core machine: see BENCHMARKS.md §7
# 1. pooled features (the mean of the 7x7 grid = EfficientNet-Lite0's pooled features, to 1e-3)
[ -f "$out/pooled224.safetensors" ] || python - "$learned/grid224.safetensors" "$out/pooled224.safetensors" <<'PY'
import sys
from capeval.models.feature_table import FeatureTable
FeatureTable.load(sys.argv[1]).pooled().save(sys.argv[2])
PY
# 2. machine negatives: beam-3 captions (the 'system') and 5 Monte-Carlo samples per image from the shipped captioner
for s in train dev test; do
  [ -f "$out/system-$s.jsonl" ] || capeval captioner generate --split $s --features "$learned/grid224.safetensors" \
    --num-beams 3 --out "$out/system-$s.jsonl"
done
for s in train dev; do
  [ -f "$out/samples-$s.jsonl" ] || capeval captioner generate --split $s --features "$learned/grid224.safetensors" \
    --samples 5 --seed 0 --out "$out/samples-$s.jsonl"
done
# 3. the critics
common=(--features "$out/pooled224.safetensors" --system "$out/system-train.jsonl" --samples "$out/samples-train.jsonl"
        --dev-system "$out/system-dev.jsonl" --dev-samples "$out/samples-dev.jsonl" --epochs 10 --patience 3)
capeval critic train "${common[@]}" --out "$out/critic-flickr8k" --context image+reference
capeval critic train --features "$out/pooled224.safetensors" --out "$out/critic-rc" --context image+reference \
  --mix caption --epochs 10 --patience 3
# 4. the reference-only and image-only critics (paper mix)
capeval critic train "${common[@]}" --out "$out/critic-flickr8k-ref" --context reference
capeval critic train "${common[@]}" --out "$out/critic-flickr8k-img" --context image
# 5. ship: float16 weights (half the size; loaded back as float32), vocabulary, training log
for pair in critic-flickr8k:critic-flickr8k critic-rc:critic-flickr8k-caption critic-flickr8k-ref:critic-flickr8k-ref \
            critic-flickr8k-img:critic-flickr8k-img; do
  python - "$out/${pair%%:*}" "modules/capeval/pretrained/${pair##*:}" <<'PY'
import shutil, sys
from pathlib import Path
from capeval.critic.model import CriticModel
src, dst = Path(sys.argv[1]), Path(sys.argv[2])
CriticModel.from_pretrained(src).half().save_pretrained(dst)
for name in ("vocab.json", "training.json"):
    shutil.copy2(src / name, dst / name)
PY
done
