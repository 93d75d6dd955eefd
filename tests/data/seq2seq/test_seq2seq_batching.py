"""Tokenisers (symbol vocabulary, BPE), their files, and the collate/sampler path to Seq2SeqBatch."""

import json

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attnkit.data.seq2seq import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    UNK_ID,
    DataError,
    PairDataset,
    Seq2SeqData,
    SubwordTokenizer,
    Vocab,
    build_tokenizers,
    collate_pairs,
    encode_pairs,
    load_tokenizer,
    load_tokenizers,
    make_loader,
    save_tokenizers,
)


# --- symbol vocabulary --------------------------------------------------------------------------------------
def test_vocab_specials_and_frequency_order():
    vocab = Vocab.build(["abca", "cab"], level="char")
    assert vocab.symbols == ["<pad>", "<bos>", "<eos>", "<unk>", "a", "b", "c"]  # a:3, then b/c:2 by symbol
    assert (vocab.pad_id, vocab.bos_id, vocab.eos_id, vocab.unk_id) == (0, 1, 2, 3)
    assert vocab.encode("abz") == [4, 5, UNK_ID]
    assert vocab.tokens("abz") == ["a", "b", "<unk>"]


def test_vocab_symbol_level_decode_stops_at_eos():
    vocab = Vocab.build(["HH AH L OW", "W ER L D"], level="symbol")
    ids = vocab.encode("HH AH L OW")
    assert vocab.decode([BOS_ID, *ids, EOS_ID, *vocab.encode("W"), PAD_ID]) == "HH AH L OW"
    assert vocab.decode([PAD_ID, *ids, PAD_ID]) == "HH AH L OW"
    assert Vocab.build(["a b"], level="char").decode(Vocab.build(["a b"], level="char").encode("a b")) == "a b"


def test_vocab_min_count_and_max_size():
    assert Vocab.build(["aab"], level="char", min_count=2).symbols[4:] == ["a"]
    assert Vocab.build(["aabbc"], level="char", max_size=2).symbols[4:] == ["a", "b"]


def test_vocab_json_round_trip(tmp_path):
    vocab = Vocab.build(["AH B", "K AE T"], level="symbol")
    path = vocab.save(tmp_path / "v.json")
    content = json.loads(path.read_text())  # plain JSON, never a pickle
    assert content == {"format": "attnkit.vocab", "level": "symbol", "symbols": vocab.symbols[4:]}
    assert Vocab.load(path) == vocab
    assert load_tokenizer(path) == vocab


@pytest.mark.parametrize(
    ("symbols", "level", "message"),
    [(["<pad>"], "char", "special"), (["a", "a"], "char", "distinct"), (["ab"], "char", "one character"),
     (["a b"], "symbol", "whitespace"), (["a"], "word", "level")],
)  # fmt: skip
def test_vocab_rejects_bad_symbols(symbols, level, message):
    with pytest.raises(ValueError, match=message):
        Vocab(symbols, level=level)


# --- subword tokenizer --------------------------------------------------------------------------------------
CORPUS = [
    "In the beginning God created the heaven and the earth.",
    "En el principio crió Dios los cielos y la tierra.",
    "¿Quién puso por cuenta los cielos con sabiduría?",
    "And God said, Let there be light: and there was light.",
] * 3


@pytest.fixture(scope="module")
def bpe():
    return SubwordTokenizer.train(CORPUS, vocab_size=120, min_frequency=1)


def test_subword_specials_and_round_trip(bpe):
    assert [bpe.id_to_token(i) for i in range(4)] == ["<pad>", "<bos>", "<eos>", "<unk>"]
    for text in CORPUS[:4]:
        ids = bpe.encode(text)
        assert min(ids) > UNK_ID  # no specials added, nothing unknown
        assert bpe.decode(ids) == text
        assert bpe.decode([BOS_ID, *ids, EOS_ID, 7, 8]) == text
        assert len(bpe.tokens(text)) == len(ids)
    assert bpe.encode_batch(CORPUS[:2]) == [bpe.encode(CORPUS[0]), bpe.encode(CORPUS[1])]
    assert UNK_ID in bpe.encode("Ω")  # a character never seen in training


def test_subword_file_is_a_hugging_face_tokenizer_json(bpe, tmp_path):
    from tokenizers import Tokenizer

    path = bpe.save(tmp_path / "tokenizer.json")
    assert Tokenizer.from_file(str(path)).token_to_id("<eos>") == EOS_ID
    again = load_tokenizer(path)
    assert isinstance(again, SubwordTokenizer)
    assert again.encode(CORPUS[2]) == bpe.encode(CORPUS[2])


def test_shared_and_separate_tokenizer_files(tmp_path, bpe):
    (written,) = save_tokenizers(tmp_path / "shared", bpe, bpe)
    assert written.name == "tokenizer.json"
    source, target = load_tokenizers(tmp_path / "shared")
    assert source is target

    chars, symbols = Vocab.build(["abc"], level="char"), Vocab.build(["A B"], level="symbol")
    names = sorted(p.name for p in save_tokenizers(tmp_path / "two", chars, symbols))
    assert names == ["source_tokenizer.json", "target_tokenizer.json"]
    assert load_tokenizers(tmp_path / "two") == (chars, symbols)
    with pytest.raises(DataError, match=r"no tokenizer\.json"):
        load_tokenizers(tmp_path)
    (tmp_path / "bad.json").write_text('{"format": "other"}')
    with pytest.raises(DataError, match=r"bad\.json: not a usable tokenizer"):
        load_tokenizer(tmp_path / "bad.json")


