"""The demo's stop-word share: the top-attended words of HAN and pooled predictions, counted by hand."""

from __future__ import annotations

import pytest

pytest.importorskip("sklearn", reason="the stop-word list comes from scikit-learn (the data extra)")

from attnkit.tasks.classify.attended_words import (
    english_stop_words,
    is_stop_or_punctuation,
    stop_word_share,
    top_attended_words,
)
from attnkit.tasks.classify.encoding import Prediction


def han(sentences, word_weights, sentence_weights) -> Prediction:
    return Prediction("t", "a", {"a": 1.0}, sentences=sentences, word_weights=word_weights,
                      sentence_weights=sentence_weights)  # fmt: skip


def pooled(tokens, token_weights) -> Prediction:
    return Prediction("t", "a", {"a": 1.0}, tokens=tokens, token_weights=token_weights)


def test_han_words_are_ranked_by_word_times_sentence_weight():
    prediction = han(
        [["the", "tea", "is", "great"], ["i", "don't", "like", "it", "."]],
        [[0.5, 0.25, 0.125, 0.125], [0.125, 0.5, 0.25, 0.0625, 0.0625]],
        [0.25, 0.75],
    )
    # document weights (exact in binary): the .125, tea .0625, is .03125, great .03125
    #                                      | i .09375, don't .375, like .1875, it .046875, . .046875
    assert top_attended_words(prediction, 3) == ["don't", "like", "the"]
    # scikit-learn's list holds "not" but no contraction: "don't" is not a stop word, "the" is
    assert stop_word_share([prediction], 3) == pytest.approx(1 / 3)
    assert top_attended_words(prediction, 9)[3:] == ["i", "tea", "it", ".", "is", "great"]  # ties: reading order
    assert stop_word_share([prediction], 5) == pytest.approx(2 / 5)


def test_pooled_tokens_average_the_heads_and_punctuation_counts():
    prediction = pooled(["great", ",", "the", "price", "!!"], [[0.1, 0.5, 0.0, 0.1, 0.3], [0.3, 0.3, 0.0, 0.4, 0.0]])
    # averaged: great .2, "," .4, the 0, price .25, "!!" .15
    assert top_attended_words(prediction, 3) == [",", "price", "great"]
    assert stop_word_share([prediction], 3) == pytest.approx(1 / 3)
    assert stop_word_share([prediction], 1) == 1.0


def test_the_share_is_a_mean_over_documents_and_short_documents_count_what_they_have():
    content = pooled(["great", "coffee", "bitter"], [[0.5, 0.3, 0.2]])
    function = pooled(["the", "and", "."], [[0.5, 0.3, 0.2]])
    one_word = pooled(["the"], [[1.0]])
    empty = pooled([], [[]])
    assert stop_word_share([content, function, one_word, empty], 3) == pytest.approx((0 + 1 + 1) / 3)
    with pytest.raises(ValueError, match="no document with a word"):
        stop_word_share([empty])
    with pytest.raises(ValueError, match="k must be >= 1"):
        top_attended_words(content, 0)
    with pytest.raises(ValueError, match="no attention weights"):
        top_attended_words(Prediction("t", "a", {"a": 1.0}))


def test_the_stop_word_list_is_scikit_learns():
    words = english_stop_words()
    assert {"the", "and", "it", "is", "not"} <= words and "great" not in words and "coffee" not in words
    assert is_stop_or_punctuation("The", words) and is_stop_or_punctuation("'", words)
    assert is_stop_or_punctuation("...", words) and not is_stop_or_punctuation("5", words)
    assert not is_stop_or_punctuation("don't", words)


def test_content_only_pooling_gives_stop_words_no_weight_and_the_encoder_still_reads_them():
    import torch

    from attnkit.models import PooledClassifier

    torch.manual_seed(0)
    model = PooledClassifier(10, 2, embed_dim=8, encoder=None, attend_content_only=True).eval()
    assert model.attendable.all()  # all True until the task sets it
    model.attendable[3] = False  # token 3: a stop word
    ids = torch.tensor([[5, 3, 6, 3, 0], [3, 3, 0, 0, 0]])
    mask = ids != 0
    out = model(ids, mask)
    weights = out.pooling.weights[:, 0]  # [B, T]
    assert (weights[0, [1, 3, 4]] == 0).all() and torch.isclose(weights[0].sum(), torch.tensor(1.0))
    assert (weights[1] == 0).all() and torch.isfinite(out.logits).all()  # nothing to attend to: a zero vector
    assert "attendable" in model.state_dict()  # saved with the weights


