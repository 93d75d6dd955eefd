"""Image classification with visual attention: a CNN feature grid under 2-D attention pooling (layer 5).

| module | holds |
|---|---|
| :mod:`~attnkit.tasks.vision.config` | ``KIND``, ``VisionConfig`` (the checkpoint's ``config.json``) from the arguments, the model it builds |
| :mod:`~attnkit.tasks.vision.data` | the built-in image data set (``load_data``), test images by index |
| :mod:`~attnkit.tasks.vision.objective` | the objective ``fit`` trains on: cross-entropy and accuracy |
| :mod:`~attnkit.tasks.vision.training` | ``train_vision`` |
| :mod:`~attnkit.tasks.vision.inference` | ``load_vision`` -> ``VisionModel`` (``predict``, ``evaluate``) |
| :mod:`~attnkit.tasks.vision.explain` | the HTML report: attention maps over each image (``vision_report``) |
| :mod:`~attnkit.tasks.vision.faithfulness` | the faithfulness adapter: grid cells as a subject; ``vision_faithfulness`` |
| :mod:`~attnkit.tasks.vision.commands` | the command hooks (``attnkit train vision``, evaluate, predict, explain, faithfulness) |
"""

from attnkit.tasks.spec import TaskSpec
from attnkit.tasks.vision import commands

SPEC = TaskSpec.from_commands(
    commands,
    kind="vision",
    name="vision",
    help="image classification with visual attention (built-in: digits)",
    add_predict_arguments=commands.add_image_arguments,
    add_explain_arguments=commands.add_image_arguments,
    add_faithfulness_arguments=commands.add_image_arguments,
)
