#!/usr/bin/env bash
# Pack what benchmarks/clip_speed.py needs on a lent GPU machine into .device/vl (ignored; carried with `carry`):
# the first N Flickr8k test images (images-224) with the token file and split list, and the pure-Python packages the
# device image lacks (open_clip, ftfy, wcwidth, OpenAI's clip). Usage: bash benchmarks/clip_speed_bundle.sh [N]
set -euo pipefail
n=${1:-1000}
data=${CAPEVAL_DATA_DIR:-../shared/data}
out=.device/vl
rm -rf "$out"; mkdir -p "$out/data/flickr8k/images-224" "$out/site"
head -n "$n" "$data/flickr8k/Flickr_8k.testImages.txt" > "$out/data/flickr8k/Flickr_8k.testImages.txt"
cp "$data/flickr8k/Flickr8k.token.txt" "$out/data/flickr8k/"
while read -r name; do cp "$data/flickr8k/images-224/$name" "$out/data/flickr8k/images-224/"; done \
  < "$out/data/flickr8k/Flickr_8k.testImages.txt"
site=$(python -c "import open_clip, os; print(os.path.dirname(os.path.dirname(open_clip.__file__)))")
for pkg in open_clip ftfy wcwidth clip; do cp -r "$site/$pkg" "$out/site/"; done
find "$out/site" -name __pycache__ -prune -exec rm -rf {} +
du -sh "$out"
