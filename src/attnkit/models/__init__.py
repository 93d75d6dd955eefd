"""Models people train (layer 4), built from the attention core. Each returns its attention weights on request."""

from attnkit.models.encoders import BiGRUEncoder, TransformerEncoder, TransformerEncoderLayer
from attnkit.models.ensemble import Seq2SeqEnsemble, Seq2SeqEnsembleOutput
from attnkit.models.han import HANOutput, HierarchicalAttentionClassifier
from attnkit.models.pooled import PooledClassifier, PooledClassifierOutput, build_pooling
from attnkit.models.rnn_decoders import BahdanauDecoder, LuongDecoder, PlainDecoder, RNNEncoder
from attnkit.models.rnn_seq2seq import ATTENTIONS, RNNSeq2Seq, RNNSeq2SeqOutput, build_rnn_attention, build_rnn_seq2seq
from attnkit.models.seq2seq import build_seq2seq
from attnkit.models.transformer.positions import PositionScheme, position_scheme
from attnkit.models.transformer.seq2seq import (
    TransformerDecoderLayer,
    TransformerSeq2Seq,
    TransformerSeq2SeqOutput,
    build_transformer_seq2seq,
)
from attnkit.models.visual import VisualAttentionClassifier, VisualAttentionOutput, visual_attention_classifier

__all__ = [
    "ATTENTIONS",
    "BahdanauDecoder",
    "BiGRUEncoder",
    "HANOutput",
    "HierarchicalAttentionClassifier",
    "LuongDecoder",
    "PlainDecoder",
    "PooledClassifier",
    "PooledClassifierOutput",
    "PositionScheme",
    "RNNEncoder",
    "RNNSeq2Seq",
    "RNNSeq2SeqOutput",
    "Seq2SeqEnsemble",
    "Seq2SeqEnsembleOutput",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "TransformerSeq2Seq",
    "TransformerSeq2SeqOutput",
    "VisualAttentionClassifier",
    "VisualAttentionOutput",
    "build_pooling",
    "build_rnn_attention",
    "build_rnn_seq2seq",
    "build_seq2seq",
    "build_transformer_seq2seq",
    "position_scheme",
    "visual_attention_classifier",
]
