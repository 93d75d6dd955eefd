"""Document classification: HAN and pooled attention classifiers (layer 5).

| module | holds |
|---|---|
| :mod:`~attnkit.tasks.classify.config` | ``KIND``, ``ClassifierConfig`` (the checkpoint's ``config.json``) from the arguments, the model it builds |
| :mod:`~attnkit.tasks.classify.data` | built-in data sets and labelled files (``load_data``), ``--delimiter``, the data summary |
| :mod:`~attnkit.tasks.classify.encoding` | texts -> ids -> batches per model family; ``Prediction`` |
| :mod:`~attnkit.tasks.classify.objective` | the objective ``fit`` trains on: cross-entropy and accuracy |
| :mod:`~attnkit.tasks.classify.training` | ``train_classifier``, one trainer over rows in memory (``InMemoryRows``) or streamed |
| :mod:`~attnkit.tasks.classify.inference` | ``load_classifier`` -> ``Classifier`` (``predict``, ``evaluate``) |
| :mod:`~attnkit.tasks.classify.ensemble` | ``ClassifierEnsemble``: several classifiers' probabilities averaged |
| :mod:`~attnkit.tasks.classify.recipe` | the faithful-attention options of ``train classify`` and the report part that states them |
| :mod:`~attnkit.tasks.classify.explain` | the HTML report of what the classifier attended to (``classifier_report``) |
| :mod:`~attnkit.tasks.classify.faithfulness` | the faithfulness adapter: HAN and pooled documents as subjects (``Classifier.faithfulness``) |
| :mod:`~attnkit.tasks.classify.han_sentence_reuse` | a HAN's delete erasures, untouched sentence vectors reused |
| :mod:`~attnkit.tasks.classify.embedding_init` | the embedding table started from word vectors (``--embeddings``) |
| :mod:`~attnkit.tasks.classify.report` | per-class precision, recall, F1 and the confusion matrix |
| :mod:`~attnkit.tasks.classify.attended_words` | the words a classifier attended to most |
| :mod:`~attnkit.tasks.classify.baselines` | the TF-IDF + logistic-regression peer |
| :mod:`~attnkit.tasks.classify.commands` | the command hooks (``attnkit train classify``, evaluate, predict, explain) |
| :mod:`~attnkit.tasks.classify.train_options` | the options of ``train classify``, one function per group |
| :mod:`~attnkit.tasks.classify.demo` | ``attnkit demo``: HAN on fine-food reviews against TF-IDF, explained and checked |
| :mod:`~attnkit.tasks.classify.streamed_command` | when ``train classify`` streams its file, and that run |
| :mod:`~attnkit.tasks.classify.streamed_rows` | ``StreamedRows``: a training file read as a stream (``--streaming``) |
"""

from attnkit.tasks.classify import commands, demo
from attnkit.tasks.spec import TaskSpec

SPEC = TaskSpec.from_commands(
    commands,
    kind="classifier",
    name="classify",
    help="document classification (HAN or pooled classifier)",
    commands=(demo.register,),
    ensembles=True,
)
