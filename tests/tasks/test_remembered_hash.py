"""A large input's hash is remembered by path, size and mtime (#25: a warm start on a 2 GB file does not read it
whole for the run manifest); a changed file is hashed again; small files are always hashed."""

from __future__ import annotations

import hashlib
import os

from attnkit.tasks.run import manifest as run_manifest


def test_a_large_files_hash_is_remembered_until_the_file_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(run_manifest, "REMEMBER_ABOVE_BYTES", 10)
    path = tmp_path / "big.csv"
    path.write_bytes(b"text,label\nsome text,a\n")
    expected = hashlib.sha256(path.read_bytes()).hexdigest()
    assert run_manifest.remembered_sha256(path) == expected
    calls = []
    real = run_manifest.file_sha256
    monkeypatch.setattr(run_manifest, "file_sha256", lambda p: calls.append(p) or real(p))
    assert run_manifest.remembered_sha256(path) == expected and calls == []  # from the memo
    path.write_bytes(b"text,label\nother text,b\n")
    os.utime(path, ns=(1, 1))
    assert run_manifest.remembered_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest() and calls == [path]


def test_a_small_file_is_hashed_every_time(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNKIT_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "small.csv"
    path.write_bytes(b"text,label\n")
    calls = []
    monkeypatch.setattr(run_manifest, "file_sha256", lambda p: calls.append(p) or "0" * 64)
    run_manifest.remembered_sha256(path)
    run_manifest.remembered_sha256(path)
    assert len(calls) == 2 and not (tmp_path / "cache").exists()
