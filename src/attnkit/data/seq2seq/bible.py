"""The ``bible-en-es`` task: English (King James) -> Spanish (Reina-Valera 1909) verse pairs (layer 5).

The texts are the SWORD modules ``engKJV2006eb`` and ``spaRV1909eb`` from the Debian packages ``sword-text-kjv``
and ``sword-text-sparv``, read with ``pysword==0.2.8``. They are converted once into a TSV file in the cache
directory (:func:`attnkit.data.cache.cache_dir`); later loads read that file.

Cleaning (both sides): footnotes are removed with their text; every other OSIS tag is removed and its text kept
(so canonical psalm titles and the epistles' closing notes stay, as they do in the Spanish text); paragraph marks
``¶``, the stray ``\\nd`` markup of the KJV module and Psalm 119's Hebrew-letter headings are dropped; ``’``
becomes ``'``; whitespace is collapsed. Spanish chapter openings are printed in capitals (``"EN el principio"``,
``"Y ACONTECIÓ que"``): in the first verse of each chapter the first run of all-capital words is re-cased —
capitalised at the start of a sentence, otherwise in whichever form (``"Jehová"`` or ``"aconteció"``) the
Spanish text uses more often elsewhere.

Alignment: both modules use the KJV verse numbering, but the Spanish text was fitted into it from its own, so a
few chapters are off by one or more verses (Numbers 13, Jonah 2, Job 39-41, ...). A chapter is dropped when
either side has an empty verse in it or in the previous chapter of the same book (the verses missing there
reappear at the start of the next chapter), or when shifting the Spanish verses against the English ones matches
their lengths clearly better than no shift. Then a verse pair is dropped when its Spanish/English length ratio
(in characters) lies outside ``[0.5, 2]``. About 30,000 of the 31,102 verses remain.

Split: chapters are ordered by a salted SHA-256 of ``"book chapter"``; the first 4 % are the test set, the next
3 % the validation set, the rest training — whole chapters, so neighbouring verses never straddle splits.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from attnkit.data.cache import cache_dir
from attnkit.data.reading import DataError
from attnkit.data.seq2seq.dataset import Seq2SeqData, hash_order

__all__ = [
    "CACHE_FILENAME",
    "ENGLISH_MODULE",
    "INSTALL_HINT",
    "SPANISH_MODULE",
    "MissingSwordModulesError",
    "Verse",
    "align_verses",
    "build_cache",
    "clean_osis",
    "find_sword_dir",
    "fix_chapter_opening",
    "load_bible",
    "read_cache",
    "read_sword",
    "split_by_chapter",
    "strip_acrostic",
]

ENGLISH_MODULE, SPANISH_MODULE = "engKJV2006eb", "spaRV1909eb"
INSTALL_HINT = "apt-get install sword-text-kjv sword-text-sparv"
CACHE_FILENAME = "bible-en-es.v1.tsv"  # bump the version when cleaning or alignment changes
VALID_FRACTION, TEST_FRACTION = 0.03, 0.04
RATIO_RANGE = (0.5, 2.0)
_SALT = "attnkit-bible-en-es-v1"
_HEADER = ("book", "chapter", "verse", "english", "spanish")
log = logging.getLogger(__name__)


class MissingSwordModulesError(DataError):
    """The SWORD modules (or pysword) are not installed; the message says what to install."""


@dataclass(frozen=True)
class Verse:
    """One aligned verse: its reference and both texts, cleaned."""

    book: str
    chapter: int
    verse: int
    english: str
    spanish: str

    @property
    def chapter_key(self) -> str:
        """``"Genesis 1"``: the unit of the train/valid/test split."""
        return f"{self.book} {self.chapter}"


# --- where things live ------------------------------------------------------------------------------------------------
def find_sword_dir(candidates: Sequence[str | Path] | None = None) -> Path:
    """The first SWORD library directory (of ``candidates``, by default ``$SWORD_PATH``, ``~/.sword``,
    ``/usr/share/sword``, ``/usr/local/share/sword``) holding both modules; else MissingSwordModulesError."""
    if candidates is None:
        candidates = [os.environ.get("SWORD_PATH", ""), Path.home() / ".sword", "/usr/share/sword"]
        candidates += ["/usr/local/share/sword"]
    tried = []
    for directory in candidates:
        if not str(directory):
            continue
        directory = Path(directory)
        tried.append(str(directory))
        confs = {p.stem.lower() for p in (directory / "mods.d").glob("*.conf")}
        if {ENGLISH_MODULE.lower(), SPANISH_MODULE.lower()} <= confs:
            return directory
    raise MissingSwordModulesError(
        f"bible-en-es needs the SWORD modules {ENGLISH_MODULE} and {SPANISH_MODULE}, not found in "
        f"{', '.join(tried)}; install them with: {INSTALL_HINT}"
    )


# --- reading ----------------------------------------------------------------------------------------------------
def read_sword(
    sword_dir: str | Path | None = None, *, books: Sequence[str] | None = None
) -> list[tuple[str, int, int, str, str]]:
    """Every verse of both modules, raw OSIS: ``(book, chapter, verse, english, spanish)`` in canonical order;
    ``books``: only these (pysword names such as ``"I Samuel"``)."""
    sword_dir = find_sword_dir(None if sword_dir is None else [sword_dir])
    try:
        from pysword.modules import SwordModules
    except ModuleNotFoundError:
        raise MissingSwordModulesError(
            "bible-en-es needs pysword: pip install pysword==0.2.8 (part of attnkit[data])"
        ) from None
    modules = SwordModules(str(sword_dir))
    found = modules.parse_modules()
    texts = {}
    for key in (ENGLISH_MODULE, SPANISH_MODULE):
        if key not in found:
            raise MissingSwordModulesError(f"SWORD module {key} not found in {sword_dir}; install: {INSTALL_HINT}")
        bible = modules.get_bible_from_module(key)
        if hasattr(bible, "_decompressed_text"):  # pysword 0.2.8 decompresses a whole book per verse
            bible._decompressed_text = functools.lru_cache(maxsize=4)(bible._decompressed_text)
        texts[key] = bible
    rows = []
    structure = texts[ENGLISH_MODULE].get_structure()
    for testament_books in structure.get_books().values():
        for book in testament_books:
            if books is not None and book.name not in books:
                continue
            for chapter, length in enumerate(book.chapter_lengths, start=1):
                english, spanish = (
                    list(texts[key].get_iter(books=[book.name], chapters=[chapter], clean=False))
                    for key in (ENGLISH_MODULE, SPANISH_MODULE)
                )
                if not len(english) == len(spanish) == length:
                    raise DataError(
                        f"{book.name} {chapter}: expected {length} verses, read {len(english)}/{len(spanish)}"
                    )
                for verse, (en, es) in enumerate(zip(english, spanish, strict=True), start=1):
                    rows.append((book.name, chapter, verse, en, es))
    return rows


# --- cleaning ----------------------------------------------------------------------------------------------------
_NOTE = re.compile(r"<note\b.*?</note>", re.DOTALL)
_TAG = re.compile(r"<[^>]*>")
_ARTEFACTS = re.compile(r"\\nd\b|¶")
_HEBREW_LETTERS = (
    "ALEPH|BETH|GIMEL|DALETH|HE|VAU|ZAIN|CHETH|TETH|JOD|CAPH|LAMED|MEM|NUN|SAMECH|AIN|PE|TZADDI|KOPH|COPH|RESH"
    "|SCHIN|SHIN|SIN|TAU"
)
_ACROSTIC = re.compile(rf"^(?:[\u0590-\u05FF]\s*)?(?:{_HEBREW_LETTERS})\b\.?\s*")
_WORD = re.compile(r"[^\W\d_]+")
# Words the translators supplied (<transChange>) are tagged without the spaces around them in spaRV1909eb:
# "ejército<transChange>se llamaba</transChange><w>Sísara</w>", but "díjo<transChange>le</transChange>Dios".
_BEFORE_SUPPLIED = re.compile(r"(\w+)((?:</w>)?)(<transChange\b[^>]*>)(?=(<w\b|\w+)(</transChange>)?)")
_AFTER_SUPPLIED = re.compile(r"(</transChange>|</w>)(?=<w\b)")
_ENCLITICS = frozenset({"lo", "la", "le", "los", "las", "les", "me", "te", "se", "nos", "os"})
# a verb that takes the enclitic: accented inside ("díjo", "oyéndo"), an infinitive or a plural imperative
_VERB = re.compile(r"[áéíóú]\w|[aeií][rd]$")
_NOT_VERBS = frozenset({"cuánto", "cuánta", "cuántos", "cuántas", "cómo", "dónde", "cuándo", "también", "después"})


def _space_supplied(match: re.Match[str]) -> str:
    word, close, tag, following, alone = match.groups()
    verb = _VERB.search(word) is not None and word.lower() not in _NOT_VERBS
    enclitic = alone is not None and following in _ENCLITICS and verb
    return f"{word}{close}{'' if enclitic else ' '}{tag}"


def clean_osis(text: str) -> str:
    """Plain text of one OSIS verse: footnotes removed, other tags unwrapped, ``¶``/``\\nd`` dropped, spaces collapsed.

    Translator-supplied words (``<transChange>``) glued to their neighbours are spaced, except Spanish
    enclitic pronouns after a verb (``díjo`` + ``le`` -> ``díjole``, ``matar`` + ``lo`` -> ``matarlo``).
    """
    text = _NOTE.sub("", text)
    text = _BEFORE_SUPPLIED.sub(_space_supplied, text)
    text = _AFTER_SUPPLIED.sub(r"\1 ", text)
    text = _TAG.sub("", text)
    text = _ARTEFACTS.sub(" ", text).replace("’", "'")
    return " ".join(text.split())


def strip_acrostic(text: str) -> str:
    """Drop a Psalm 119 heading such as ``"ב BETH."`` or ``"ALEPH."`` from the start of a verse."""
    return _ACROSTIC.sub("", text, count=1)


def _is_capitals(word: str) -> bool:
    return len(word) >= 2 and word.isupper()


def fix_chapter_opening(text: str, counts: Counter[str]) -> str:
    """Re-case the first run of all-capital words in ``text`` (a chapter's first verse).

    A word at the start of a sentence is capitalised (``"EN el"`` -> ``"En el"``, ``"¿CAZARÁS tú"`` ->
    ``"¿Cazarás tú"``); any other takes the form more frequent in ``counts`` (word counts of the text elsewhere),
    lower case on a tie: ``"Y ACONTECIÓ"`` -> ``"Y aconteció"``, ``"Y JEHOVÁ"`` -> ``"Y Jehová"``.
    """
    words = list(_WORD.finditer(text))
    first = next((i for i, m in enumerate(words) if _is_capitals(m.group())), None)
    if first is None:
        return text
    pieces, position = [], 0
    for match in words[first:]:
        word = match.group()
        if not _is_capitals(word):
            break
        before = text[: match.start()].rstrip(" ¡¿\"'(«")
        lower, title = word.lower(), word.capitalize()
        at_sentence_start = not before or before[-1] in ".?!"
        pieces += [
            text[position : match.start()],
            title if at_sentence_start or counts[title] > counts[lower] else lower,
        ]
        position = match.end()
    return "".join(pieces) + text[position:]


# --- alignment ---------------------------------------------------------------------------------------------------
def _mean_length_gap(english: Sequence[str], spanish: Sequence[str], shift: int) -> float:
    """Mean |log length ratio| of English verse i against Spanish verse i + shift (inf with < 3 pairs)."""
    gaps = [
        abs(math.log(len(spanish[i + shift]) / len(en)))
        for i, en in enumerate(english)
        if 0 <= i + shift < len(spanish) and en and spanish[i + shift]
    ]
    return sum(gaps) / len(gaps) if len(gaps) >= 3 else math.inf


def _shifted(english: Sequence[str], spanish: Sequence[str]) -> bool:
    """Whether some shift of up to three verses matches the lengths clearly (30 %) better than none."""
    unshifted = _mean_length_gap(english, spanish, 0)
    best = min(_mean_length_gap(english, spanish, s) for s in (-3, -2, -1, 1, 2, 3))
    return best < 0.7 * unshifted


def align_verses(rows: Sequence[tuple[str, int, int, str, str]]) -> list[Verse]:
    """Clean raw rows from :func:`read_sword` (in canonical order) and keep the verses whose two sides translate
    each other, by the rules of the module docstring."""
    cleaned = []
    for book, chapter, verse, en, es in rows:
        en, es = clean_osis(en), clean_osis(es)
        if book == "Psalms" and chapter == 119:
            en, es = strip_acrostic(en), strip_acrostic(es)
        cleaned.append((book, chapter, verse, en, es))
    counts = Counter(w for *_, es in cleaned for w in _WORD.findall(es) if not _is_capitals(w))

    chapters: dict[tuple[str, int], list[tuple[str, int, int, str, str]]] = {}
    for row in cleaned:
        chapters.setdefault((row[0], row[1]), []).append(row)
    verses, previous_gap, dropped = [], (None, False), []
    for (book, chapter), chapter_rows in chapters.items():
        has_gap = any(not en or not es for *_, en, es in chapter_rows)
        gap_before = previous_gap == (book, True)
        previous_gap = (book, has_gap)
        english = [row[3] for row in chapter_rows]
        spanish = [row[4] for row in chapter_rows]
        if has_gap or gap_before or _shifted(english, spanish):
            dropped.append(f"{book} {chapter}")
            continue
        for _, _, verse, en, es in chapter_rows:
            if not RATIO_RANGE[0] <= len(es) / len(en) <= RATIO_RANGE[1]:
                continue
            if verse == 1:
                es = fix_chapter_opening(es, counts)
            verses.append(Verse(book, chapter, verse, en, es))
    log.info("bible-en-es: kept %d of %d verses; dropped chapters: %s", len(verses), len(rows), ", ".join(dropped))
    return verses


# --- cache -------------------------------------------------------------------------------------------------------
def build_cache(path: str | Path | None = None, *, sword_dir: str | Path | None = None) -> Path:
    """Read, clean and align both Bibles and write them atomically as a TSV file (by default
    ``cache_dir() / CACHE_FILENAME``); return its path."""
    path = Path(path) if path is not None else cache_dir() / CACHE_FILENAME
    verses = align_verses(read_sword(sword_dir))
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with temporary.open("w", encoding="utf-8", newline="\n") as out:
        out.write("\t".join(_HEADER) + "\n")
        for v in verses:
            out.write(f"{v.book}\t{v.chapter}\t{v.verse}\t{v.english}\t{v.spanish}\n")
    os.replace(temporary, path)
    return path


def read_cache(path: str | Path) -> list[Verse]:
    """The verses of a TSV file written by :func:`build_cache`; DataError ``file:line: ...`` for a malformed line."""
    verses = []
    with Path(path).open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            fields = line.rstrip("\n").split("\t")
            if number == 1:
                if tuple(fields) != _HEADER:
                    raise DataError(f"{path}:1: not a bible-en-es cache (header {fields}); delete it to rebuild")
                continue
            if len(fields) != len(_HEADER) or not fields[1].isdigit() or not fields[2].isdigit():
                raise DataError(f"{path}:{number}: malformed cache line; delete the file to rebuild it")
            book, chapter, verse, english, spanish = fields
            verses.append(Verse(book, int(chapter), int(verse), english, spanish))
    return verses


# --- split and task ------------------------------------------------------------------------------------------------
def split_by_chapter(
    verses: Sequence[Verse], *, valid_fraction: float = VALID_FRACTION, test_fraction: float = TEST_FRACTION
) -> tuple[list[Verse], list[Verse], list[Verse]]:
    """``(train, valid, test)``: whole chapters, chosen by a salted hash of ``"book chapter"``, verses in order."""
    if min(valid_fraction, test_fraction) < 0 or valid_fraction + test_fraction >= 1:
        raise ValueError(f"fractions must be non-negative and sum below 1, got {valid_fraction}, {test_fraction}")
    order = hash_order((v.chapter_key for v in verses), _SALT)
    n_test, n_valid = round(test_fraction * len(order)), round(valid_fraction * len(order))
    test_keys, valid_keys = set(order[:n_test]), set(order[n_test : n_test + n_valid])
    train = [v for v in verses if v.chapter_key not in test_keys and v.chapter_key not in valid_keys]
    valid = [v for v in verses if v.chapter_key in valid_keys]
    test = [v for v in verses if v.chapter_key in test_keys]
    return train, valid, test


def load_bible(
    *,
    cache_path: str | Path | None = None,
    sword_dir: str | Path | None = None,
    rebuild: bool = False,
    valid_fraction: float = VALID_FRACTION,
    test_fraction: float = TEST_FRACTION,
) -> Seq2SeqData:
    """English -> Spanish verse pairs, converting the SWORD modules on first use (or with ``rebuild``).

    Raises:
        MissingSwordModulesError: when the cache must be built and the modules are missing; says what to install.
    """
    path = Path(cache_path) if cache_path is not None else cache_dir() / CACHE_FILENAME
    if rebuild or not path.is_file():
        log.info("bible-en-es: converting the SWORD modules into %s (once)", path)
        build_cache(path, sword_dir=sword_dir)
    train, valid, test = split_by_chapter(read_cache(path), valid_fraction=valid_fraction, test_fraction=test_fraction)
    return Seq2SeqData(
        name="bible-en-es",
        train=[(v.english, v.spanish) for v in train],
        valid=[(v.english, v.spanish) for v in valid],
        test=[(v.english, v.spanish) for v in test],
        source_level="subword",
        target_level="subword",
        shared_vocab=True,
    )
