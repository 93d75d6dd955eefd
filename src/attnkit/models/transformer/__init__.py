"""The Transformer encoder-decoder (layer 4): the model, its decoder layer, its position schemes, and the fast
decoding step beside its readable reference.

| module | holds |
|---|---|
| :mod:`~attnkit.models.transformer.seq2seq` | ``TransformerSeq2Seq`` and ``build_transformer_seq2seq`` |
| :mod:`~attnkit.models.transformer.decoder` | ``TransformerDecoderLayer`` and its one-token ``decode_token`` |
| :mod:`~attnkit.models.transformer.positions` | ``PositionScheme``: one object per scheme name |
| :mod:`~attnkit.models.transformer.fast_step` | ``decode_token``'s fast twin: a flat run of kernels |
| :mod:`~attnkit.models.transformer.fast_linear` | the fast step's linear maps (dense or int8) |
"""

from attnkit.models.transformer.positions import POSITION_SCHEMES, PositionScheme, position_scheme
from attnkit.models.transformer.seq2seq import (
    TransformerDecoderLayer,
    TransformerSeq2Seq,
    TransformerSeq2SeqOutput,
    build_transformer_seq2seq,
)

__all__ = [
    "POSITION_SCHEMES",
    "PositionScheme",
    "TransformerDecoderLayer",
    "TransformerSeq2Seq",
    "TransformerSeq2SeqOutput",
    "build_transformer_seq2seq",
    "position_scheme",
]
