#!/usr/bin/env bash
# The GPU figures of the Ray and speed work, in one call on a lent GPU machine (results under $OUT, else out/device):
#   1. clip_s + ref_clip_s throughput against the reference procedure (benchmarks/clip_speed.py, float32; goal
#      >= 1,000 images/s on one GPU);
#   2. FLEUR's judge with the paper's LLaVA-1.5-13B shapes on random weights, capeval's batched generation against one
#      prompt per generate (benchmarks/fleur_speed.py; goal >= 5x);
#   3. score-dataset --engine ray with CLIP-S on a GPU actor against the default engine (benchmarks/ray_gpu_actors.py),
#      when Ray imports there (the device image has no Ray, and its wheel, 79 MB, is over one call's 64 MiB: say so).
# Needs the folder `bash benchmarks/clip_speed_bundle.sh 1000` packs (carried as .device/vl). DEVICE=cpu IMAGES=5
# FLEUR_SIZE=tiny rehearses it on a machine without a GPU.
set -uo pipefail
out=${OUT:-out/device}
mkdir -p "$out"
root=$(pwd)
device=${DEVICE:-cuda}
images=${IMAGES:-1000}
fleur_size=${FLEUR_SIZE:-13b}
export CAPEVAL_DATA_DIR=$root/.device/vl/data PYTHONPATH=$root/.device/vl/site:$root/modules PYTHONUNBUFFERED=1
export CAPEVAL_CACHE_DIR=/tmp/capeval-cache RAY_AUTH_MODE=disabled
py=$(command -v python3 || command -v python)
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 | tee "$out/gpu.csv"
timeout 240 "$py" benchmarks/clip_speed.py --images "$images" --device "$device" --work /tmp/clip-speed \
  --variants capeval,reference 2>&1 | tee "$out/clip-speed.jsonl"
timeout 240 "$py" benchmarks/fleur_speed.py --size "$fleur_size" --device "$device" --images 16 \
  --captions-per-image 5 --batch-size 16 2>&1 | tee "$out/fleur-speed.jsonl"
if "$py" -c "import ray, ray.data" 2>/dev/null; then
  timeout 240 "$py" benchmarks/ray_gpu_actors.py --checkpoint /tmp/clip-speed/vit-b-32-random.pt --images "$images" \
    --device "$device" --json "$out/ray-gpu-actors.json" 2>&1 | tee "$out/ray-gpu-actors.log"
else
  echo "ray is not importable here: the Ray route on GPU actors was not run" | tee "$out/ray-gpu-actors.log"
fi
