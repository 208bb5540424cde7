"""``openchatml training prepare``: a JSONL file of conversations → training rows of
token ids, labels and positions, as JSONL or Parquet.

Each line is one record (:mod:`openchatml.training.records`: the JSON conversation
format, Open Responses items, or OpenAI chat messages); it becomes a conversation
(:mod:`openchatml.training_inputs`), then a masked sample: Harmony's for gpt-oss models
(:func:`~openchatml.training.masks.harmony_sample`), the chat template's for the others
(:func:`~openchatml.training.template_masks.template_sample`); the samples are packed or
not (:mod:`openchatml.training.packing`) and written. A bad line is skipped and reported
in the summary (``--strict``: the command stops at it). A missing file, an unknown model,
an output that is neither ``.jsonl`` nor ``.parquet`` or a missing ``pyarrow`` stop the
command with a one-line error and exit status 2.
"""

from __future__ import annotations

import datetime as _dt
import importlib.util
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, cast

import click
import orjson

from .cli_errors import USAGE_ERROR_STATUS, InputError
from .core.errors import OCMError
from .core.messages import Conversation
from .core.render import Profile
from .core.tokens import NAMED_SPECIAL_TOKENS
from .engines.base import EngineError
from .responses.input import PromptSettings
from .templates.errors import TemplateError
from .tiny_cli import tiny_command
from .training.masks import MaskedSample, harmony_sample
from .training.packing import Overflow, PackingStats, Row, pack, unpacked
from .training.records import RecordError, RecordFormat
from .training.template_masks import template_sample
from .training_inputs import record_conversation

COLUMNS: Final = ("input_ids", "labels", "position_ids", "attention_mask", "seq_lengths")
"""The columns of every row written."""
_HARMONY_PAD: Final = NAMED_SPECIAL_TOKENS["<|endoftext|>"]
"""gpt-oss's pad token."""
_SHOWN_ERRORS: Final = 10


class PrepareError(InputError):
    """Options the command cannot go on with: ``error: MESSAGE``, exit status 2 (bad
    records and an unreadable file are :class:`InputError`, exit status 1)."""

    exit_code = USAGE_ERROR_STATUS


@dataclass(frozen=True, slots=True)
class SampleMaker:
    """How a model's samples are made: ``make`` (conversation → sample), the pad id and
    the dialect's name (``harmony`` or ``template``)."""

    make: Callable[[Conversation], MaskedSample]
    pad_id: int
    dialect: str


def _harmony_maker(profile: Profile) -> SampleMaker:
    return SampleMaker(lambda conversation: harmony_sample(conversation, profile), _HARMONY_PAD, "harmony")


def _tokenizer_source(model: str, home: Path | None) -> str:
    """The folder or hub id the tokenizer of ``model`` loads from (a demo model is built)."""
    from .demo_models.catalog import ensure_demo_model, is_demo_model

    if is_demo_model(model):
        return str(ensure_demo_model(model, home))
    if not Path(model).expanduser().is_dir():
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a hub id only from the local cache
    return str(Path(model).expanduser()) if Path(model).expanduser().is_dir() else model


def sample_maker(model: str, profile: Profile, home: Path | None = None) -> SampleMaker:
    """The :class:`SampleMaker` of ``model``: a demo model name, a local Hugging Face
    folder or a cached hub id. Raises :class:`PrepareError` when it cannot be loaded."""
    from .demo_models.catalog import TINY, TINY_RANDOM

    if model in (TINY, TINY_RANDOM):  # gpt-oss: Harmony, the o200k_harmony vocabulary
        return _harmony_maker(profile)
    from .engines.tokenizer import HFTokenizer
    from .templates.analysis import analyze
    from .templates.environment import ChatTemplate

    try:
        tokenizer = HFTokenizer.load(_tokenizer_source(model, home))
    except (EngineError, OSError) as exc:
        raise PrepareError(f"--model {model}: {exc}") from None
    if tokenizer.chat_template is None:
        raise PrepareError(f"--model {model}: the tokenizer has no chat template")
    template = ChatTemplate(
        tokenizer.chat_template, name=model, bos_token=tokenizer.bos_token, eos_token=tokenizer.eos_token
    )
    try:
        harmony = analyze(template).harmony
    except TemplateError as exc:
        raise PrepareError(f"--model {model}: the chat template cannot be used: {exc.message}") from None
    if harmony:
        return _harmony_maker(profile)
    hf = tokenizer.hf_tokenizer
    pad = hf.pad_token_id if hf.pad_token_id is not None else hf.eos_token_id
    return SampleMaker(
        lambda conversation: template_sample(template, conversation, tokenizer),
        int(pad) if pad is not None else 0,
        "template",
    )


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line that made no sample, and why."""

    line: int
    reason: str


def _lines(path: Path) -> list[tuple[int, str]]:
    """The non-blank lines of ``path`` with their 1-based numbers."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 (byte {exc.start})") from None
    return [(number, line) for number, line in enumerate(text.splitlines(), 1) if line.strip()]


def _sample(
    line: str, number: int, fmt: RecordFormat, settings: PromptSettings, maker: SampleMaker
) -> MaskedSample:
    """The sample of one line. Raises :class:`RecordError` (on ``number``) for a bad one."""
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise RecordError(f"not valid JSON: {exc}", line=number) from None
    try:
        return maker.make(record_conversation(record, fmt, settings=settings))
    except RecordError as exc:
        raise exc.at(number) from None
    except (OCMError, ValueError) as exc:
        message = exc.message if isinstance(exc, OCMError) else str(exc)
        raise RecordError(f"cannot render: {message}", line=number) from None


