"""Does the attention explain the prediction? Faithfulness tests, one prediction at a time (layer 5).

The field's tests, tied to attnkit's exact masks: erasure that really removes a token (ERASER's comprehensiveness,
sufficiency and AOPC, DeYoung et al. 2020; the fraction erased before the decision flips, Serrano & Smith 2019),
other explanations to compare with (gradient × input and integrated gradients, equal to Captum's, leave-one-out,
attention rollout and flow, Abnar & Zuidema 2020), a seeded random floor, Kendall τ between methods, Jain &
Wallace's permutation test and Wiegreffe & Pinter's uniform-attention baseline.

| module | holds |
|---|---|
| :mod:`~attnkit.explain.faithfulness.names` | method, erasure and k names (no torch: the CLI offers them) |
| :mod:`~attnkit.explain.faithfulness.subject` | the :class:`Subject` protocol every model family adapts to |
| :mod:`~attnkit.explain.faithfulness.erasure` | which units each erasure keeps, at every k |
| :mod:`~attnkit.explain.faithfulness.methods` | the attribution methods' scores |
| :mod:`~attnkit.explain.faithfulness.gradients` | gradient × input and integrated gradients through Captum (the reference) |
| :mod:`~attnkit.explain.faithfulness.gradients_fused` | both in one forward and backward, without Captum (what runs) |
| :mod:`~attnkit.explain.faithfulness.flow` | attention flow (maximum flow through the layers) |
| :mod:`~attnkit.explain.faithfulness.metrics` | comprehensiveness, sufficiency, AOPC, flip fraction, Kendall τ, top-k overlap |
| :mod:`~attnkit.explain.faithfulness.evaluate` | all of it on a prediction, erasures batched (:func:`faithfulness_of`) |
| :mod:`~attnkit.explain.faithfulness.results` | the results and their JSON |
| :mod:`~attnkit.explain.faithfulness.permutation` | swapping attention distributions: permuted, uniform |
| :mod:`~attnkit.explain.faithfulness.baselines` | Jain & Wallace's permutation test, Wiegreffe & Pinter's uniform-attention difference |
| :mod:`~attnkit.explain.faithfulness.summary` | per-data-set means of the per-prediction results |
| :mod:`~attnkit.explain.faithfulness.steps` | one text's emitted tokens averaged into one result (the seq2seq panel) |
| :mod:`~attnkit.explain.faithfulness.table` | the text table, the plain sentence, the demo's line |
| :mod:`~attnkit.explain.faithfulness.panel` | the HTML report's panel (and matplotlib's curves for `--save-figures`) |
| :mod:`~attnkit.explain.faithfulness.curves_svg` | the panel's curves as inline SVG (one chart per document, no matplotlib) |
| :mod:`~attnkit.explain.faithfulness.huggingface` | Hugging Face sequence classifiers as subjects (words over word pieces) |
| :mod:`~attnkit.explain.faithfulness.huggingface_report` | the offline HTML report of a Hugging Face classifier |

The classifiers' subjects are :mod:`attnkit.tasks.classify.faithfulness_subjects`; ``attnkit.load(path)
.faithfulness(texts)`` runs the tests. Names below load lazily.
"""

from __future__ import annotations

from attnkit.explain._lazy import lazy_exports

_EXPORTS = {
    "ERASURES": "erasure",
    "METHODS": "methods",
    "PERCENTS": "erasure",
    "Subject": "subject",
    "GradientInputs": "subject",
    "faithfulness_of": "evaluate",
    "DocumentFaithfulness": "results",
    "MethodResult": "results",
    "PermutationResult": "results",
    "attention_flow": "flow",
    "comprehensiveness": "metrics",
    "sufficiency": "metrics",
    "aopc": "metrics",
    "flip_fraction": "metrics",
    "kendall_tau": "metrics",
    "top_k_overlap": "metrics",
    "permuted_attention": "permutation",
    "uniform_attention": "permutation",
    "permutation_test": "baselines",
    "uniform_accuracy_difference": "baselines",
    "method_means": "summary",
    "permutation_summary": "summary",
    "faithfulness_panel": "panel",
    "format_document": "table",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
