"""One word for what ``attnkit.load`` returns (issue #36): every task's model is a ``LoadedModel``; the
classifiers are ``Labeller`` s, and both seq2seq loaders (a checkpoint's, a CTranslate2 export's) are
``Translator`` s with the same ``translate``."""

import inspect

import pytest

import attnkit
from attnkit.tasks.classify.inference import Classifier
from attnkit.tasks.loaded import Labeller, LoadedModel, Translator
from attnkit.tasks.seq2seq.ctranslate2.loaded import LoadedExport
from attnkit.tasks.seq2seq.inference import LoadedSeq2Seq
from attnkit.tasks.vision.inference import VisionModel


def members(protocol: type) -> set[str]:
    return {name for name in dir(protocol) if not name.startswith("_")} | set(protocol.__annotations__)


@pytest.mark.parametrize(
    ("cls", "protocol"),
    [(Classifier, Labeller), (VisionModel, Labeller), (LoadedSeq2Seq, Translator), (LoadedExport, Translator)],
)
def test_each_loaded_class_has_its_protocol_s_members(cls, protocol):
    fields = set(getattr(cls, "__dataclass_fields__", {}))
    missing = {name for name in members(protocol) if not hasattr(cls, name) and name not in fields}
    if cls is LoadedExport:  # its config is set in __init__
        missing -= {"config"}
    assert missing == set()


def test_both_seq2seq_loaders_translate_with_one_signature():
    checkpoint, export = (inspect.signature(cls.translate) for cls in (LoadedSeq2Seq, LoadedExport))
    assert list(checkpoint.parameters)[:2] == ["self", "texts"] and len(checkpoint.parameters) == 8
    for name, parameter in checkpoint.parameters.items():
        assert export.parameters[name].default == parameter.default, name
    assert checkpoint.parameters.keys() == export.parameters.keys()


@pytest.mark.parametrize(("name", "protocol"), [("r8", Labeller), ("digits", Labeller), ("g2p", Translator)])
def test_attnkit_load_returns_a_loaded_model_of_its_kind(name, protocol):
    model = attnkit.load(name, device="cpu")
    assert isinstance(model, LoadedModel) and isinstance(model, protocol)
    assert not isinstance(model, Translator if protocol is Labeller else Labeller)
