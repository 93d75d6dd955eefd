"""bible-en-es: OSIS cleaning, chapter openings, alignment filters and the chapter split on in-memory verses;
the real conversion (about 5 s with block caching) when the Debian SWORD modules are installed."""

import random
from collections import Counter

import pytest

from attnkit.data.seq2seq import DataError, MissingSwordModulesError, load_data_set
from attnkit.data.seq2seq.bible import (
    CACHE_FILENAME,
    INSTALL_HINT,
    Verse,
    align_verses,
    build_cache,
    clean_osis,
    find_sword_dir,
    fix_chapter_opening,
    load_bible,
    read_cache,
    split_by_chapter,
    strip_acrostic,
)


# --- cleaning -----------------------------------------------------------------------------------------------
def test_clean_osis_removes_notes_and_markup():
    raw = (
        '<div type="x-milestone" subType="x-preverse" sID="pv1"/> ¶ And <w lemma="strong:H0430">God</w> saw the '
        '<w lemma="strong:H0216">light</w>, that <transChange type="added">it was</transChange> good.'
        '<note placement="foot"><reference type="annotateRef">1.4 </reference>the light: Heb. between</note>  '
        'by my name \\nd <w lemma="strong:H3068">JEHOVAH</w></divineName> in the fish’s belly '
    )
    assert clean_osis(raw) == "And God saw the light, that it was good. by my name JEHOVAH in the fish's belly"


def test_clean_osis_spaces_supplied_words_but_joins_enclitics():
    spaced = '<w>ejército</w><transChange type="added">se llamaba</transChange><w>Sísara</w>, y'
    assert clean_osis(spaced) == "ejército se llamaba Sísara, y"
    enclitic = '<w>y díjo</w><transChange type="added">le</transChange><w>Dios</w>: <w>Pide</w>'
    assert clean_osis(enclitic) == "y díjole Dios: Pide"
    infinitive = '<w>matar</w><transChange type="added">lo</transChange>.'
    assert clean_osis(infinitive) == "matarlo."
    pronoun = '<w>que</w><transChange type="added">lo</transChange><w>hizo</w>'
    assert clean_osis(pronoun) == "que lo hizo"


def test_psalm_119_headings_are_stripped():
    assert strip_acrostic("ב BETH. Wherewithal shall a young man") == "Wherewithal shall a young man"
    assert strip_acrostic("ALEPH. Bienaventurados los perfectos") == "Bienaventurados los perfectos"
    assert strip_acrostic("BETH ¿Con qué limpiará") == "¿Con qué limpiará"
    assert strip_acrostic("He that keepeth") == "He that keepeth"


COUNTS = Counter({"Jehová": 40, "jehová": 0, "aconteció": 9, "Aconteció": 3, "ocho": 5})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("EN el principio crió Dios", "En el principio crió Dios"),
        ("Y ACONTECIÓ que cuando", "Y aconteció que cuando"),
        ("Y JEHOVÁ dijo á Noé", "Y Jehová dijo á Noé"),
        ("¿CAZARÁS tú la presa?", "¿Cazarás tú la presa?"),
        ("DE OCHO años era Josías", "De ocho años era Josías"),
        ("Salmo de David. ¡OH Jehová, cuánto", "Salmo de David. ¡Oh Jehová, cuánto"),
        ("Y dijo Dios: Sea la luz", "Y dijo Dios: Sea la luz"),
    ],
)
def test_fix_chapter_opening(text, expected):
    assert fix_chapter_opening(text, COUNTS) == expected


# --- alignment on synthetic verses --------------------------------------------------------------------------
def en(n):
    return " ".join(["word"] * n)


def es(n):
    return " ".join(["palabra"] * n)  # 7 letters against 4: keep Spanish verses at about 4/7 the words


def chapter(book, number, english_words, spanish_words):
    return [(book, number, v, en(a), es(b) if b else "") for v, (a, b) in enumerate(zip(english_words, spanish_words, strict=True), 1)]  # fmt: skip


