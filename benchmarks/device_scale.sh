#!/usr/bin/env bash
# The learned metrics on a lent GPU machine (issue 30 item 5): benchmarks/learned_scale.py over the folder that
# `python benchmarks/device_bundle.py --part PART` packed (carried as .device/PART), with CUDA in float32, CUDA under
# float16 autocast, CUDA with larger batches and that machine's own CPU cores; results under $OUT (else out/device).
#   bash benchmarks/device_scale.sh image   # image features, critic, critic_img on the packed Flickr8k images
#   bash benchmarks/device_scale.sh text    # sentence_cosine and critic_ref on those captions and Karpathy test
set -uo pipefail
part=${1:?image or text}
out=${OUT:-out/device}
mkdir -p "$out"
root=$(pwd)
gpu=${GPU:-cuda}  # GPU=cpu rehearses the script on a machine without one
export CAPEVAL_DATA_DIR=$root/.device/$part/data PYTHONPATH=$root/.device/$part/site:$root/modules${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
py=$(command -v python3 || command -v python)
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$out/gpu-$part.csv"
"$py" -c "import os, torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'cpus', os.cpu_count())"
if [ "$part" = image ]; then
  variants='[{"name": "cuda-fp32", "device": "'$gpu'"},
             {"name": "cuda-fp16", "device": "'$gpu'", "autocast": "float16"},
             {"name": "cuda-fp32-big", "device": "'$gpu'", "image_batch_size": 256, "options": {"critic_batch_size": 16384}},
             {"name": "cpu", "device": "cpu"}]'
  only=image_features,critic,critic_img
  workloads=flickr8k
else
  enc=$root/.device/text/minilm-fp16
  variants='[{"name": "cuda-fp32", "device": "'$gpu'", "options": {"sentence_cosine_encoder": "'$enc'"}},
             {"name": "cuda-fp16", "device": "'$gpu'", "autocast": "float16", "options": {"sentence_cosine_encoder": "'$enc'"}},
             {"name": "cuda-fp32-big", "device": "'$gpu'", "options": {"sentence_cosine_encoder": "'$enc'",
              "sentence_cosine_batch_size": 1024, "critic_batch_size": 16384}},
             {"name": "cpu", "device": "cpu", "options": {"sentence_cosine_encoder": "'$enc'"}}]'
  only=sentence_cosine,critic_ref
  workloads=flickr8k,karpathy
fi
"$py" benchmarks/learned_scale.py --workloads "$workloads" --only "$only" --states cold --again --keep-going --limit "${LIMIT:-0}" \
  --variants "$variants" --json "$out/scale-$part.json" 2> "$out/rows-$part.log"
