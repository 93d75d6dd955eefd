"""Does the attention explain the prediction? Faithfulness tests, one prediction at a time (layer 5).

The field's tests, tied to attnkit's exact masks: erasure that really removes a token (ERASER's comprehensiveness,
sufficiency and AOPC, DeYoung et al. 2020; the fraction erased before the decision flips, Serrano & Smith 2019),
other explanations to compare with (gradient × input and integrated gradients, equal to Captum's, leave-one-out,
attention rollout and flow, Abnar & Zuidema 2020), a seeded random floor, Kendall τ between methods, Jain &
Wallace's permutation test and Wiegreffe & Pinter's uniform-attention baseline.

| module | holds |
|---|---|
| :mod:`~attnkit.explain.faithfulness.subject` | the :class:`Subject` protocol every model family adapts to (one adapter per task) |
| :mod:`~attnkit.explain.faithfulness.methods` | :data:`METHODS`: the attribution methods, one object each with ``attribute(run)``; attention flow |
| :mod:`~attnkit.explain.faithfulness.gradients` | gradient × input and integrated gradients: Captum (the reference) and fused (what runs) |
| :mod:`~attnkit.explain.faithfulness.erasure` | :data:`ERASURES`: the erasures, one object each; which units each test erases at every k |
| :mod:`~attnkit.explain.faithfulness.metrics` | comprehensiveness, sufficiency, AOPC, flips, Kendall τ, top-k overlap, deletion / insertion AUC, per-data-set means |
| :mod:`~attnkit.explain.faithfulness.evaluate` | all of it on predictions, erasures batched (:func:`faithfulness_of`) |
| :mod:`~attnkit.explain.faithfulness.results` | the results, their JSON and the one printer (tables of ``attnkit faithfulness``, the plain sentence, the demo's line); a translation's steps averaged into one |
| :mod:`~attnkit.explain.faithfulness.baselines` | swapped attention (permuted, uniform): Jain & Wallace's test, Wiegreffe & Pinter's difference |
| :mod:`~attnkit.explain.faithfulness.panel` | the HTML report's panel, its curves as inline SVG (and matplotlib's for ``--save-figures``) |
| :mod:`~attnkit.explain.faithfulness.huggingface` | Hugging Face sequence classifiers as subjects (words over word pieces), their report and command |
| :mod:`~attnkit.explain.faithfulness.hf_directory` | what a ``--hf-model`` directory must hold (known ``model_type``, whole weights, tokenizer files), checked first |

Method and erasure names are read once, at the boundary (``as_methods``, ``as_erasure``); past it they are
objects. Each task adapts its models in its own ``faithfulness`` module (``tasks/classify``, ``tasks/seq2seq``,
``tasks/vision``). ``attnkit.load(path).faithfulness(texts)`` runs the tests. Names below load lazily.
"""

from __future__ import annotations

from attnkit.explain._lazy import lazy_exports

_EXPORTS = {
    **dict.fromkeys(["ERASURES", "Erasure", "PERCENTS", "as_erasure", "compact"], "erasure"),
    **dict.fromkeys(["METHODS", "Method", "as_methods", "attention_flow"], "methods"),
    **dict.fromkeys(["Embedded", "GradientInputs", "Subject", "check_subject"], "subject"),
    **dict.fromkeys(["DocumentFaithfulness", "MethodResult", "PermutationResult", "format_document"], "results"),
    **dict.fromkeys(["aopc", "comprehensiveness", "flip_fraction", "kendall_tau", "sufficiency"], "metrics"),
    **dict.fromkeys(["method_means", "permutation_summary", "top_k_overlap"], "metrics"),
    **dict.fromkeys(["permuted_attention", "uniform_attention", "permutation_test"], "baselines"),
    "uniform_accuracy_difference": "baselines",
    "faithfulness_of": "evaluate",
    "faithfulness_panel": "panel",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