def test_build_tokenizers_follows_task_levels():
    data = Seq2SeqData("t", train=[("ab", "A B"), ("ba", "B C")], valid=[], test=[], target_level="symbol")
    source, target = build_tokenizers(data)
    assert (source.level, target.level) == ("char", "symbol")
    assert target.symbols[4:] == ["B", "A", "C"]
    pairs = list(zip(CORPUS[0::2], CORPUS[1::2], strict=True))
    shared = Seq2SeqData("s", pairs, [], [], source_level="subword", target_level="subword", shared_vocab=True)
    source, target = build_tokenizers(shared, vocab_size=60)
    assert source is target and source.vocab_size <= 60


# --- collate ------------------------------------------------------------------------------------------------
def test_collate_by_hand():
    batch = collate_pairs([([5, 6, 7], [9]), ([8], [10, 11, 12])])
    assert batch.source_ids.tolist() == [[5, 6, 7], [8, 0, 0]]
    assert batch.source_mask.tolist() == [[True, True, True], [True, False, False]]
    assert batch.source_mask.dtype == torch.bool
    assert batch.target_in.tolist() == [[1, 9, 0, 0], [1, 10, 11, 12]]
    assert batch.target_out.tolist() == [[9, 2, 0, 0], [10, 11, 12, 2]]
    assert batch.target_mask.tolist() == [[True, True, False, False], [True, True, True, True]]
    assert batch.source_lengths.tolist() == [3, 1] and batch.target_lengths.tolist() == [2, 4]
    assert batch.num_target_tokens == 6 and len(batch) == 2 and batch.indices is None


def test_collate_pads_to_the_batch_not_the_dataset():
    dataset = PairDataset([[4] * 30, [4, 4], [4]], [[5], [5, 5], [5]])
    batch = collate_pairs([dataset[1], dataset[2]])
    assert batch.source_ids.shape == (2, 2) and batch.target_in.shape == (2, 3)
    assert batch.indices.tolist() == [1, 2]


def test_collate_sources_only_and_empty_sources():
    batch = collate_pairs([([], None), ([4, 5], None)])
    assert batch.target_in is None and batch.target_mask is None and batch.num_target_tokens == 0
    assert batch.source_mask.tolist() == [[False, False], [True, True]]
    only_empty = collate_pairs([([], [4])])
    assert only_empty.source_ids.shape == (1, 1) and not only_empty.source_mask.any()  # at least 1 wide
    with pytest.raises(ValueError, match="every example has a target or none"):
        collate_pairs([([4], [5]), ([4], None)])
    with pytest.raises(ValueError, match="empty batch"):
        collate_pairs([])


def test_batch_to_device_keeps_values():
    batch = collate_pairs([([5, 6], [7])])
    moved = batch.to("cpu")
    assert torch.equal(moved.source_ids, batch.source_ids) and torch.equal(moved.target_mask, batch.target_mask)


ids = st.lists(st.integers(4, 50), max_size=9)


@given(st.lists(st.tuples(ids, ids), min_size=1, max_size=6))
def test_collate_unpads_to_the_original_pairs(pairs):
    batch = collate_pairs(pairs)
    for b, (source, target) in enumerate(pairs):
        assert batch.source_ids[b][batch.source_mask[b]].tolist() == source
        assert batch.target_in[b][batch.target_mask[b]].tolist() == [BOS_ID, *target]
        assert batch.target_out[b][batch.target_mask[b]].tolist() == [*target, EOS_ID]
        assert (batch.source_ids[b][~batch.source_mask[b]] == PAD_ID).all()
        assert (batch.target_out[b][~batch.target_mask[b]] == PAD_ID).all()


# --- loader -------------------------------------------------------------------------------------------------
def test_loader_covers_every_pair_once_with_little_padding():
    chars = Vocab.build(["abcdefgh"], level="char")
    generator = torch.Generator().manual_seed(0)
    lengths = torch.randint(1, 40, (300,), generator=generator).tolist()
    pairs = [("a" * n, "b" * (n // 2 + 1)) for n in lengths]
    dataset = encode_pairs(pairs, chars, chars)
    loader = make_loader(dataset, batch_size=16, seed=3)
    seen, padded = [], 0
    for batch in loader:
        seen += batch.indices.tolist()
        padded += int((~batch.source_mask).sum())
        for row, index in enumerate(batch.indices.tolist()):  # indices put outputs back in dataset order
            assert int(batch.source_lengths[row]) == lengths[index]
    assert sorted(seen) == list(range(300))
    random_padding = sum(
        int((~collate_pairs([dataset[i] for i in range(s, min(s + 16, 300))]).source_mask).sum())
        for s in range(0, 300, 16)
    )
    assert padded < random_padding / 4

    fixed = [b.indices.tolist() for b in make_loader(dataset, batch_size=16, shuffle=False, by="source_lengths")]
    assert fixed == [
        b.indices.tolist() for b in make_loader(dataset, batch_size=16, shuffle=False, by="source_lengths")
    ]
    flat = [lengths[i] for batch in fixed for i in batch]
    assert flat == sorted(flat)  # evaluation order: sorted by source length
    with pytest.raises(ValueError, match="by must be"):
        make_loader(dataset, batch_size=4, by="targets")
