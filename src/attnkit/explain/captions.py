"""What each kind of report section shows: the captions under section headings and the ends of colour scales.

One caption per model kind, so a page says what its shading means for the model that drew it: a seq2seq page
never explains sentences and words, a HAN page never explains decoder rows.
"""

from __future__ import annotations

HAN = (
    "Hierarchical attention (Yang et al. 2016). The number before each sentence is its sentence-attention "
    "weight, shaded against the document's most attended sentence. Each word is shaded by its weight times its "
    "sentence's weight, against the largest such product in the document: the words of a sentence the model "
    "hardly attended to stay pale."
)
HAN_SCALE = "the document's largest word × sentence weight (words) or sentence weight (sentences)"
HAN_SENTENCE = (
    "Hierarchical attention (Yang et al. 2016). The number before each sentence is its sentence-attention "
    "weight, shaded against the document's most attended sentence. Each word is shaded against the most "
    "attended word of its own sentence, so every sentence has one darkest word, whatever the sentence's weight."
)
HAN_SENTENCE_SCALE = "the largest weight in the sentence (words) or the document (sentences)"

POOLING = (
    "Attention pooling. Each row is one pooling head: its weights over the tokens sum to 1 and make the text's "
    "vector. A token is shaded against the head's most attended token, so every row has one darkest token."
)
POOLING_SCALE = "the head's largest weight"

ALIGNMENT = (
    "Alignment. Row t is the decoder's attention over the source tokens (columns) while it wrote target "
    "token t; each row sums to 1. The colour bar runs from 0 to the largest weight in the matrix."
)
TRANSFORMER_ALIGNMENT = (
    "Alignment of the last decoder layer, averaged over its heads. Row t is the attention over the source "
    "tokens (columns) while the model wrote target token t; each row sums to 1. The colour bar runs from 0 to "
    "the largest weight in the matrix; every layer and head follows."
)

TRANSFORMER_GRID = (
    "Every layer and head of the Transformer. In each grid, a row of cells is one layer (first at the top) and a "
    "column one head; all cells of a grid share the colour bar beside it."
)
ENCODER_GRID = (
    "In each cell, row i is how source token i attended over the source tokens (columns); each row sums to 1."
)
DECODER_GRID = (
    "In each cell, row t is how target token t attended over the target tokens up to "
    "itself (columns); each row sums to 1."
)
CROSS_GRID = "In each cell, row t is how target token t attended over the source tokens (columns); each row sums to 1."
ROLLOUT = (
    "Attention rollout (Abnar & Zuidema 2020): each encoder layer's heads averaged, the residual connection "
    "added, and the layers multiplied. Row i is how much of each input token (columns) has flowed into "
    "position i after the last layer; each row sums to 1."
)

VISUAL = (
    "Visual attention. The image, then one picture per attention head: the head's weights over the CNN's "
    "feature grid, resized to the image and laid over it at 50% opacity, shaded against the head's largest "
    "weight (white where the head gave no attention, dark blue where it gave the most)."
)
VISUAL_SCALE = "the head's largest weight"
