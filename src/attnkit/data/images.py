"""Built-in image-classification data and batches for visual attention (layer 5).

| name | source | train / test | labels | images |
|---|---|---|---|---|
| ``digits`` | ``sklearn.datasets.load_digits`` (a file inside scikit-learn; no download) | 1,438 / 359 | 0-9 | 8×8 grey |

The test split is fixed: within each class, images are ordered by ``sha256(f"{seed}:{index}")`` (``index`` = the
image's position in scikit-learn's file, ``seed`` = :data:`SPLIT_SEED`) and the first ``round(0.2 · n)`` are
held out. It depends on neither library versions nor the training seed. The validation split is carved from the
training images the same way, with the training seed (:func:`~attnkit.data.classification.stratified_split`, keyed
by :func:`image_keys`).

Pixels are scaled to [0, 1] (digits are stored as 0..16, light strokes on a dark background).

Shape glossary:
    N  images   B  batch   C  channels   H, W  image height and width
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from attnkit.data.batching import TensorFields
from attnkit.data.builtin import BuiltinDataSet, load_from, table
from attnkit.data.classification import stratified_split
from attnkit.data.reading import DataError

__all__ = [
    "DATA_SETS",
    "SPLIT_SEED",
    "ImageBatch",
    "ImageClassificationData",
    "data_set_names",
    "image_batches",
    "image_keys",
    "load_data_set",
    "random_shift",
    "read_image_file",
]

SPLIT_SEED = 0
"""Seed of the fixed train/test split of the built-in image data sets."""
TEST_FRACTION = 0.2


@dataclass
class ImageClassificationData:
    """Train and test images ``[N, C, H, W]`` float32 in [0, 1], labels ``[N]`` long (indices into ``label_names``)."""

    name: str
    train_images: torch.Tensor
    train_labels: torch.Tensor
    test_images: torch.Tensor
    test_labels: torch.Tensor
    label_names: list[str]

    def __post_init__(self) -> None:
        for split in ("train", "test"):
            images, labels = getattr(self, f"{split}_images"), getattr(self, f"{split}_labels")
            if images.dim() != 4:
                raise ValueError(f"{split}_images must have shape [N, C, H, W], got {tuple(images.shape)}")
            if labels.shape != images.shape[:1]:
                raise ValueError(f"{split}_labels must have shape [{images.shape[0]}], got {tuple(labels.shape)}")
            if len(labels) and not 0 <= int(labels.min()) <= int(labels.max()) < len(self.label_names):
                raise ValueError(f"{split}_labels must lie in [0, {len(self.label_names)})")

    @property
    def image_shape(self) -> tuple[int, int, int]:
        """``(C, H, W)``."""
        return tuple(self.train_images.shape[1:])  # type: ignore[return-value]

    def subset_train(self, count: int) -> ImageClassificationData:
        """A copy keeping only the first ``count`` training images (for smoke runs); the test split is unchanged."""
        if count < 1:
            raise ValueError(f"count must be >= 1, got {count}")
        return dataclasses.replace(self, train_images=self.train_images[:count], train_labels=self.train_labels[:count])


def data_set_names() -> list[str]:
    """The names :func:`load_data_set` accepts."""
    return list(DATA_SETS)


def load_data_set(name: str) -> ImageClassificationData:
    """A built-in image data set (see the table above) with its fixed train/test split; DataError for an unknown
    name (listing the known ones), or scikit-learn missing."""
    return load_from(DATA_SETS, name)


def _load_digits() -> ImageClassificationData:
    """scikit-learn's digits, split as the module docstring says."""
    try:
        from sklearn.datasets import load_digits
    except ImportError as error:
        raise DataError("the digits dataset needs scikit-learn: pip install 'attnkit[data]'") from error
    digits = load_digits()
    images = torch.as_tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0  # [N, 1, 8, 8]
    labels = torch.as_tensor(digits.target, dtype=torch.long)  # [N]
    train, test = stratified_split(
        image_keys(len(labels)), labels.tolist(), test_fraction=TEST_FRACTION, seed=SPLIT_SEED
    )
    return ImageClassificationData(
        name="digits",
        train_images=images[train],
        train_labels=labels[train],
        test_images=images[test],
        test_labels=labels[test],
        label_names=[str(digit) for digit in range(10)],
    )


DATA_SETS: dict[str, BuiltinDataSet] = table(
    BuiltinDataSet("digits", "8x8 handwritten digits from scikit-learn, 0-9", _load_digits),
)


def image_keys(count: int) -> list[str]:
    """The keys the stratified split hashes for ``count`` images: their positions, ``"0"`` to ``str(count - 1)``."""
    return [str(index) for index in range(count)]


@dataclass
class ImageBatch(TensorFields):
    """Images ``[B, C, H, W]`` float and labels ``[B]`` long."""

    images: torch.Tensor
    labels: torch.Tensor


def random_shift(images: torch.Tensor, max_shift: int, *, generator: torch.Generator | None = None) -> torch.Tensor:
    """Translate each image by up to ``max_shift`` pixels in each direction, filling with zeros.

    images ``[B, C, H, W]`` -> ``[B, C, H, W]``; the shifts are drawn from ``generator`` (the global one if None).
    """
    if max_shift < 0:
        raise ValueError(f"max_shift must be >= 0, got {max_shift}")
    if max_shift == 0:
        return images
    batch, _, height, width = images.shape
    padded = F.pad(images, (max_shift,) * 4)  # [B, C, H + 2s, W + 2s]
    offsets = torch.randint(0, 2 * max_shift + 1, (batch, 2), generator=generator)  # [B, 2] top, left
    rows = offsets[:, :1] + torch.arange(height)  # [B, H]
    cols = offsets[:, 1:] + torch.arange(width)  # [B, W]
    index = torch.arange(batch)[:, None, None]
    shifted = padded.permute(0, 2, 3, 1)[index, rows[:, :, None], cols[:, None, :]]  # [B, H, W, C]
    return shifted.permute(0, 3, 1, 2).contiguous()


