"""Train a cross-encoder reranker from the embedding model's encoder (``factsieve train-reranker``):
mine hard negatives from the first stage on training queries only, fit here or on an accelerator
box (pack / import), and write the model folder with its manifest. The split, the negatives and
the steps: ``docs/design/reranker.md``.

Needs torch and transformers: ``pip install 'factsieve[train]'``. Inference does not. Nothing in
this package imports our API stack at module level, so the accelerator box needs only torch.
"""
from plugin.lab.reranker.export import INT8_MIN_SPEARMAN, TrainingRecord, finish, output_dir, spearman
from plugin.lab.reranker.fit import fit_reranker, load_torch, prepare, train_epochs
from plugin.lab.reranker.groups import (EncodedGroup, GroupSource, encode_groups, epoch_batches,
                                        export_groups, load_groups, mine, sample_epoch, save_groups)
from plugin.lab.reranker.importer import import_weights
from plugin.lab.reranker.options import FIRST_STAGE, LOSSES, MiningOptions, TrainOptions
from plugin.lab.reranker.pack import pack_for_remote, train_packed, write_pack
from plugin.learn.train.groups import TrainingGroup, mine_groups, sha1_digit, training_query_ids

__all__ = ["FIRST_STAGE", "INT8_MIN_SPEARMAN", "LOSSES", "EncodedGroup", "GroupSource",
           "MiningOptions", "TrainOptions", "TrainingGroup", "TrainingRecord", "encode_groups",
           "epoch_batches", "export_groups", "finish", "fit_reranker", "import_weights",
           "load_groups", "load_torch", "mine", "mine_groups", "output_dir", "pack_for_remote",
           "prepare", "sample_epoch", "save_groups", "sha1_digit", "spearman", "train_epochs",
           "train_packed", "training_query_ids", "write_pack"]