def _progress(lines: Sequence[tuple[int, str]], quiet: bool) -> Iterator[tuple[int, str]]:
    """``lines`` one by one, with a progress bar on stderr when it is a terminal."""
    stream = sys.stderr
    if quiet or not stream.isatty():
        yield from lines
        return
    with click.progressbar(lines, label="samples", file=stream) as bar:
        yield from cast(Iterator[tuple[int, str]], bar)


def _write(rows: Sequence[Row], out: Path) -> None:
    """Write ``rows`` to ``out``: JSON lines, or Parquet (``list<int32>`` columns)."""
    if out.suffix == ".parquet":
        import pyarrow as pa  # type: ignore[import-untyped]
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        columns = {
            name: pa.array([list(getattr(row, name)) for row in rows], type=pa.list_(pa.int32()))
            for name in COLUMNS
        }
        pq.write_table(pa.table(columns), out)
        return
    with out.open("wb") as file:
        for row in rows:
            file.write(orjson.dumps({name: list(getattr(row, name)) for name in COLUMNS}) + b"\n")


def summary(stats: PackingStats, bad: Sequence[BadLine], packed: bool, max_length: int | None) -> list[str]:
    """The lines of the summary the command prints on stderr."""
    share = 100 * stats.learned / stats.tokens if stats.tokens else 0.0
    shape = f"packed into {max_length} tokens each" if packed else "one per sample"
    lines = [
        f"samples: {stats.samples} ({stats.truncated} truncated, {stats.dropped} dropped)",
        f"rows: {stats.rows} ({shape})",
        f"tokens: {stats.tokens}, learned {stats.learned} ({share:.1f}%), padding {stats.padding}",
    ]
    if bad:
        numbers = ", ".join(str(b.line) for b in bad)
        lines.append(f"skipped {len(bad)} bad line{'s' if len(bad) != 1 else ''}: {numbers}")
        lines += [f"  {b.reason}" for b in bad[:_SHOWN_ERRORS]]
    return lines


@click.group("training")
def training() -> None:
    """Training data: conversations → token ids and labels that learn only the assistant;
    the tiny demo model retrained."""


training.add_command(tiny_command)


@training.command("prepare")
@click.argument("source", type=click.Path(dir_okay=False, exists=True, path_type=Path), metavar="FILE.jsonl")
@click.option(
    "--model",
    required=True,
    help="A demo model (tiny-random, tiny-chat-qwen3 …), a local"
    " Hugging Face folder, or a hub id already in the local cache.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="The output: FILE.jsonl or FILE.parquet (needs openchatml[training]).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice([f.value for f in RecordFormat]),
    default="auto",
    show_default=True,
    help="How the records spell their conversations.",
)
@click.option(
    "--profile",
    type=click.Choice([p.value for p in Profile]),
    default="harmony",
    show_default=True,
    help="The envelope of gpt-oss samples: Harmony, or OpenChatML 2.2 headers.",
)
@click.option(
    "--max-length",
    type=click.IntRange(min=1),
    default=None,
    help="Tokens per row (required with --pack; without it, rows are not cut).",
)
@click.option(
    "--pack/--no-pack",
    "packed",
    default=False,
    show_default=True,
    help="Pack several samples into each row of --max-length tokens.",
)
@click.option(
    "--truncate/--drop",
    "truncate",
    default=True,
    show_default=True,
    help="Cut a sample longer than --max-length, or leave it out.",
)
@click.option(
    "--date",
    default=None,
    help="The date in the system message of API records (YYYY-MM-DD; default: today, UTC).",
)
@click.option("--strict", is_flag=True, help="Stop at the first bad line instead of skipping it.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def prepare(
    source: Path,
    model: str,
    out: Path,
    fmt: str,
    profile: str,
    max_length: int | None,
    packed: bool,
    truncate: bool,
    date: str | None,
    strict: bool,
    quiet: bool,
) -> None:
    """Turn the conversations of FILE.jsonl (one JSON record a line) into training rows."""
    if out.suffix not in (".jsonl", ".parquet"):
        raise PrepareError(f"--out {out}: the output is a .jsonl or a .parquet file")
    if packed and max_length is None:
        raise PrepareError("--pack needs --max-length")
    if date is not None:
        try:
            _dt.date.fromisoformat(date)
        except ValueError:
            raise PrepareError(f"--date {date}: not a YYYY-MM-DD date") from None
    if out.suffix == ".parquet":
        _need_pyarrow()
    maker = sample_maker(model, Profile(profile))
    settings = PromptSettings(current_date=date)
    samples: list[MaskedSample] = []
    bad: list[BadLine] = []
    for number, line in _progress(_lines(source), quiet):
        try:
            samples.append(_sample(line, number, RecordFormat(fmt), settings, maker))
        except RecordError as exc:
            if strict:
                raise InputError(str(exc)) from None
            bad.append(BadLine(number, str(exc)))
    overflow = Overflow.TRUNCATE if truncate else Overflow.DROP
    if packed and max_length is not None:
        rows, stats = pack(samples, max_length, maker.pad_id, overflow)
    else:
        rows, stats = unpacked(samples, max_length, overflow)
    _write(rows, out)
    for text in summary(stats, bad, packed, max_length):
        click.echo(text, err=True)
    click.echo(f"wrote {stats.rows} rows to {out}", err=True)


def _need_pyarrow() -> None:
    if importlib.util.find_spec("pyarrow") is None:
        raise InputError("writing Parquet needs pyarrow: pip install 'openchatml[training]'")
