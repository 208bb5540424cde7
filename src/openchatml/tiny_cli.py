"""``openchatml training tiny``: retrain the tiny gpt-oss that ``serve --model tiny`` serves.

It generates the synthetic Harmony dialogues (:mod:`openchatml.demo_models.dialogues`),
trains the model on this machine's CPU (:mod:`openchatml.demo_models.tiny_training`),
prints the training time, final loss and held-out numbers, and writes the compact weights
(by default over the ones the package ships, so the next ``serve --model tiny`` serves
them). The same options on the same machine give the same weights.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import time
from pathlib import Path

import click

from .cli_errors import InputError


@click.command("tiny")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the compact weights (default: the package's shipped file).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the dialogues and the weights.")
@click.option(
    "--dialogues", type=int, default=None, help="How many training dialogues (default: the recipe's)."
)
@click.option("--steps", type=int, default=None, help="How many optimiser steps (default: the recipe's).")
@click.option("--threads", type=int, default=None, help="CPU threads (default: the recipe's, 2).")
def tiny_command(
    out: Path | None, seed: int, dialogues: int | None, steps: int | None, threads: int | None
) -> None:
    """Retrain the tiny gpt-oss on synthetic dialogues and save its compact weights."""
    if any(importlib.util.find_spec(name) is None for name in ("torch", "transformers")):
        raise InputError("training needs torch and transformers: pip install 'openchatml[transformers]'")
    from .core.encoding import load_encoding
    from .demo_models.tiny_trained import save_trained, shipped_weights
    from .demo_models.tiny_training import TinyRecipe, train

    shipped = TinyRecipe()
    recipe = dataclasses.replace(
        shipped,
        seed=seed,
        dialogues=shipped.dialogues if dialogues is None else dialogues,
        steps=shipped.steps if steps is None else steps,
        threads=shipped.threads if threads is None else threads,
    )
    started = time.monotonic()

    def report(line: str) -> None:
        click.echo(f"[{time.monotonic() - started:6.0f}s] {line}", err=True)

    trained = train(load_encoding(), recipe, report=report)
    target = out or shipped_weights()
    save_trained(trained, target)
    measures = trained.measures
    click.echo(f"trained in {measures['train_seconds'] / 60:.1f} min on {recipe.threads} threads")
    click.echo(f"final training loss     {measures['final_loss']:.4f}")
    click.echo(f"held-out loss           {measures['heldout_loss']:.4f}")
    click.echo(f"held-out token accuracy {measures['heldout_token_accuracy']:.2%}")
    click.echo(f"held-out cities called  {measures['heldout_city_calls']:.0%}")
    click.echo(f"weights: {target} ({target.stat().st_size / 1e6:.1f} MB)")
