"""Training corpora: every reader of original files that builds what a model trains, tunes or selects on, in one room.

* :mod:`.captions`: caption corpora by name (Flickr8k train / dev / test, COCO train2014 minus every evaluation image,
  the Karpathy test references), :func:`~.captions.flickr8k_captions` (``{image: [5 captions]}`` of a Flickr8k split);
* :mod:`.held_out`: the images of the benchmarks capeval reports, which no training set may hold;
* :mod:`.coco_train2014`: COCO train2014's captions as a text-only corpus for reference-context critics (benchmark
  images left out, a seeded dev split) and its caption-vector neighbour table;
* :mod:`.lceval_pairs`: LCEval's training pairs (human vs machine or mismatched captions, benchmarks left out).

It sits with :mod:`capeval.judgments` (it reads the benchmark loaders to leave their images out, and
``capeval robustness`` reads Flickr8k test through it); models and metrics receive its output as plain data and never
import it. See ``docs/architecture.md``.
"""
