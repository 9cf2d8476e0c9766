"""Images and audio in the prompt of a multimodal model: the tokens they add and the FLOPs of their towers.

N images of S x S pixels add N x (the tokens one image becomes) to each sequence's prompt, and the vision tower
runs once per image (per tile) before the language model reads them (tfcost.core.layers.towers: image_input,
tower_flops_per_image); S seconds of audio add the tokens the audio tower makes of them (audio_input,
tower_flops_per_audio). The language model's own costs are then those of the longer prompt.
"""

from __future__ import annotations

from typing import TypeVar

from tfcost.core import flops
from tfcost.core.layers.towers import audio_flops, audio_tokens, audio_towers, image_flops, image_tokens, vision_towers
from tfcost.errors import TfcostError
from tfcost.schema import ModelShape, ServingSetup, TrainingSetup, Workload


def check_images(shape: ModelShape, images: int) -> None:
    """Images need a vision tower tfcost prices."""
    if images and not vision_towers(shape):
        raise TfcostError(f"--images: {shape.name} has no vision tower tfcost prices (a text-only model here)")


def check_audio(shape: ModelShape, seconds: float) -> None:
    """Audio needs an audio tower tfcost prices."""
    if seconds and not audio_towers(shape):
        raise TfcostError(f"--audio-seconds: {shape.name} has no audio tower tfcost prices")


def audio_prompt_tokens(shape: ModelShape, seconds: float) -> int:
    """Prompt tokens of S seconds of audio (0 without audio)."""
    check_audio(shape, seconds)
    return audio_tokens(shape, seconds) if seconds else 0


def audio_forward_flops(shape: ModelShape, seconds: float) -> int:
    """Forward FLOPs of S seconds of audio through the audio tower (0 without audio)."""
    check_audio(shape, seconds)
    return audio_flops(shape, seconds) if seconds else 0


def towers_forward_flops(shape: ModelShape, setup: Workload | ServingSetup | TrainingSetup) -> int:
    """One sequence's images and audio through their towers."""
    return images_forward_flops(shape, setup.images, setup.image_size) + audio_forward_flops(shape, setup.audio_seconds)


def images_tokens(shape: ModelShape, images: int, side: int | None) -> int:
    """Prompt tokens of N images (0 without images)."""
    check_images(shape, images)
    return image_tokens(shape, images, side)


def images_forward_flops(shape: ModelShape, images: int, side: int | None) -> int:
    """Forward FLOPs of N images through the vision tower (0 without images)."""
    check_images(shape, images)
    return image_flops(shape, images, side)


Setup = TypeVar("Setup", Workload, ServingSetup, TrainingSetup)


def with_image_tokens(shape: ModelShape, setup: Setup) -> Setup:
    """The setup with its images' tokens added to each sequence's text tokens (T, or the prompt P). In training,
    D then counts every token of the sequences, the images' among them."""
    added = images_tokens(shape, setup.images, setup.image_size) + audio_prompt_tokens(shape, setup.audio_seconds)
    if not added:
        return setup
    if isinstance(setup, Workload | TrainingSetup):
        return setup.model_copy(update={"seq_len": setup.seq_len + added})
    return setup.model_copy(update={"prompt": setup.prompt + added})


def forward_flops(shape: ModelShape, workload: Workload) -> int:
    """One sequence's forward pass with its images: the language model over T + the image tokens, and the vision
    tower over each image."""
    tokens = with_image_tokens(shape, workload).seq_len
    return flops.forward_flops(shape, tokens, workload.causal) + towers_forward_flops(shape, workload)


def training_flops(shape: ModelShape, workload: Workload) -> int:
    """One sequence's training FLOPs with its images: forward + backward of both (flops.training_flops_from_forward),
    the tower trained with the language model."""
    return flops.training_flops_from_forward(forward_flops(shape, workload))


def forward_flops_breakdown(shape: ModelShape, workload: Workload) -> dict[str, int]:
    """The forward pass by part, the vision tower's images one more part (where there are images)."""
    tokens = with_image_tokens(shape, workload).seq_len
    parts = flops.forward_flops_breakdown(shape, tokens, workload.causal)
    if workload.images:
        parts["vision_tower"] = images_forward_flops(shape, workload.images, workload.image_size)
    if workload.audio_seconds:
        parts["audio_tower"] = audio_forward_flops(shape, workload.audio_seconds)
    return parts


def images_training_flops(shape: ModelShape, setup: TrainingSetup) -> int:
    """The vision tower trained on each sequence's images (--images), over the D / T sequences of a run whose T
    already holds the image tokens (with_image_tokens): forward + backward of N images per sequence."""
    per_sequence = flops.training_flops_from_forward(towers_forward_flops(shape, setup))
    return per_sequence * setup.tokens // setup.seq_len


def training_notes(setup: TrainingSetup, predicted: bool) -> dict[str, str]:
    """What a training report with images should say: the step-time model (tfcost.costs.step_time) times the
    language model's layers only."""
    if not ((setup.images or setup.audio_seconds) and predicted):
        return {}
    return {
        "images": "the predicted step time times the language model only: the towers' training FLOPs are "
        "in the model FLOPs but not in the step (give --mfu to time the whole run at one utilization)"
    }
