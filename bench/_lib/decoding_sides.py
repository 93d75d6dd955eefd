"""The sides of ``bench.decoding_runtimes``, each built inside its own fresh process by :mod:`bench._lib.worker`.

Every side decodes the same sources (JSON lists of ids) for exactly ``steps`` greedy tokens with ``<eos>`` disabled
and returns the tokens as lists, which the harness digests: CTranslate2 float32 must return attnkit's.

* :func:`native` — attnkit's :func:`attnkit.decoding.greedy` on ``bench.decoding``'s model, rebuilt from its
  config and the weights the parent saved (safetensors); ``quantize="int8"`` applies
  :func:`attnkit.models.quantize.quantize_model` first (the lean step then runs fbgemm's int8 kernels);
  ``split=2`` decodes the batch in two halves, each in its own Python thread with one torch thread
  (:func:`attnkit.decoding_threads.decode_in_threads`);
* :func:`ctranslate2` — a CTranslate2 export (float32 or int8) loaded with ``intra_threads = threads``.
"""

from __future__ import annotations

from collections.abc import Callable


def native(
    *,
    threads: int,
    config: dict,
    weights: str,
    sources: list[list[int]],
    quantize: str | None = None,
    split: int | None = None,
) -> Callable[[], list[list[int]]]:
    """attnkit's cached greedy decoder on the saved weights; the function returns ``[B][steps]`` token ids."""
    import torch
    from safetensors.torch import load_file

    from bench import decoding

    torch.set_num_threads(threads)
    settings = decoding.Config(**config)
    model = decoding.build_model(settings)
    model.load_state_dict(load_file(weights))
    if quantize is not None:
        from attnkit.models.quantize import quantize_model

        model = quantize_model(model, quantize)
    source_ids = torch.tensor(sources, dtype=torch.long)
    return lambda: decoding.cached_greedy(model, source_ids, settings.steps, split=split).tolist()


def ctranslate2(*, threads: int, directory: str, sources: list[list[int]], steps: int) -> Callable[[], list[list[int]]]:
    """A CTranslate2 export decoding the sources for exactly ``steps`` tokens on ``threads`` threads."""
    from attnkit.tasks.seq2seq.ctranslate2.export import load_ctranslate2

    translator = load_ctranslate2(directory, threads=threads)

    def decode() -> list[list[int]]:  # bench.decoding_ctranslate2.greedy, without building a torch tensor
        hypotheses = translator.translate_ids(sources, max_len=steps, min_len=steps, batch_size=len(sources))
        return [h[0].token_ids for h in hypotheses]

    return decode