def test_align_drops_gaps_the_chapter_after_shifts_and_bad_ratios():
    lengths = [7, 35, 14, 56, 21, 42]
    same = [n * 4 // 7 for n in lengths]
    rows = [
        ("Genesis", 1, 1, "In the beginning God created the heaven", "EN el principio crió Dios los cielos"),
        *chapter("Genesis", 1, lengths, same)[1:],
        *chapter("Genesis", 2, lengths, [*same[:3], 0, *same[4:]]),  # an empty Spanish verse: dropped
        *chapter("Genesis", 3, lengths, same),  # follows a gap in the same book: dropped
        *chapter("Exodus", 1, lengths, [*same[:2], same[2] * 5, *same[3:]]),  # another book: kept, but verse 3
        *chapter("Exodus", 2, lengths, [same[-1], *same[:-1]]),  # Spanish shifted by one verse: dropped
    ]
    verses = align_verses(rows)
    assert sorted({(v.book, v.chapter) for v in verses}) == [("Exodus", 1), ("Genesis", 1)]
    assert [v.verse for v in verses if v.book == "Exodus"] == [1, 2, 4, 5, 6]  # ratio 5 is out
    assert verses[0].spanish == "En el principio crió Dios los cielos"


def _verses(chapters=200, per_chapter=5):
    return [Verse(f"Book{c % 7}", c, v, f"en {c}:{v}", f"es {c}:{v}") for c in range(chapters) for v in range(1, per_chapter + 1)]  # fmt: skip


def test_split_by_chapter_is_whole_chapters_and_order_free():
    verses = _verses()
    train, valid, test = split_by_chapter(verses, valid_fraction=0.1, test_fraction=0.2)
    assert (len(train), len(valid), len(test)) == (700, 100, 200)  # 140 / 20 / 40 chapters of 5 verses
    keys = [{v.chapter_key for v in split} for split in (train, valid, test)]
    assert not keys[0] & keys[1] and not keys[0] & keys[2] and not keys[1] & keys[2]
    shuffled = verses[:]
    random.Random(0).shuffle(shuffled)
    again = split_by_chapter(shuffled, valid_fraction=0.1, test_fraction=0.2)
    assert [{v.chapter_key for v in split} for split in again] == keys
    assert test == sorted(test, key=verses.index)  # verses keep their order inside a split
    with pytest.raises(ValueError, match="sum below 1"):
        split_by_chapter(verses, valid_fraction=0.5, test_fraction=0.5)


# --- files and errors ---------------------------------------------------------------------------------------
def test_missing_modules_say_what_to_install(tmp_path):
    assert INSTALL_HINT == "apt-get install sword-text-kjv sword-text-sparv"
    with pytest.raises(MissingSwordModulesError, match=INSTALL_HINT):
        find_sword_dir([tmp_path])
    with pytest.raises(MissingSwordModulesError, match=INSTALL_HINT):
        load_bible(cache_path=tmp_path / "none.tsv", sword_dir=tmp_path)
    assert not (tmp_path / "none.tsv").exists()


def test_read_cache_reports_bad_lines(tmp_path):
    path = tmp_path / "c.tsv"
    path.write_text("book\tchapter\tverse\tenglish\tspanish\nGenesis\t1\t1\tIn\tEn\nGenesis\tone\t2\tx\ty\n")
    with pytest.raises(DataError, match=r"c\.tsv:3: malformed cache line"):
        read_cache(path)
    path.write_text("something else\n")
    with pytest.raises(DataError, match=r"c\.tsv:1: not a bible-en-es cache"):
        read_cache(path)


# --- the real modules ---------------------------------------------------------------------------------------
def _sword_installed():
    try:
        find_sword_dir()
    except MissingSwordModulesError:
        return False
    return True


needs_sword = pytest.mark.skipif(not _sword_installed(), reason=f"SWORD modules not installed ({INSTALL_HINT})")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    pytest.importorskip("pysword", reason="pysword (attnkit[data]) is not installed")
    return build_cache(tmp_path_factory.mktemp("attnkit-cache") / CACHE_FILENAME)


@needs_sword
def test_conversion_aligns_and_cleans_the_whole_bible(cache):
    verses = read_cache(cache)
    assert 29_500 <= len(verses) <= 31_102
    first = verses[0]
    assert (first.book, first.chapter, first.verse) == ("Genesis", 1, 1)
    assert first.english == "In the beginning God created the heaven and the earth."
    assert first.spanish == "En el principio crió Dios los cielos y la tierra."
    for v in verses:
        for text in (v.english, v.spanish):
            assert text and "¶" not in text and "<" not in text and "\\nd" not in text and "  " not in text
        assert 0.5 <= len(v.spanish) / len(v.english) <= 2.0
    openings = [v.spanish for v in verses if v.verse == 1]
    assert not [s for s in openings if s.split()[0].strip("¿¡").isupper() and len(s.split()[0]) > 2]
    keys = {(v.book, v.chapter) for v in verses}
    assert ("Jonah", 2) not in keys and ("Jonah", 3) in keys  # the shifted chapter is gone, the next kept


@needs_sword
def test_load_data_set_reads_the_cache_and_splits_by_chapter(cache, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the cache exists: the SWORD modules must not be read again")

    monkeypatch.setattr("attnkit.data.seq2seq.bible.read_sword", refuse)
    data = load_data_set("bible-en-es", cache_path=cache)  # the refusal above proves the cache was read
    sizes = data.sizes
    assert sizes["train"] > 27_000 and 700 < sizes["valid"] < 1_300 and 900 < sizes["test"] < 1_700
    assert (data.source_level, data.target_level, data.shared_vocab) == ("subword", "subword", True)
    assert sum(sizes.values()) == len(read_cache(cache))
