"""attnkit's cache directory: one root for everything kept between runs, laid out in one place (layer 5; no torch,
nothing of attnkit imported).

    cache_dir()                  $ATTNKIT_CACHE, else $XDG_CACHE_HOME/attnkit, else ~/.cache/attnkit
      streams/KEY/               a streamed file's first pass and its encoded ids (stream_cache_dir())
      hashes/                    the SHA-256 of large input files, remembered by the run manifests
      embeddings/                self-trained word vectors (unless $ATTNKIT_EMBEDDINGS_CACHE names another place)
      bible-en-es.v1.tsv         the aligned English-Spanish verses
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir", "stream_cache_dir"]


def cache_dir() -> Path:
    """attnkit's cache directory: ``$ATTNKIT_CACHE``, else ``$XDG_CACHE_HOME/attnkit``, else ``~/.cache/attnkit``."""
    if os.environ.get("ATTNKIT_CACHE"):
        return Path(os.environ["ATTNKIT_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "attnkit"


def stream_cache_dir() -> Path:
    """Where the first passes of streamed files are cached, and their ids: ``cache_dir() / "streams"``."""
    return cache_dir() / "streams"
