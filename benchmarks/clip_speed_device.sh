#!/usr/bin/env bash
# clip_s + ref_clip_s on a lent GPU machine (issues 37 item 8 and 39 item 6): benchmarks/clip_speed.py over the folder
# that `bash benchmarks/clip_speed_bundle.sh 1000` packed (carried as .device/vl): float32 against the reference
# procedure, torchmetrics and clip_s alone (capeval also timed a second time in the same process with every cache
# emptied), capeval's time per part of its pipeline (--breakdown, cProfile), the host side alone (capeval-host),
# capeval with one part of its pipeline changed at a time (Pillow for every image, texts after images), float16
# (clipscore.py's own GPU path) against the reference in float16 and float16's parts (--breakdown, cProfile), the
# GPU-only parity tests (where pytest is installed), then `capeval score-dataset` on the same rows
# (benchmarks/score_dataset_images.py). Results under $OUT (else out/device). DEVICE=cpu IMAGES=5 rehearses it on a
# machine without a GPU. The checkout travels whole: with hub_models/ (62 MB of tracked Hub mirrors) it is over the
# device's 64 MiB, so move that folder out of the checkout for the call (nothing here reads it) and back after.
set -uo pipefail
out=${OUT:-out/device}
mkdir -p "$out"
root=$(pwd)
device=${DEVICE:-cuda}
images=${IMAGES:-1000}
export CAPEVAL_DATA_DIR=$root/.device/vl/data PYTHONPATH=$root/.device/vl/site:$root/modules PYTHONUNBUFFERED=1
export CAPEVAL_CACHE_DIR=/tmp/capeval-cache
py=$(command -v python3 || command -v python)
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 | tee "$out/gpu.csv"
"$py" -c "import os, torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'cpus', os.cpu_count())"
speed() { timeout 240 "$py" benchmarks/clip_speed.py --images "$images" --device "$device" --work /tmp/clip-speed "$@"; }
speed --variants capeval,capeval-clip_s,reference,torchmetrics --again --scores-out "$out/scores-fp32.json" 2>&1 \
  | tee "$out/clip-speed-fp32.jsonl"
# the pipeline's parts, one at a time (capeval only; same weights and images)
# where the time goes: each part's seconds (--breakdown) and the main thread's cProfile listing
speed --variants capeval --again --breakdown --profile-out "$out/profile" 2>&1 | tee "$out/clip-speed-knobs.jsonl"
# the host side alone (the model's batches and the pixel lookup return at once): what this machine's CPUs allow
speed --variants capeval-host --again --breakdown 2>&1 | tee -a "$out/clip-speed-knobs.jsonl"
speed --variants capeval --again --no-fast-jpeg 2>&1 | tee -a "$out/clip-speed-knobs.jsonl"
speed --variants capeval --again --no-overlap 2>&1 | tee -a "$out/clip-speed-knobs.jsonl"
if [ "$device" != cpu ]; then
  speed --dtype float16 --variants capeval,reference --again --scores-out "$out/scores-fp16.json" 2>&1 \
    | tee "$out/clip-speed-fp16.jsonl"
  # float16 was slower than float32 cold (3.65 vs 1.70 s) and warm (2.15 vs 1.56 s): where its time goes
  speed --dtype float16 --variants capeval --again --breakdown --profile-out "$out/profile-fp16" 2>&1 \
    | tee -a "$out/clip-speed-fp16.jsonl"
fi
# the GPU-only parity test (the GPU's scores are the CPU's), where the machine has pytest
if "$py" -c "import pytest, hypothesis" 2>/dev/null; then
  timeout 120 "$py" -m pytest -q -p no:cacheprovider tests/vision_language/test_parity.py -k "gpu or pinned or rounds" \
    2>&1 | tail -n 5 | tee "$out/gpu-tests.txt"
else
  echo "pytest or hypothesis missing here: GPU tests not run" | tee "$out/gpu-tests.txt"
fi
timeout 240 "$py" benchmarks/score_dataset_images.py --checkpoint /tmp/clip-speed/vit-b-32-random.pt --images "$images" \
  --device "$device" --chunk-size 1000 --json "$out/score-dataset-images.json" 2>&1 | tail -n 3