def image_batches(
    images: torch.Tensor,
    labels: torch.Tensor,
    batch_size: int,
    *,
    shuffle: bool,
    seed: int = 0,
    max_shift: int = 0,
    num_replicas: int = 1,
    rank: int = 0,
) -> Callable[[int], Iterator[ImageBatch]]:
    """``epoch -> batches`` of ``images [N, C, H, W]`` and ``labels [N]``.

    With ``shuffle``, epoch ``e``'s order comes from a generator seeded by ``(seed, e)``, the same on every
    replica; each replica takes every ``num_replicas``-th image of the order, cut to a multiple of ``num_replicas``
    first (equal batches). ``max_shift`` > 0 augments by random translations drawn from the global generator.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if not 0 <= rank < num_replicas:
        raise ValueError(f"rank must lie in [0, {num_replicas}), got {rank}")
    if len(images) != len(labels):
        raise ValueError(f"images has {len(images)} items but labels has {len(labels)}")

    def batches(epoch: int = 0) -> Iterator[ImageBatch]:
        if shuffle:
            generator = torch.Generator().manual_seed(_epoch_seed(seed, epoch))
            order = torch.randperm(len(images), generator=generator)
        else:
            order = torch.arange(len(images))
        order = order[: len(order) - len(order) % num_replicas][rank::num_replicas]
        for start in range(0, len(order), batch_size):
            chosen = order[start : start + batch_size]
            yield ImageBatch(random_shift(images[chosen], max_shift), labels[chosen])

    return batches


def read_image_file(path: str | Path, shape: Sequence[int]) -> torch.Tensor:
    """Images from a file, ready for a model trained on images of ``shape = (C, H, W)``: ``[N, C, H, W]`` in [0, 1].

    - ``.npy`` (read without pickle): ``[H, W]``, ``[N, H, W]`` or ``[N, C, H, W]``, already of the model's size.
    - any image format matplotlib reads (PNG, and JPEG with Pillow): turned grey, resized to ``H × W`` (area
      averaging when shrinking), and inverted when its border is brighter than its centre, so that a dark digit
      drawn on white paper looks like the light-on-dark digits the built-in data holds. Grey models only (C = 1).

    Each image is then stretched to [0, 1] by its own minimum and maximum. DataError: the file cannot be read, or
    holds images of another size.
    """
    import numpy as np

    path = Path(path)
    channels, height, width = (int(size) for size in shape)
    if not path.is_file():
        raise DataError(f"{path}: no such image file")
    if path.suffix.lower() == ".npy":
        try:
            array = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as error:
            raise DataError(f"{path}: not a readable .npy array: {error}") from error
        images = torch.as_tensor(np.asarray(array, dtype=np.float32))
        if images.dim() == 2:
            images = images[None, None]
        elif images.dim() == 3:
            images = images[:, None]
        if images.dim() != 4 or tuple(images.shape[1:]) != (channels, height, width):
            raise DataError(
                f"{path}: expected [H, W], [N, H, W] or [N, C, H, W] arrays of size {(channels, height, width)} "
                f"(C, H, W), got {tuple(array.shape)}"
            )
    else:
        if channels != 1:
            raise DataError(f"{path}: image files are read as grey; this model takes {channels} channels (use .npy)")
        images = _picture(path, height, width)
    if not torch.isfinite(images).all():
        raise DataError(f"{path}: values must be finite")
    low = images.amin(dim=(1, 2, 3), keepdim=True)
    high = images.amax(dim=(1, 2, 3), keepdim=True)
    return ((images - low) / (high - low).clamp(min=1e-12)).clamp(0.0, 1.0)


def _picture(path: Path, height: int, width: int) -> torch.Tensor:
    """A picture file -> ``[1, 1, H, W]`` grey, light strokes on a dark background."""
    from matplotlib.image import imread

    try:
        array = imread(path)
    except (OSError, ValueError, SyntaxError) as error:
        raise DataError(f"{path}: not a readable image: {error}") from error
    grey = torch.as_tensor(array, dtype=torch.float32)
    if grey.dim() == 3:
        grey = grey[..., :3].mean(-1)  # [Hi, Wi]
    if grey.dim() != 2 or min(grey.shape) < 1:
        raise DataError(f"{path}: expected a 2-D picture, got an array of shape {tuple(array.shape)}")
    border = torch.cat([grey[0], grey[-1], grey[:, 0], grey[:, -1]]).mean()
    top, left = grey.shape[0] // 4, grey.shape[1] // 4
    if border > grey[top : -top or None, left : -left or None].mean():  # the centre's
        grey = grey.max() - grey
    shrinking = grey.shape[0] >= height and grey.shape[1] >= width
    mode = "area" if shrinking else "bilinear"
    kwargs = {} if shrinking else {"align_corners": False}
    return F.interpolate(grey[None, None], size=(height, width), mode=mode, **kwargs)  # [1, 1, H, W]


def _epoch_seed(seed: int, epoch: int) -> int:
    """A 63-bit seed mixed from ``(seed, epoch)`` by SHA-256."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{epoch}".encode()).digest()[:8], "little") >> 1
