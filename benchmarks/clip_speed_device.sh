#!/usr/bin/env bash
# clip_s + ref_clip_s on a lent GPU machine (issue 37 item 8): benchmarks/clip_speed.py over the folder that
# `bash benchmarks/clip_speed_bundle.sh 1000` packed (carried as .device/vl): float32 against the reference procedure,
# torchmetrics and clip_s alone, then float16 (clipscore.py's own GPU path) against the reference in float16.
# Results under $OUT (else out/device). DEVICE=cpu IMAGES=5 rehearses it on a machine without a GPU.
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
"$py" benchmarks/clip_speed.py --images "$images" --device "$device" --work /tmp/clip-speed \
  --variants capeval,capeval-clip_s,reference,torchmetrics --scores-out "$out/scores-fp32.json" ${PROFILE:+--profile-out "$out"} 2>&1 | tee "$out/clip-speed-fp32.jsonl"
if [ "$device" != cpu ]; then
  "$py" benchmarks/clip_speed.py --images "$images" --device "$device" --dtype float16 --work /tmp/clip-speed \
    --variants capeval,reference --scores-out "$out/scores-fp16.json" 2>&1 | tee "$out/clip-speed-fp16.jsonl"
fi