def test_content_only_han_masks_the_word_attention_only():
    import torch

    from attnkit.models import HierarchicalAttentionClassifier

    torch.manual_seed(0)
    model = HierarchicalAttentionClassifier(10, 2, embed_dim=8, word_hidden=4, sentence_hidden=4,
                                            attend_content_only=True).eval()  # fmt: skip
    model.attendable[3] = False
    ids = torch.tensor([[[5, 3, 6], [3, 3, 0]]])  # the second sentence holds only stop words
    word_mask = ids != 0
    out = model(ids, word_mask, word_mask.any(2))
    assert out.words.weights[0, 0, 1] == 0 and torch.isclose(out.words.weights[0, 0].sum(), torch.tensor(1.0))
    assert (out.words.weights[0, 1] == 0).all() and torch.isfinite(out.logits).all()
    # the BiGRU still reads the stop word: changing it changes the content words' encoding and the logits
    other = ids.clone()
    other[0, 0, 1] = 4
    model.attendable[4] = False
    assert (model(other, word_mask, word_mask.any(2)).logits - out.logits).abs().max() > 1e-6


def test_a_content_only_classifier_learns_its_table_from_the_tokenizer_and_keeps_it(tmp_path):
    import torch

    from attnkit.cli import main
    from attnkit.tasks.classify.attended_words import content_word_table
    from attnkit.tasks.classify.inference import load_classifier

    rows = [("the tea is great , and the price", "pos"), ("the tea is awful , and the price", "neg")] * 8
    train = tmp_path / "train.csv"
    train.write_text("text,label\n" + "\n".join(f'"{text}",{label}' for text, label in rows) + "\n")
    argv = ["train", "classify", "--data", str(train), "--model", "pooled", "--encoder", "none", "--attend",
            "content", "--epochs", "1", "--out", str(tmp_path / "run"), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    classifier = load_classifier(tmp_path / "run" / "best")
    tokenizer = classifier.encoder.tokenizer
    table = content_word_table(tokenizer)
    words = {tokenizer.id_to_token(i): bool(table[i]) for i in range(tokenizer.vocab_size)}
    assert words["tea"] and words["great"] and words["price"] and words[tokenizer.id_to_token(tokenizer.unk_id)]
    assert not words["the"] and not words[","] and not words["and"] and not table[tokenizer.pad_id]
    assert torch.equal(classifier.model.attendable, table)  # the checkpoint holds the table
    predictions = classifier.predict(["the tea is great , and the price"])
    assert stop_word_share(predictions, 3) == 0.0


def test_negations_and_other_sentiment_function_words_stay_attendable():
    """``--attend content`` must be able to shade "not" in "Not buying again" (issue #38)."""
    import torch

    from attnkit.data.classify.tokenization import TextTokenizer
    from attnkit.models import PooledClassifier
    from attnkit.tasks.classify.attended_words import SENTIMENT_FUNCTION_WORDS, content_stop_words, content_word_table

    kept = {"not", "no", "never", "n't", "nor", "without", "but"}
    assert kept <= SENTIMENT_FUNCTION_WORDS and not kept & content_stop_words()
    assert {"the", "and", "it", "is"} <= content_stop_words()
    assert not is_stop_or_punctuation("n't", content_stop_words()) and is_stop_or_punctuation("'", content_stop_words())
    texts = ["Not buying again .", "no sugar , never bitter , but nor sweet without milk n't"] * 2
    tokenizer = TextTokenizer.train(texts, vocab_size=100, min_frequency=1)
    table = content_word_table(tokenizer)
    attendable = {tokenizer.id_to_token(i).lower() for i in range(tokenizer.vocab_size) if table[i]}
    assert {"not", "no", "never", "but", "nor", "without", "buying"} <= attendable
    assert not {".", ",", "again"} & attendable  # punctuation, and a stop word with no polarity

    torch.manual_seed(0)
    model = PooledClassifier(tokenizer.vocab_size, 2, embed_dim=8, attend_content_only=True).eval()
    model.attendable.copy_(table)
    ids = torch.tensor([tokenizer.encode_batch(["Not buying again ."])[0]])
    weights = model(ids, ids != 0).pooling.weights[0, 0]
    assert weights[0] > 0 and weights[2] == 0 and weights[3] == 0  # "Not" is shaded, "again" and "." are not
    # the demo's share does not count an attended negation as a stop word
    prediction = pooled(["Not", "buying", "again", "."], [[0.5, 0.3, 0.2, 0.0]])
    assert stop_word_share([prediction], 2) == 0.0 and stop_word_share([prediction], 3) == pytest.approx(1 / 3)
