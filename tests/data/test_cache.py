"""One cache root for all of attnkit (``attnkit.data.cache``): its precedence, and what lives under it."""

from __future__ import annotations

from attnkit.data.cache import cache_dir, stream_cache_dir
from attnkit.data.classify.embeddings.selftrained import CACHE_ENV, default_cache_dir


def test_cache_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.delenv("ATTNKIT_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "attnkit"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "attnkit"
    monkeypatch.setenv("ATTNKIT_CACHE", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"


def test_streams_and_word_vectors_live_under_the_one_root(monkeypatch, tmp_path):
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.setenv("ATTNKIT_CACHE", str(tmp_path / "mine"))
    assert stream_cache_dir() == tmp_path / "mine" / "streams"
    assert default_cache_dir() == tmp_path / "mine" / "embeddings"
