"""Train a cross-encoder reranker from the embedding model's encoder (``factsieve train-reranker``).

No real cross-encoder can be downloaded here, so we fine-tune one: the encoder of the embedding
model (the rebuilt multilingual-e5-small, or any local ``BertModel`` folder) becomes a
``BertForSequenceClassification`` with one logit (``<s>`` token → pooler → classifier, as
sentence-transformers' ``CrossEncoder`` expects), trained on (query, fact-check) pairs.

**Split.** Only *training queries* are ever read: when the dataset's queries carry a ``split``
field, those with ``split == "train"`` (CLEF-2020 Task 2: 546 of the 816 queries in
``../shared``); otherwise those whose ``sha1(query id as written, UTF-8)`` hex digest starts with
``0``–``9``. The other queries (CLEF-2020: the original dev and test tweets, 270) are never
matched, tokenised or looked at, and the datasets' holdout queries (``sha1`` digit ``0``–``4``,
kept outside ``shared/``) are not even on disk. The manifest ``factsieve_reranker.json`` lists
the training query ids so an evaluation can exclude them.

**Negatives** are mined from the first stage the reranker will sit behind: ``Matcher`` with the
``factsieve`` configuration (``--first-stage``) in crosslingual mode over the dataset's
evaluation index, taking the highest-ranked fact-checks that are not relevant to the query. Each
epoch samples ``negatives`` of them from the top ``pool`` for each (query, positive) group.
Passages are ``rerank.passage`` (title + claim) exactly as ``Matcher`` hands them to a reranker,
and queries are normalised as ``Matcher`` does.

**Steps**, one module and one subcommand each:

- ``mine`` (``groups``): training groups with hard negatives, to a file (OpenSearch, no torch);
- ``fit`` (``fit``): train here, on CPU or CUDA (``--device``), and write the model folder
  (``export``: safetensors, ONNX, an int8 copy when it ranks like fp32, the manifest);
- ``pack`` (``pack``): a small torch-only training bundle (vocabulary cut to the tokens the
  groups use), which ``scripts/train_reranker_remote.py`` trains on an accelerator box;
- ``import`` (``importer``): the weights it wrote back, finished into the model folder here.

That is how the CLEF-2020 reranker was trained (an H100 lent for the session; see the
manifest's ``trained_on``). Hyper-parameters are a ``TrainOptions``; mining's a ``MiningOptions``.

Needs torch and transformers: ``pip install 'factsieve[train]'``. Inference does not. Nothing in
this package imports our API stack at module level, so the accelerator box needs only torch.
"""
from plugin.lab.reranker.export import INT8_MIN_SPEARMAN, TrainingRecord, finish, output_dir, spearman
from plugin.lab.reranker.fit import fit_reranker, load_torch, prepare, train_epochs
from plugin.lab.reranker.groups import (EncodedGroup, GroupSource, TrainingGroup, encode_groups,
                                        epoch_batches, export_groups, load_groups, mine, mine_groups,
                                        sample_epoch, save_groups, sha1_digit, training_query_ids)
from plugin.lab.reranker.importer import import_weights
from plugin.lab.reranker.options import FIRST_STAGE, LOSSES, MiningOptions, TrainOptions
from plugin.lab.reranker.pack import pack_for_remote, train_packed, write_pack

__all__ = ["FIRST_STAGE", "INT8_MIN_SPEARMAN", "LOSSES", "EncodedGroup", "GroupSource",
           "MiningOptions", "TrainOptions", "TrainingGroup", "TrainingRecord", "encode_groups",
           "epoch_batches", "export_groups", "finish", "fit_reranker", "import_weights",
           "load_groups", "load_torch", "mine", "mine_groups", "output_dir", "pack_for_remote",
           "prepare", "sample_epoch", "save_groups", "sha1_digit", "spearman", "train_epochs",
           "train_packed", "training_query_ids", "write_pack"]
