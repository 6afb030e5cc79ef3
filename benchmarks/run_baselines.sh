#!/usr/bin/env bash
# Reproduces every `capeval bench` table in docs/benchmarks/measurements.md §2. Usage: benchmarks/run_baselines.sh [OUT_DIR]
# Needs the benchmark data (CAPEVAL_DATA_DIR, default ../shared/data). Per-item scores are cached
# under $CAPEVAL_CACHE_DIR, so re-running (or adding a metric) only computes what is new.
set -euo pipefail
out="${1:-out/baselines}"
mkdir -p "$out"
M="bleu_4,meteor,rouge_l,cider_d,spice,spice_u"
run() { local name="$1"; shift; echo "== capeval bench $*" | tee "$out/$name.txt"; capeval bench "$@" --json "$out/$name.json" --markdown "$out/$name.md" | tee -a "$out/$name.txt"; }
run flickr8k-expert-clipscore flickr8k-expert --metrics "$M" --protocol clipscore --plot "$out/flickr8k-expert.png"
run flickr8k-expert-cui       flickr8k-expert --metrics "$M" --protocol cui
run composite                 composite       --metrics "$M"
run pascal50s-expert          pascal50s       --metrics "$M" --refs expert --plot "$out/pascal50s.png"
run pascal50s-all             pascal50s       --metrics "$M" --refs all
run pascal50s-k5              pascal50s       --metrics "$M" --refs 5 --seed 0,1,2,3,4
run thumb                     thumb           --metrics "$M" --bootstrap 1000 --plot "$out/thumb.png"
if [ -f "${CAPEVAL_DATA_DIR:-../shared/data}/flickr8k/CrowdFlowerAnnotations.txt" ]; then
  run flickr8k-cf-cui flickr8k-cf --metrics "$M" --protocol cui
fi
