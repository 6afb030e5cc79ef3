"""Which training objective suits LCEval's features: a quick comparison behind docs/benchmarks/measurements.md §11's note.

Usage (after `benchmarks/lceval.sh` step 1, whose training features it reads back from the feature cache):
    PYTHONPATH=modules OMP_NUM_THREADS=1 python benchmarks/lceval_objectives.py

The same 16 features of the training pairs with 3 mismatched negatives per image (seed 0), one 12-unit network per
objective (Adam 2e-3, batch 75, 30 epochs, weight decay 1e-4, seed 0; no dev selection: a comparison, not a model):
human vs everything else (capeval's ``lceval``), human vs mismatched only, soft labels 0.5 / 0.75 for machine
captions, and everything matched vs mismatched. Prints COMPOSITE τ-b (against the mean judgment), PASCAL-50S HC /
HI / HM / MM accuracy (EXPERT references) and Flickr8k-Expert τ-b (against the mean expert score).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "modules"))
import numpy as np, torch, json
from capeval.corpora.lceval_pairs import build_training_set, pair_features
from capeval.meta_evaluation.lceval_ablation import benchmark_features
from capeval.judgments import load_benchmark
from capeval.judgments.stats import correlation, pairwise_credit
from capeval.lceval.features import FeatureExtractor
torch.set_num_threads(1)
ts = build_training_set(None, machine_captions=["out/critic/system-train.jsonl", "out/critic/samples-train.jsonl"], rc_per_image=3)
sys_t = np.array([p.system for p in ts.train]); sys_d = np.array([p.system for p in ts.dev])
ex = FeatureExtractor()
d = {"xt": pair_features(ts.train, ex)[0]}
ev = {n: benchmark_features(load_benchmark(n, None, **kw), ex) for n, kw in [("composite", {}), ("pascal50s", {}), ("flickr8k-expert", {"protocol": "clipscore"})]}
def evaluate(f):
    out = {}
    for n, e in ev.items():
        if "x" in e:
            out[n] = round(correlation(e["human"], f(e["x"]), "kendall_b"), 4)
        else:
            c, m = pairwise_credit(f(e["a"]), f(e["b"]), e["preferred"]); cats = np.array(e["category"])
            out[n] = [round(100 * c[(cats == k) & m].mean(), 1) for k in ("HC", "HI", "HM", "MM")]
    return out
def train(x, y, epochs=30, hidden=12, seed=0):
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(16, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1))
    opt = torch.optim.Adam(net.parameters(), lr=2e-3, weight_decay=1e-4)
    X = torch.tensor(x, dtype=torch.float32); Y = torch.tensor(y, dtype=torch.float32)
    for ep in range(epochs):
        perm = torch.randperm(len(X))
        for s in range(0, len(X), 75):
            i = perm[s:s+75]
            loss = torch.nn.functional.binary_cross_entropy_with_logits(net(X[i]).squeeze(1), Y[i])
            opt.zero_grad(); loss.backward(); opt.step()
    return lambda z: net(torch.tensor(z, dtype=torch.float32)).detach().numpy().ravel()
xt = d["xt"]
human = sys_t == "human"; mism = sys_t == "mismatched"; mach = ~human & ~mism
for name, mask, lab in [("human-vs-rest", np.ones(len(xt), bool), human.astype(float)),
                        ("human-vs-mismatched", human | mism, human.astype(float)),
                        ("soft-machine-0.5", np.ones(len(xt), bool), np.where(human, 1.0, np.where(mach, 0.5, 0.0))),
                        ("soft-machine-0.75", np.ones(len(xt), bool), np.where(human, 1.0, np.where(mach, 0.75, 0.0))),
                        ("nonmismatched-vs-mismatched", np.ones(len(xt), bool), (~mism).astype(float))]:
    f = train(xt[mask], lab[mask])
    print(name, evaluate(f), flush=True)
print("spice", evaluate(lambda z: z[:, 8]), "meteor", evaluate(lambda z: z[:, 6]), flush=True)
