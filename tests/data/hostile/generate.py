"""Regenerates the committed hostile-input corpus (tests/test_hostile_corpus.py reads it):
``python tests/data/hostile/generate.py`` from the project root. Deterministic (seeded), so a
rerun changes nothing; README.md says what each file is."""

import io
import json
import random
import zipfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _sieve_trace_with_header(header_text: bytes) -> bytes:
    """A sieve routing trace whose header JSON is replaced (members otherwise valid)."""
    buf = io.BytesIO()
    np.savez(buf, header=np.frombuffer(header_text, dtype=np.uint8),
             expert_ids=np.zeros((2, 1, 1), dtype=np.int16), step_offsets=np.array([0, 2]),
             request_ids=np.arange(2), phase=np.ones(2, dtype=np.int8))
    return buf.getvalue()


def corpus() -> dict[str, bytes]:
    r = random.Random(18)
    files = {
        "empty.json": b"",
        "blank.toml": b"\n\n   \n\t\n",
        "garbage.bin": bytes(r.randrange(256) for _ in range(512)),
        "nul.json": b"\x00" * 64,
        "utf16.json": '{"model_type": "qwen3_moe"}'.encode("utf-16"),
        "bad-utf8.json": b'{"model_type": "\xff\xfe\xfd"}',
        "long-int.json": b'{"hidden_size": 1' + b"0" * 5000 + b"}",
        "nan.json": b'{"hidden_size": NaN, "num_experts": Infinity, "batch": -Infinity}',
        "big-float.json": b'{"hidden_size": 1e999, "batch": 1e999}',
        "deep.json": b"[" * 20000 + b"]" * 20000,
        "array.json": b"[1, 2, 3]",
        "string.json": b'"config"',
        "truncated.json": b'{"model_type": "qwen3_moe", "hidden_size": ',
        "wrong-types.json": json.dumps({"model_type": ["qwen3_moe"], "hidden_size": "2048",
                                        "num_experts": True, "batch": "4", "name": 5}).encode(),
        "negative.json": json.dumps({"model_type": "qwen3_moe", "num_hidden_layers": -1,
                                     "hidden_size": -2048, "batch": -4, "channels": -1}).encode(),
        "html.json": b"<!DOCTYPE html><html><body><h1>404 Not Found</h1></body></html>\n",
        "inf.toml": b"batch = inf\nsteps = nan\n[system]\nn_gpus = -inf\n",
        "bad.toml": b"a = = 1\n[[[\n",
        "long-int.toml": b"batch = 1" + b"0" * 5000 + b"\n",
        "deep.toml": b"a = " + b"[" * 3000 + b"]" * 3000 + b"\n",
        "huge-line.txt": b"A" * 100_000,
        "trace-garbage.trace": b"LD zzz\nST -1\nXX 0x40\n",
        "csv-garbage.csv": b"clock,command,Channel\nabc,def,ghi\n",
        "jsonl-garbage.jsonl": b'{"type": "route", "layer": 0}\n{broken\n',
        "jsonl-long-int.jsonl": b'{"type": "route", "layer": 0, "topk_ids": [1' + b"0" * 5000
                                + b', 2]}\n',
        "trace-long-int.npz": _sieve_trace_with_header(
            b'{"format": "sieve-routing-trace", "version": 1' + b"0" * 5000 + b"}"),
        "trace-nan.npz": _sieve_trace_with_header(
            b'{"format": "sieve-routing-trace", "version": NaN}'),
    }
    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}, [2]], dtype=object), allow_pickle=True)
    files["object.npy"] = buf.getvalue()  # a pickle inside: sieve never unpickles
    files["fake.npy"] = b"\x93NUMPY\x01\x00" + bytes(r.randrange(256) for _ in range(200))
    buf = io.BytesIO()
    np.savez(buf, addr=np.arange(100) * 64, header=np.zeros(3, np.uint8))
    files["truncated.npz"] = buf.getvalue()[:150]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(zipfile.ZipInfo("hello.txt", date_time=(1980, 1, 1, 0, 0, 0)), "not an array")
    files["zip-not-npz.npz"] = buf.getvalue()
    buf = io.BytesIO()
    np.savez(buf, expert_ids=np.array([object()] * 2, dtype=object))
    files["object.npz"] = buf.getvalue()
    return files


if __name__ == "__main__":
    for name, data in corpus().items():
        (HERE / name).write_bytes(data)
