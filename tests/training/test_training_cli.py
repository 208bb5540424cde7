"""``openchatml training prepare`` end to end: records of every format → JSONL and
Parquet rows, the summary on stderr, bad lines skipped by number (or fatal with
``--strict``), usage errors in one line with exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from template_families import tokenizer_folder
from test_records import CHAT, CONVERSATION, RESPONSES

from openchatml.cli import main
from openchatml.core.encoding import load_encoding
from openchatml.training.packing import IGNORE_INDEX

LINES = [
    json.dumps(CHAT),
    json.dumps(RESPONSES),
    "",
    json.dumps(CONVERSATION),
    json.dumps({"messages": [{"role": "wizard", "content": "x"}]}),
    "not json",
]
COLUMNS = ["input_ids", "labels", "position_ids", "attention_mask", "seq_lengths"]


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "conversations.jsonl"
    path.write_text("\n".join(LINES) + "\n")
    return path


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["training", "prepare", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stderr


def test_jsonl_rows_one_per_sample(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "data.jsonl"
    code, err = run(str(source), "--model", "tiny-random", "--out", str(out), "--date", "2025-01-01")
    assert code == 0, err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 3 and all(list(row) == COLUMNS for row in rows)
    tokens = sum(len(row["input_ids"]) for row in rows)
    learned = sum(1 for row in rows for label in row["labels"] if label != IGNORE_INDEX)
    assert err.splitlines()[:4] == [
        "samples: 3 (0 truncated, 0 dropped)",
        "rows: 3 (one per sample)",
        f"tokens: {tokens}, learned {learned} ({100 * learned / tokens:.1f}%), padding 0",
        "skipped 2 bad lines: 5, 6",
    ]
    assert "line 5: messages[0].role:" in err and "line 6: not valid JSON" in err
    assert err.splitlines()[-1] == f"wrote 3 rows to {out}"
    encoding = load_encoding()
    answer = [label for label in rows[0]["labels"] if label != IGNORE_INDEX]
    assert encoding.decode(answer).endswith("It is 20 degrees.<|return|>")
    assert "Weather in Paris" not in encoding.decode(answer)


def test_parquet_rows_packed(source: Path, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "data.parquet"
    code, err = run(str(source), "--model", "tiny-random", "--out", str(out), "--pack", "--max-length", "120")
    assert code == 0, err
    table = pq.read_table(out)
    assert table.column_names == COLUMNS
    rows = table.to_pylist()
    assert all(len(row["input_ids"]) == 120 for row in rows)
    assert "(2 truncated, 0 dropped)" in err and "packed into 120 tokens each" in err
    assert sum(len(row["seq_lengths"]) for row in rows) == 3


def test_drop_and_strict(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "data.jsonl"
    code, err = run(str(source), "--model", "tiny-random", "--out", str(out), "--max-length", "120", "--drop")
    assert (
        code == 0 and "samples: 3 (0 truncated, 2 dropped)" in err and len(out.read_text().splitlines()) == 1
    )
    code, err = run(str(source), "--model", "tiny-random", "--out", str(out), "--strict")
    assert code == 1 and err.startswith("error: line 5: messages[0].role:") and len(err.splitlines()) == 1


def test_a_template_model_from_a_local_folder(source: Path, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    folder = tokenizer_folder(tmp_path / "qwen", "Qwen3.5-4B")
    out = tmp_path / "data.jsonl"
    code, err = run(str(source), "--model", str(folder), "--out", str(out), "--format", "chat", "--quiet")
    assert code == 0, err
    assert "samples: 1 (0 truncated, 0 dropped)" in err and "skipped 4 bad lines: 2, 4, 5, 6" in err
    from openchatml.engines.tokenizer import HFTokenizer

    tokenizer = HFTokenizer.load(folder)
    row = json.loads(out.read_text().splitlines()[0])
    learned = tokenizer.decode([label for label in row["labels"] if label != IGNORE_INDEX])
    assert "<tools>" in tokenizer.decode(row["input_ids"])  # the record's tools, as the template shows them
    assert learned.startswith("Call the tool.\n</think>\n\n<tool_call>\n<function=get_weather>")
    assert learned.endswith("It is 20 degrees.<|im_end|>") and "20C" not in learned


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--out", "x.csv"], "a .jsonl or a .parquet file"),
        (["--out", "x.jsonl", "--pack"], "--pack needs --max-length"),
        (["--out", "x.jsonl", "--date", "soon"], "not a YYYY-MM-DD date"),
        (["--out", "x.jsonl", "--max-length", "0"], "--max-length"),
    ],
)
def test_usage_errors_are_one_line(source: Path, args: list[str], words: str) -> None:
    code, err = run(str(source), "--model", "tiny-random", *args)
    assert code == 2 and words in err and len(err.splitlines()) == 1 and err.startswith("error: ")


def test_a_missing_model_is_one_line(source: Path, tmp_path: Path) -> None:
    code, err = run(
        str(source), "--model", str(tmp_path / "nothing-here"), "--out", str(tmp_path / "x.jsonl")
    )
    assert code == 2 and err.startswith("error: --model ") and len(err.splitlines()) == 1
