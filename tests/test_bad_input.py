"""Bad input gets one line, exit code 2, no traceback and no output: the promise every
subcommand inherits (docs/user-guide.md, "What bad input gets").

Two parts:

* a table of hostile but realistic command lines over every subcommand: each row must exit
  with code 2, print exactly one line on stderr that names the component (the expected text),
  no traceback, and leave nothing in the output folder or the working folder;
* hypothesis fuzz of spec overrides, LoadStore trace lines and damaged routing-trace files:
  every input is either accepted or refused with the library's own one-line error.

A new subcommand adds its rows here. Rows whose fix belongs to code owned elsewhere are
``xfail(strict=True)`` with the reason, so they flip to failures (and get removed from the
xfail list) once fixed.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sieve.cli import main
from sieve.errors import ConfigError, SieveError, TraceFormatError
from sieve.validate import MEMORY_LIMIT_ENV

DATA = Path(__file__).parent / "data" / "hf_configs"
QWEN = json.loads((DATA / "qwen3-30b-a3b.json").read_text())


def _npy(a: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=True)  # (writes hostile files: object arrays included)
    return buf.getvalue()


def _npz(**arrays) -> bytes:
    import io

    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _npz_damaged() -> bytes:
    raw = bytearray(_npz(addr=np.arange(1000) * 64))
    raw[400] ^= 0xFF  # inside the array data: the member's CRC no longer matches
    return bytes(raw)


def _write(d: Path, name: str, content) -> None:
    p = d / name
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        p.write_bytes(content)
    elif isinstance(content, str):
        p.write_text(content)
    else:
        p.write_text(json.dumps(content))


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """Hostile input files, made once: spec files, config.json files and traces."""
    d = tmp_path_factory.mktemp("hostile")
    w = lambda name, content: _write(d, name, content)  # noqa: E731
    # spec files
    w("self.json", {"base": "self.json"})
    w("a.json", {"base": "b.json"})
    w("b.json", {"base": "a.json"})
    w("sub/child.json", {"base": "missing.json"})
    w("latin1.json", '{"base": "hbm3-6400", "description": "caf\xe9"}'.encode("latin-1"))
    w("ovlist.json", {"base": "hbm3-6400", "overrides": [1, 2]})
    w("name123.json", {"base": "hbm3-6400", "name": 123})
    w("dualno.json", {"base": "b200-hbm3e-pim", "pim.dual_row_buffer": "no"})
    w("base123.json", {"base": 123})
    w("array.json", [1, 2])
    w("bad.toml", 'base = "hbm3-6400"\n[overrides\n')
    w("strtiming.json", {"base": "hbm3-6400", "nRCDRD": "30"})
    w("floattiming.json", {"base": "hbm3-6400", "nRCDRD": 30.5})
    w("bigtiming.json", {"base": "hbm3-6400", "nRCDRD": 2**70})
    w("busstr.json", {"base": "hbm3-6400", "bus_ck.ACT": "x"})
    w("pim0.json", {"base": "b200-hbm3e-pim", "pim": 0})
    w("pimdict.json", {"base": "b200-hbm3e-pim", "pim": {"lanes": 4}})
    w("nobase.json", {"nRCDRD": 30})
    w("deep.json", "[" * 100000 + "]" * 100000)
    # model config.json files (Qwen3-30B-A3B with one field broken)
    for name, change in {
        "m_type_list": {"model_type": ["qwen3_moe"]},
        "m_experts_huge": {"num_experts": 10**12},
        "m_experts_float": {"num_experts": 1e12},
        "m_kv_heads": {"num_key_value_heads": 5},
        "m_mlp_only": {"mlp_only_layers": [1000]},
        "m_layers_neg": {"num_hidden_layers": -1},
        "m_layers_many": {"num_hidden_layers": 200_000},
        "m_topk": {"num_experts_per_tok": 1000},
        "m_text_list": {"text_config": [1]},
        "m_arch_dict": {"model_type": None, "architectures": {"a": 1}},
        "m_hidden_odd": {"hidden_size": 2049, "head_dim": None},
        "m_step0": {"decoder_sparse_step": 0},
        "m_bool_int": {"num_experts": True},
    }.items():
        w(f"{name}.json", {**{k: v for k, v in QWEN.items()}, **change})
    w("m_latin1.json", (json.dumps(QWEN)[:-1] + ', "x": "caf\xe9"}').encode("latin-1"))
    w("m_array.json", "[1]")
    w("m_empty.json", "")
    # LoadStore traces
    for name, text in {
        "t_underscore.trace": "LD 0x_1\n",
        "t_underscore_dec.trace": "LD 0x40\nLD 1_000\n",
        "t_arabic.trace": "LD \u0661\u0662\u0663\n",
        "t_negative.trace": "LD -64\n",
        "t_huge.trace": f"LD {2**64}\n",
        "t_empty.trace": "",
        "t_comment_only.trace": "# nothing\n",
        "t_lower.trace": "ld 0x40\n",
        "t_three.trace": "LD 0x40 12\n",
        "t_octal.trace": "LD 0o17\n",
        "t_plus.trace": "LD +64\n",
        "t_bom.trace": "\ufeffLD 0x40\n",
    }.items():
        w(name, text.encode("utf-8"))
    w("t_binary.trace", bytes(range(256)) * 4)
    w("t_longline.trace", b"LD " + b"1" * 100_000)
    # numpy address traces
    w("t_object.npy", _npy(np.array([64, "x"], dtype=object)))
    w("t_2d.npy", _npy(np.zeros((2, 2), dtype=np.int64)))
    w("t_float.npy", _npy(np.array([64.0, 128.0])))
    w("t_empty.npy", _npy(np.zeros(0, dtype=np.int64)))
    w("t_negative.npy", _npy(np.array([64, -64])))
    w("t_meta.npz", _npz(addr=np.arange(4) * 64, meta=np.zeros(1)))
    w("t_crc.npz", _npz_damaged())
    # command logs (sieve check)
    hdr = "clock,command,Channel,PseudoChannel,Sid,BankGroup,Bank,Row,Column,type,source\n"
    w("c_ok.csv", hdr + "1,ACT,0,0,0,0,0,5,-1,0,-1\n")
    w("c_missing.csv", "clock,command,Channel\n1,ACT,0\n")
    w("c_rfm.csv", hdr + "1,RFMab,0,0,-1,-1,-1,-1,-1,-1,-1\n")
    w("c_clock0.csv", hdr + "0,ACT,0,0,0,0,0,5,-1,0,-1\n")
    w("c_fields.csv", hdr + "1,ACT,0,0,0,0,0\n")
    w("c_latin1.csv", (hdr + "1,ACT,0,0,0,0,0,5,-1,0,-1 caf\xe9\n").encode("latin-1"))
    w("c_dtype.npy", _npy(np.zeros(3, dtype=[("tick", "<i8"), ("cmd", "<i4")])))
    w("c_object.npy", _npy(np.array([None, 1], dtype=object)))
    from sieve.dram.log import LOG_DTYPE

    badcmd = np.zeros(1, dtype=LOG_DTYPE)
    badcmd["cmd"] = 99
    w("c_badcmd.npy", _npy(badcmd))
    (d / "logdir.csv").mkdir()
    # system files (sieve schedule --system)
    w("sys_self.json", {"base": "sys_self.json"})
    w("sys_str.json", {"base": "1xb200", "n_gpus": "x"})
    w("sys_latin1.json", b'{"base": "1xb200", "name": "caf\xe9"}')
    w("sys_array.json", [1])
    w("sys_overrides.json", {"base": "1xb200", "overrides": [1]})
    w("sys_gpu5.json", {"base": "8xb200", "gpu": 5})
    w("sys_three.toml", 'base = "8xb200"\nn_gpus = 3\n')
    # sweep files (sieve sweep): one field broken in each
    ok = 'model = "qwen3-30b-a3b"\nsystem = "1xb200"\n'
    for name, text in {
        "sw_syntax.toml": "[base\nmodel = 1\n",
        "sw_topkey.toml": f"[base]\n{ok}[gird]\nbatch = [1]\n",
        "sw_field.toml": f"[base]\n{ok}[grid]\nbatches = [1, 2]\n",
        "sw_type.toml": f"[base]\n{ok}[grid]\nbatch = [1, \"x\"]\n",
        "sw_range.toml": f"[base]\n{ok}[grid]\nbatch = [4, 0]\n",
        "sw_notlist.toml": f"[base]\n{ok}[grid]\nbatch = 4\n",
        "sw_empty.toml": f"[base]\n{ok}[grid]\nmethod = []\n",
        "sw_twice.toml": f"[base]\n{ok}[grid]\nbatch = [4, 4]\n",
        "sw_list_in_base.toml": f"[base]\n{ok}batch = [1, 2]\n",
        "sw_method.toml": f"[base]\n{ok}[grid]\nmethod = [\"sieve\", \"fast\"]\n",
        "sw_model.toml": "[base]\nmodel = \"nope\"\nsystem = \"1xb200\"\n",
        "sw_nosystem.toml": "[base]\nmodel = \"qwen3-30b-a3b\"\n",
        "sw_ep.toml": "[base]\nmodel = \"gpt-oss-20b\"\nsystem = \"{S3}\"\n",
        "sw_runs.toml": f"[base]\n{ok}runs = 3\n",
        "sw_run_vs_grid.toml": f"[base]\n{ok}[grid]\nbatch = [1]\n[[runs]]\nbatch = 2\n",
        "sw_record.toml": f"[base]\n{ok}[record]\ngantt = true\n",
        "sw_bool.toml": f"[base]\n{ok}colocated = \"yes\"\n",
        "sw_prefill.toml": f"[base]\n{ok}colocated = true\nbatch = 2\nn_prefill = 5\n",
        "sw_overrides.toml": f"[base]\n{ok}[base.system_overrides]\nn_gpus = [1]\n",
        "sw_seed.toml": f"[base]\n{ok}seed = -1\n",
        "sw_array.json": "[1, 2]",
        "sw_format.json": json.dumps({"format": "other", "base": {}}),
        "sw_deep.json": "[" * 100000 + "]" * 100000,
        "sw_latin1.toml": "[base]\nmodel = \"caf\xe9\"\n".encode("latin-1"),
        "sweep.yaml": "base: {}\n",
        "not_a_cache.json": '{"my": "notes"}',
    }.items():
        if isinstance(text, str):
            text = text.replace("{S3}", str(d / "sys_three.toml").replace("\\", "/"))
        w(name, text)
    # output folders
    w("existing_file", "x")
    w("foreign/notes.txt", "my notes")
    w("foreign_store/runs/store.json", {"format": "sieve-store", "version": 1})
    w("foreign_store/runs/notes.txt", "my notes")
    return d


_SMALL = ["--models", "gpt-oss-20b", "--batch", "1", "--steps", "1"]

# (argv with {F} = the hostile-files folder and {OUT} = the output folder, text that the one
# error line must contain)
ROWS = [
    # ---- characterize ------------------------------------------------------------------
    (["characterize", *_SMALL, "--out", "{F}/existing_file"], "exists and is not a folder"),
    (["characterize", *_SMALL, "--out", "{F}/existing_file/sub"], "is not a folder"),
    (["characterize", *_SMALL, "--out", "{F}/foreign"], "holds files sieve did not write"),
    (["characterize", *_SMALL, "--out", ""], "--out: empty value ''"),
    (["characterize", *_SMALL, "--out", "   "], "--out: empty value '   '"),
    (["characterize", *_SMALL, "--out", "."], "is the current folder"),
    (["characterize", "--models", "nope", "--out", "{OUT}"], "--models: model 'nope': unknown"),
    (["characterize", "--models", "", "--out", "{OUT}"], "--models: empty value"),
    (["characterize", "--models", "gpt-oss-20b,,x", "--out", "{OUT}"], "malformed list"),
    (["characterize", "--batch", "0", "--out", "{OUT}"], "--batch: 0 is not an integer in"),
    (["characterize", "--batch", "1_000", "--out", "{OUT}"], "--batch: '1_000' is not an"),
    (["characterize", "--batch", "\u0661", "--out", "{OUT}"], "--batch: '\u0661' is not an"),
    (["characterize", "--batch", "1e3", "--out", "{OUT}"], "--batch: '1e3' is not an integer"),
    (["characterize", "--steps", "0", "--out", "{OUT}"], "argument --steps: '0' is not an"),
    (["characterize", "--steps", "two", "--out", "{OUT}"], "argument --steps: 'two'"),
    (["characterize", "--steps", str(10**12), "--out", "{OUT}"],
     "argument --steps: '1000000000000' is not an integer in [1, 10000]"),
    (["characterize", "--seed", "-1", "--out", "{OUT}"], "argument --seed: '-1' is not an"),
    (["characterize", "--router-fit", "nope", "--out", "{OUT}"], "--router-fit 'nope': unknown"),
    # ---- dram: --set ---------------------------------------------------------------------
    (["dram", "--spec", "b200-hbm3e-pim", "--set", "pim=0"], "pim must be none"),
    (["dram", "--set", "bus_ck.RD=abc"], "bus_ck.RD must be a number, got 'abc'"),
    (["dram", "--set", "bus_ck.RD=inf"], "bus_ck.RD must be a number, got 'inf'"),
    (["dram", "--set", "bus_ck.FOO=1"], "bus_ck names unknown command 'FOO'"),
    (["dram", "--set", "bus_ck.ACT=0.7"], "not a whole number of ticks"),
    (["dram", "--set", "bus_ck.ACT=4.611686018427388e18"], "bus occupancy of ACT must be at most"),
    # x ticks_per_ck overflows to infinity (found by the override fuzz test)
    (["dram", "--set", "bus_ck.ACT=8.98846567431158e307"], "bus occupancy of ACT must be at most"),
    (["dram", "--set", "nRCDRD=1e3"], "timing nRCDRD must be an integer"),
    (["dram", "--set", "nRCDRD=nan"], "timing nRCDRD must be an integer"),
    (["dram", "--set", "nRCDRD=1_000"], "timing nRCDRD must be an integer"),
    (["dram", "--set", "nRCDRD=4611686018427387904", "--requests", "10"],
     "timing nRCDRD must be in [0, 2147483647] CK"),
    (["dram", "--set", "nRCDRD=6300", "--requests", "10"], "nRFC (416) + nRCDRD (6300)"),
    (["dram", "--set", "nRP=-2"], "timing nRP must be >= 0"),
    (["dram", "--set", "nRFC=7000"], "nRFC (7000) >= nREFI"),
    (["dram", "--set", "ticks_per_ck=3"], "ticks_per_ck must be a power of two"),
    (["dram", "--set", "refresh=perbank", "--set", "nREFIpb=0"], "per-bank refresh needs"),
    (["dram", "--set", "refresh=sometimes"], "refresh must be 'allbank' or 'perbank'"),
    (["dram", "--set", "channels=0"], "org.channels must be >= 1"),
    (["dram", "--set", "rows=3"], "org.rows must be a power of two"),
    (["dram", "--set", "name="], "name must be a non-empty name"),
    (["dram", "--set", "bogus"], "--set 'bogus': expected NAME=VALUE"),
    (["dram", "--set", "=3"], "expected NAME=VALUE"),
    (["dram", "--set", "nRCDRD=30", "--set", "nRCDRD=40"], "--set nRCDRD: given twice"),
    (["dram", "--set", "nRCDXX=30"], "unknown override 'nRCDXX'"),
    (["dram", "--spec", "b200-hbm3e-pim", "--set", "pim.dual_row_buffer=no"],
     "pim.dual_row_buffer must be true or false, got 'no'"),
    (["dram", "--spec", "b200-hbm3e-pim", "--set", "pim.lanes=abc"], "pim.lanes must be an"),
    (["dram", "--spec", "b200-hbm3e-pim", "--set", "pim.gbuf_bytes=33"], "multiple of the"),
    (["dram", "--set", "pim.lanes=4"], "has no PIM units, cannot set pim.lanes"),
    (["dram", "--spec", "samsung-hbm2-pim", "--set", "pim.modes=samsung"],
     "pim.modes must be one of none, hbm-pim, got 'samsung'"),
    (["dram", "--spec", "samsung-hbm2-pim", "--set", "pim.adder_tree=no"],
     "pim.adder_tree must be true or false, got 'no'"),
    (["dram", "--spec", "samsung-hbm2-pim", "--set", "pim.crf_bursts=5"],
     "pim.crf_bursts must be in [0, 4], got 5"),
    (["dram", "--spec", "b200-hbm3e-pim", "--set", "pim.park=true"],
     "pim.park and pim.crf_bursts are part of the 'hbm-pim' mode protocol"),
    (["dram", "--spec", "hbm3-6400", "--set", "pim.modes=hbm-pim"],
     "has no PIM units, cannot set pim.modes"),
    # ---- dram: flags ---------------------------------------------------------------------
    (["dram", "--pattern", "rand", "--seed", "-1"], "argument --seed: '-1' is not an integer"),
    (["dram", "--request-bytes", "-64"], "argument --request-bytes: '-64' is not an integer"),
    (["dram", "--request-bytes", "48", "--requests", "10"], "multiple of the 32-byte burst"),
    (["dram", "--request-bytes", "4096", "--requests", "10"], "larger than a row"),
    (["dram", "--write-fraction", "2"], "argument --write-fraction: '2' is not a number in"),
    (["dram", "--write-fraction", "nan"], "argument --write-fraction: 'nan'"),
    (["dram", "--channels", "0"], "argument --channels: '0' is not an integer >= 1"),
    (["dram", "--channels", "3", "--requests", "10"], "channels must be a power of two"),
    (["dram", "--channels", "1024", "--requests", "10"], "channels must be in [1, 16]"),
    (["dram", "--queue", "0"], "argument --queue: '0' is not an integer in"),
    (["dram", "--queue", "10000000000"], "argument --queue"),
    (["dram", "--mapping", "XYZ", "--requests", "10"], "address mapping 'XYZ': unknown"),
    (["dram", "--requests", "0"], "argument --requests: '0' is not an integer >= 1"),
    (["dram", "--requests", "abc"], "argument --requests: 'abc'"),
    (["dram", "--requests", str(10**13)], "synthetic trace of 10000000000000 requests: needs"),
    (["dram", "--page", "half"], "argument --page: invalid choice"),
    (["dram", "--pattern", "zipf"], "argument --pattern: invalid choice"),
    (["dram", "--nosuchflag"], "unrecognized argument: --nosuchflag"),
    # ---- dram: trace files ---------------------------------------------------------------
    (["dram", "--trace", "{F}/t_underscore.trace"], "line 1: field 2 (address) is not a num"),
    (["dram", "--trace", "{F}/t_underscore_dec.trace"], "line 2: field 2 (address)"),
    (["dram", "--trace", "{F}/t_arabic.trace"], "line 1: not ASCII text"),
    (["dram", "--trace", "{F}/t_negative.trace"], "line 1: field 2 (address) out of range"),
    (["dram", "--trace", "{F}/t_huge.trace"], "line 1: field 2 (address) out of range"),
    (["dram", "--trace", "{F}/t_binary.trace"], "t_binary.trace' line 1"),
    (["dram", "--trace", "{F}/t_longline.trace"], "line 1: longer than 4096 bytes"),
    (["dram", "--trace", "{F}/t_empty.trace"], "no requests"),
    (["dram", "--trace", "{F}/t_comment_only.trace"], "no requests"),
    (["dram", "--trace", "{F}/t_lower.trace"], "field 1 (operation) must be LD or ST"),
    (["dram", "--trace", "{F}/t_three.trace"], "line 1: expected '<LD|ST> <address>'"),
    (["dram", "--trace", "{F}/t_octal.trace"], "field 2 (address) is not a number"),
    (["dram", "--trace", "{F}/t_plus.trace"], "field 2 (address) is not a number"),
    (["dram", "--trace", "{F}/t_bom.trace"], "line 1: not ASCII text"),
    (["dram", "--trace", "{F}/nonexistent.trace"], "cannot read (No such file or directory)"),
    (["dram", "--trace", "{F}"], "is a folder, expected a trace file"),
    (["dram", "--trace", "{F}/t_huge.trace", "--pattern", "seq"], "give either --trace"),
    (["dram", "--trace", "{F}/t_object.npy"], "holds Python objects"),
    (["dram", "--trace", "{F}/t_2d.npy"], "expected a 1-D array, got shape (2, 2)"),
    (["dram", "--trace", "{F}/t_float.npy"], "addr must be integers, got dtype float64"),
    (["dram", "--trace", "{F}/t_empty.npy"], "t_empty.npy': no requests"),
    (["dram", "--trace", "{F}/t_negative.npy"], "record 1: address -64 out of range"),
    (["dram", "--trace", "{F}/t_meta.npz"], "unknown member 'meta.npy'"),
    (["dram", "--trace", "{F}/t_crc.npz"], "damaged archive"),
    # ---- dram: request lifecycle, mapping, command log ------------------------------------
    (["dram", "--lifecycle", "ramulator3"], "argument --lifecycle: invalid choice"),
    (["dram", "--inject-per-tick", "-1"], "argument --inject-per-tick: '-1' is not an"),
    (["dram", "--inject-per-tick", "1e3"], "argument --inject-per-tick: '1e3'"),
    (["dram", "--mapping", "MOP4CLXOR", "--requests", "10"], "requests must be one 32-byte"),
    (["dram", "--log", "x.txt", "--requests", "10"], "--log 'x.txt': unknown file kind '.txt'"),
    (["dram", "--log", "log", "--requests", "10"], "unknown file kind '(none)'"),
    (["dram", "--log", "", "--requests", "10"], "--log: empty value"),
    (["dram", "--log", "{F}/logdir.csv", "--requests", "10"], "is a folder, expected a file"),
    (["dram", "--log", "{F}/existing_file/x.csv", "--requests", "10"], "is not a folder"),
    (["dram", "--log", "x.csv", "--spec", "hbm9"], "DRAM spec 'hbm9': unknown"),
    (["dram", "--log", "x.npy", "--trace", "{F}/t_underscore_dec.trace"], "line 2: field 2"),
    (["dram", "--log", "x.csv", "--trace", "{F}/t_negative.npy"], "record 1: address -64"),
    # ---- check -------------------------------------------------------------------------------
    (["check"], "the following arguments are required: FILE"),
    (["check", "{F}/nonexistent.csv"], "cannot read (No such file or directory)"),
    (["check", "{F}"], "cannot read (Is a directory)"),
    (["check", "{F}/t_empty.trace"], "empty file (no commands)"),
    (["check", "{F}/t_lower.trace"], "not a command log"),
    (["check", "{F}/t_binary.trace"], "not a command log"),
    (["check", "{F}/c_missing.csv"], "line 1: missing column(s) pseudochannel"),
    (["check", "{F}/c_rfm.csv"], "line 2: command 'RFMab' is not modelled by sieve"),
    (["check", "{F}/c_clock0.csv"], "line 2: clock 0 < 1"),
    (["check", "{F}/c_fields.csv"], "line 2: 7 fields, the header has 11"),
    (["check", "{F}/c_latin1.csv"], "c_latin1.csv': not ASCII text"),
    (["check", "{F}/c_dtype.npy"], "expected a structured array with the fields"),
    (["check", "{F}/c_object.npy"], "not a readable .npy command log"),
    (["check", "{F}/c_badcmd.npy"], "record 0 has cmd 99"),
    (["check", "{F}/c_ok.csv", "{F}/c_rfm.csv"], "c_rfm.csv' line 2"),
    (["check", "{F}/c_ok.csv", "--spec", "hbm9"], "DRAM spec 'hbm9': unknown"),
    (["check", "{F}/c_ok.csv", "--set", "nRCDRD=x"], "timing nRCDRD must be an integer"),
    (["check", "{F}/c_ok.csv", "--ticks-per-clock", "0"], "argument --ticks-per-clock"),
    (["check", "{F}/c_ok.csv", "--max-violations", "-1"], "argument --max-violations"),
    # ---- dram: spec files ----------------------------------------------------------------
    (["dram", "--spec", "hbm9"], "DRAM spec 'hbm9': unknown (known:"),
    (["dram", "--spec", "{F}/self.json"], "'base' chain loops back"),
    (["dram", "--spec", "{F}/a.json"], "'base' chain loops back"),
    (["dram", "--spec", "{F}/sub/child.json"], "sub/missing.json': cannot read"),
    (["dram", "--spec", "{F}/latin1.json"], "latin1.json': not UTF-8 text"),
    (["dram", "--spec", "{F}/ovlist.json"], "'overrides' must be a table of NAME = VALUE"),
    (["dram", "--spec", "{F}/name123.json"], "name must be a non-empty name, got 123"),
    (["dram", "--spec", "{F}/dualno.json"], "pim.dual_row_buffer must be true or false"),
    (["dram", "--spec", "{F}/base123.json"], "'base' must be a preset name"),
    (["dram", "--spec", "{F}/array.json"], "expected a table/object at top level"),
    (["dram", "--spec", "{F}/bad.toml"], "not valid TOML"),
    (["dram", "--spec", "{F}/strtiming.json"], "timing nRCDRD must be an integer >= 0, got '30'"),
    (["dram", "--spec", "{F}/floattiming.json"], "timing nRCDRD must be an integer >= 0, got 30.5"),
    (["dram", "--spec", "{F}/bigtiming.json", "--requests", "10"],
     "timing nRCDRD must be in [0, 2147483647] CK"),
    (["dram", "--spec", "{F}/busstr.json"], "bus_ck.ACT must be a number"),
    (["dram", "--spec", "{F}/pim0.json"], "pim must be none"),
    (["dram", "--spec", "{F}/pimdict.json"], "pim must be none"),
    (["dram", "--spec", "{F}/nobase.json"], "missing 'base'"),
    (["dram", "--spec", "{F}/deep.json"], "deep.json'"),
    (["dram", "--spec", "{F}/nonexistent.toml"], "cannot read (No such file"),
    # ---- gemv ----------------------------------------------------------------------------
    (["gemv", "--rows", "0", "--cols", "8"], "argument --rows: '0' is not an integer >= 1"),
    (["gemv", "--rows", "1_024", "--cols", "8"], "argument --rows: '1_024'"),
    (["gemv", "--rows", "8"], "the following arguments are required: --cols"),
    (["gemv", "--spec", "hbm3-6400", "--rows", "8", "--cols", "8"], "has no PIM units"),
    (["gemv", "--rows", "64", "--cols", "64", "--col-groups", "3"], "col_groups 3 is not a"),
    (["gemv", "--rows", "64", "--cols", "64", "--col-groups", "x"], "--col-groups must be an"),
    (["gemv", "--rows", "64", "--cols", "64", "--pcs", "100000"], "n_pcs must be in [1, 256]"),
    (["gemv", "--rows", "64", "--cols", "64", "--set", "nCCDAB=0"], "needs nCCDAB >= 1"),
    # ---- roofline ------------------------------------------------------------------------
    (["roofline", "--model", "qwen3-30b-a3b", "--batch", "1000000", "--out", "{OUT}"],
     "argument --batch: '1000000' is not an integer in [1, 65536]"),
    (["roofline", "--model", "qwen3-30b-a3b", "--batch", "0", "--out", "{OUT}"],
     "argument --batch: '0' is not an integer in [1, 65536]"),
    (["roofline", "--model", "qwen3-30b-a3b", "--batch", "4", "--context", "0", "--out",
      "{OUT}"], "argument --context"),
    (["roofline", "--model", "qwen3-30b-a3b", "--batch", "4", "--seed", "-3", "--out",
      "{OUT}"], "argument --seed"),
    (["roofline", "--model", "qwen3-30b-a3b", "--batch", "4", "--spec", "hbm3-6400", "--out",
      "{OUT}"], "has no PIM units"),
    (["roofline", "--model", "qwen3-30b-a3b", "--batch", "4", "--gpu", "tpu", "--out",
      "{OUT}"], "GPU 'tpu': unknown"),
    (["roofline", "--model", "nope", "--batch", "4", "--out", "{OUT}"], "model 'nope': unknown"),
    (["roofline", "--model", "qwen3-30b-a3b", "--batch", "4", "--out", ""], "--out: empty"),
    (["roofline", "--model", "qwen3-30b-a3b", "--batch", "4", "--out", "{F}/existing_file"],
     "exists and is not a folder"),
    (["roofline", "--model", "{F}/m_type_list.json", "--batch", "4", "--out", "{OUT}"],
     "unsupported model_type ['qwen3_moe']"),
    (["roofline", "--model", "{F}/m_experts_huge.json", "--batch", "4", "--out", "{OUT}"],
     "field 'num_experts': must be <= 16384 (sieve.limits)"),
    (["roofline", "--model", "{F}/m_experts_float.json", "--batch", "4", "--out", "{OUT}"],
     "field 'num_experts': expected an integer"),
    (["roofline", "--model", "{F}/m_bool_int.json", "--batch", "4", "--out", "{OUT}"],
     "field 'num_experts': expected an integer, got True"),
    (["roofline", "--model", "{F}/m_kv_heads.json", "--batch", "4", "--out", "{OUT}"],
     "field 'num_key_value_heads': 5 does not divide num_attention_heads 32"),
    (["roofline", "--model", "{F}/m_mlp_only.json", "--batch", "4", "--out", "{OUT}"],
     "field 'mlp_only_layers': layer 1000 out of range [0, 48)"),
    (["roofline", "--model", "{F}/m_layers_neg.json", "--batch", "4", "--out", "{OUT}"],
     "field 'num_hidden_layers': must be >= 1"),
    (["roofline", "--model", "{F}/m_layers_many.json", "--batch", "4", "--out", "{OUT}"],
     "field 'num_hidden_layers': must be <= 1024 (sieve.limits)"),
    (["roofline", "--model", "{F}/m_topk.json", "--batch", "4", "--out", "{OUT}"],
     "top_k 1000 > n_experts 128"),
    (["roofline", "--model", "{F}/m_text_list.json", "--batch", "4", "--out", "{OUT}"],
     "field 'text_config': expected an object"),
    (["roofline", "--model", "{F}/m_arch_dict.json", "--batch", "4", "--out", "{OUT}"],
     "unknown 'architectures'"),
    (["roofline", "--model", "{F}/m_hidden_odd.json", "--batch", "4", "--out", "{OUT}"],
     "field 'head_dim': absent, and hidden_size 2049 is not a multiple"),
    (["roofline", "--model", "{F}/m_step0.json", "--batch", "4", "--out", "{OUT}"],
     "field 'decoder_sparse_step': must be >= 1"),
    (["roofline", "--model", "{F}/m_latin1.json", "--batch", "4", "--out", "{OUT}"],
     "m_latin1.json': not UTF-8 text"),
    (["roofline", "--model", "{F}/m_array.json", "--batch", "4", "--out", "{OUT}"],
     "expected a JSON object at top level"),
    (["roofline", "--model", "{F}/m_empty.json", "--batch", "4", "--out", "{OUT}"],
     "not valid JSON"),
    (["roofline", "--model", "{F}/none.json", "--batch", "4", "--out", "{OUT}"],
     "cannot read (No such file or directory)"),
    # ---- schedule ------------------------------------------------------------------------
    (["schedule", "--model", "qwen3-30b-a3b", "--batch", "0"], "argument --batch: '0' is not"),
    (["schedule", "--model", "qwen3-30b-a3b", "--batch", "1000000"],
     "'1000000' is not an integer in [1, 65536]"),
    (["schedule", "--model", "qwen3-30b-a3b", "--batch", "4", "--warmup", "-1"],
     "argument --warmup"),
    (["schedule", "--model", "qwen3-30b-a3b", "--batch", "4", "--warmup", "100000000"],
     "argument --warmup: '100000000' is not an integer in [0, 10000]"),
    (["schedule", "--model", "qwen3-30b-a3b", "--batch", "4", "--context", str(10**20)],
     "argument --context: '100000000000000000000' is not an integer in [1, 134217728]"),
    (["schedule", "--model", "qwen3-30b-a3b", "--batch", "4", "--seed", "x"],
     "argument --seed"),
    (["schedule", "--model", "qwen3-30b-a3b", "--batch", "4", "--layer", "x"],
     "--layer: 'x' is not a MoE layer of qwen3-30b-a3b (MoE layers: 0..47, or 'all')"),
    (["schedule", "--model", "qwen3-30b-a3b", "--batch", "4", "--layer", "1000"],
     "--layer: '1000' is not a MoE layer"),
    (["schedule", "--model", "qwen3-30b-a3b", "--batch", "4", "--method", "nope"],
     "scheduler 'nope': unknown"),
    (["schedule", "--model", "qwen3-30b-a3b", "--batch", "4", "--system", "nope"],
     "system 'nope': unknown"),
    (["schedule", "--model", "qwen3-30b-a3b", "--batch", "4", "--system", "{F}/sys_self.json"],
     "'base' chain loops back"),
    (["schedule", "--model", "qwen3-30b-a3b", "--batch", "4", "--system", "{F}/sys_str.json"],
     "n_gpus must be a positive integer, got 'x'"),
    (["schedule", "--model", "qwen3-30b-a3b", "--batch", "4", "--system",
      "{F}/sys_latin1.json"], "sys_latin1.json': not UTF-8 text"),
    (["schedule", "--model", "qwen3-30b-a3b", "--batch", "4", "--system", "{F}/sys_array.json"],
     "expected a table/object"),
    (["schedule", "--model", "qwen3-30b-a3b", "--batch", "4", "--system",
      "{F}/sys_overrides.json"], "'overrides' must be a table/object"),
    (["schedule", "--model", "qwen3-30b-a3b", "--batch", "4", "--system", "{F}/sys_gpu5.json"],
     "GPU: expected a name, got 5"),
    (["schedule", "--model", "qwen3-30b-a3b", "--batch", "4", "--system",
      "{F}/sys_three.toml"], "128 experts do not split evenly over 3 GPUs"),
    (["schedule", "--model", "qwen3-30b-a3b", "--batch", "4", "--system", "{F}/none.json"],
     "cannot read (No such file or directory)"),
    (["schedule", "--model", "{F}/m_kv_heads.json", "--batch", "4"],
     "field 'num_key_value_heads'"),
    (["schedule", "--model", "{F}/m_experts_huge.json", "--batch", "4"],
     "field 'num_experts': must be <= 16384 (sieve.limits)"),
    (["schedule", "--model", "nope", "--batch", "4"], "model 'nope': unknown"),
    (["schedule", "--batch", "4"], "the following arguments are required: --model"),
    (["roofline", "--model", "qwen3-30b-a3b", "--batch", "4", "--context", str(10**20),
      "--out", "{OUT}"], "argument --context"),
    # ---- sweep (and run / profile with the same executor) ------------------------------
    (["sweep", "{F}/sw_syntax.toml", "--out", "{OUT}"], "sw_syntax.toml': not valid TOML"),
    (["sweep", "{F}/sw_topkey.toml", "--out", "{OUT}"], "unknown key 'gird'"),
    (["sweep", "{F}/sw_field.toml", "--out", "{OUT}"], "grid.batches: unknown field"),
    (["sweep", "{F}/sw_type.toml", "--out", "{OUT}"],
     "grid.batch[1]: batch must be an integer, got 'x'"),
    (["sweep", "{F}/sw_range.toml", "--out", "{OUT}"],
     "grid.batch[1]: run: batch must be an integer >= 1, got 0"),
    (["sweep", "{F}/sw_notlist.toml", "--out", "{OUT}"], "grid.batch must be a list"),
    (["sweep", "{F}/sw_empty.toml", "--out", "{OUT}"], "grid.method: empty list"),
    (["sweep", "{F}/sw_twice.toml", "--out", "{OUT}"], "grid.batch: a value is listed twice"),
    (["sweep", "{F}/sw_list_in_base.toml", "--out", "{OUT}"],
     "base.batch: one value expected, got a list"),
    (["sweep", "{F}/sw_method.toml", "--out", "{OUT}"], "grid.method[1]: scheduler 'fast'"),
    (["sweep", "{F}/sw_model.toml", "--out", "{OUT}"], "point 0 (nope on 1xb200"),
    (["sweep", "{F}/sw_nosystem.toml", "--out", "{OUT}"], "point: no system"),
    (["sweep", "{F}/sw_ep.toml", "--out", "{OUT}"], "EP needs the 32 experts"),
    (["sweep", "{F}/sw_runs.toml", "--out", "{OUT}"], "base.runs: unknown field"),
    (["sweep", "{F}/sw_run_vs_grid.toml", "--out", "{OUT}"],
     "runs[0].batch is also a grid axis"),
    (["sweep", "{F}/sw_record.toml", "--out", "{OUT}"], "record.gantt: unknown"),
    (["sweep", "{F}/sw_bool.toml", "--out", "{OUT}"],
     "base.colocated: colocated must be true or false"),
    (["sweep", "{F}/sw_prefill.toml", "--out", "{OUT}"], "n_prefill"),
    (["sweep", "{F}/sw_overrides.toml", "--out", "{OUT}"],
     "system_overrides.n_gpus must be a number"),
    (["sweep", "{F}/sw_seed.toml", "--out", "{OUT}"],
     "base.seed: run: seed must be an integer >= 0, got -1"),
    (["sweep", "{F}/sw_array.json", "--out", "{OUT}"], "expected a table of sweep keys"),
    (["sweep", "{F}/sw_format.json", "--out", "{OUT}"], "format must be 'sieve-sweep'"),
    (["sweep", "{F}/sw_deep.json", "--out", "{OUT}"], "nested too deeply"),
    (["sweep", "{F}/sw_latin1.toml", "--out", "{OUT}"], "not UTF-8 text"),
    (["sweep", "{F}/sweep.yaml", "--out", "{OUT}"], "expected a .toml or .json file"),
    (["sweep", "{F}/none.toml", "--out", "{OUT}"], "cannot read (No such file"),
    (["sweep", "--out", "{OUT}"], "point: no model"),
    (["sweep", "--set", "model=qwen3-30b-a3b", "--set", "system=1xb200", "--set", "batch=x",
      "--out", "{OUT}"], "--set batch=x: expected an integer"),
    (["sweep", "--set", "model=qwen3-30b-a3b", "--set", "bogus=1", "--out", "{OUT}"],
     "--set bogus: unknown run field"),
    (["sweep", "--set", "model=qwen3-30b-a3b", "--set", "system=1xb200", "--grid",
      "batch=1,,2", "--out", "{OUT}"], "--grid 'batch=1,,2': malformed list"),
    (["sweep", "--set", "model=qwen3-30b-a3b", "--set", "system=1xb200", "--grid",
      "method=sieve,fast", "--out", "{OUT}"], "grid.method[1]: scheduler 'fast'"),
    (["sweep", "--set", "model=qwen3-30b-a3b", "--set", "system=1xb200", "--jobs", "0",
      "--out", "{OUT}"], "argument --jobs"),
    (["sweep", "--set", "model=qwen3-30b-a3b", "--set", "system=1xb200", "--cache",
      "{F}/not_a_cache.json", "--out", "{OUT}"], "not a sieve cache file"),
    (["sweep", "--set", "model=qwen3-30b-a3b", "--set", "system=1xb200", "--out",
      "{F}/foreign_store"], "holds files sieve did not write (runs/notes.txt)"),
    (["run", "--jobs", "x", "--out", "{OUT}"], "argument --jobs"),
    (["run", "--router", "gpt-oss", "--out", "{OUT}"],
     "router (--router) 'gpt-oss': unknown (did you mean 'gpt-oss-20b'?)"),
    (["run", "--router", "mixtral-8x7b", "--trace", "{F}/t.npz", "--out", "{OUT}"],
     "--router with --trace: a trace routes the steps itself"),
    (["run", "--cache", "{F}/not_a_cache.json", "--out", "{OUT}"], "not a sieve cache file"),
    (["profile", "{F}/sw_field.toml", "--out", "{OUT}"], "grid.batches: unknown field"),
    (["profile", "nope", "--out", "{OUT}"], "expected a .toml or .json file"),
    (["profile", "main", "--limit", "0", "--out", "{OUT}"], "argument --limit"),
    # ---- specs, hardware, top level ------------------------------------------------------
    (["specs", "nope"], "DRAM spec 'nope': unknown"),
    (["specs", "{F}/self.json"], "'base' chain loops back"),
    (["specs", "{F}/latin1.json"], "not UTF-8 text"),
    (["hardware", "tpu"], "hardware 'tpu': unknown (GPUs:"),
    ([], "the following arguments are required: COMMAND"),
    (["simulate"], "argument COMMAND: invalid choice: 'simulate'"),
]


@pytest.mark.parametrize("argv, component", ROWS)
def test_bad_input_one_line_exit_2_nothing_written(argv, component, files, tmp_path, capsys,
                                                   monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # a stray relative write would land here
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "1G")  # the size rows give the same answer anywhere
    out = work / "out"
    argv = [a.format(F=files, OUT=out) for a in argv]
    before = sorted(p.name for p in files.rglob("*"))
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert component in lines[0], lines[0]
    assert lines[0].startswith("sieve")
    assert not any(work.iterdir()), sorted(work.rglob("*"))  # no output, no temporary folder
    assert sorted(p.name for p in files.rglob("*")) == before


def test_console_script_exit_code_and_no_traceback():
    import subprocess
    import sys

    for argv in (["dram", "--spec", "nope"], ["dram", "--nosuchflag"],
                 ["dram", "--set", "pim=0", "--spec", "b200-hbm3e-pim"]):
        r = subprocess.run([sys.executable, "-m", "sieve", *argv], capture_output=True,
                           text=True)
        assert r.returncode == 2 and "Traceback" not in r.stderr
        assert len(r.stderr.splitlines()) == 1


# --------------------------------------------------------------------------------------------
# Library calls: the same checks, one helper (sieve.validate)
# --------------------------------------------------------------------------------------------


def _lib_cases():
    from sieve import pim
    from sieve.dram.mapping import AddressMapper
    from sieve.dram.memtrace import RequestTrace, synthetic_trace
    from sieve.dram.presets import get_spec
    from sieve.hw import gpu
    from sieve.hw.calibrations import get_calibration
    from sieve.hw.presets import DEFAULT_GPU, get_gpu
    from sieve.model.parts import GqaAttention
    from sieve.report.characterize import CharacterizeConfig
    from sieve.workload.router import RouterShape, SyntheticRouter
    from sieve.workload.trace import TraceMeta

    spec = get_spec("hbm3-6400")
    g = get_gpu(DEFAULT_GPU)
    cal = get_calibration(g)
    return [
        (lambda: CharacterizeConfig(models="qwen3-30b-a3b", batch_sizes=(1,)),
         "--models: the model list must be a list, got 'qwen3-30b-a3b'"),
        (lambda: CharacterizeConfig(models=("qwen3-30b-a3b",), batch_sizes="16"),
         "--batch: the batch list must be a list"),
        (lambda: RequestTrace([1.7, 64.2], [False, False]), "addr must hold integers"),
        (lambda: RequestTrace([64], [False], arrive_ck=[0.5]), "arrive_ck must hold integers"),
        (lambda: gpu.gemm_time_ns("64", 64, 64, gpu=g, calib=cal),
         "GEMM: m must be a number, got '64'"),
        (lambda: gpu.gemm_time_ns(True, 64, 64, gpu=g, calib=cal),
         "GEMM: m must be a number, got True"),
        (lambda: get_spec("hbm3-6400", {1: 2}), "overrides keys must be names"),
        (lambda: get_spec("hbm3-6400", [("nRCDRD", 3)]), "overrides must be a table"),
        (lambda: get_spec(42), "DRAM spec: expected a name"),
        (lambda: synthetic_trace("seq", 10, stride_bytes=0), "stride_bytes must be >= 1"),
        (lambda: synthetic_trace("rand", 10, seed=-1), "seed must be >= 0"),
        (lambda: synthetic_trace("seq", 10.0), "number of requests must be an integer"),
        (lambda: pim.gemv_layout(spec, 64, 64), "has no PIM units"),
        (lambda: pim.gemv_layout("b200-hbm3e-pim", 64.0, 64), "out_rows must be an integer"),
        (lambda: AddressMapper(spec, channels=2.5), "channels must be an integer"),
        (lambda: GqaAttention(32, 5, 128), "the 5 key/value heads must divide the 32"),
        (lambda: TraceMeta("m", 8, 2, "0,1"), "layer_ids must be a list"),
        (lambda: TraceMeta("m", "8", 2, (0,)), "n_experts must be an integer"),
        (lambda: TraceMeta("m", 40000, 2, (0,)), "n_experts must be in [1, 32768]"),
        (lambda: RouterShape("x", 8, 2, (0, 1.5)), "layer_ids[1] must be an integer"),
        (lambda: SyntheticRouter("qwen3-30b-a3b").generate(4.0, 1), "batch_size must be an"),
    ]


@pytest.mark.parametrize("i", range(21))
def test_library_calls_refuse_bad_arguments_with_one_line(i):
    call, msg = _lib_cases()[i]
    with pytest.raises(ConfigError) as exc:
        call()
    assert msg in str(exc.value) and "\n" not in str(exc.value)


def test_library_calls_accept_numpy_scalars():
    from sieve import pim
    from sieve.hw import gpu
    from sieve.hw.calibrations import get_calibration
    from sieve.hw.presets import DEFAULT_GPU, get_gpu

    lay = pim.gemv_layout("b200-hbm3e-pim", np.int64(64), np.int32(64))
    assert lay.out_rows == 64 and type(lay.out_rows) is int
    g = get_gpu(DEFAULT_GPU)
    cal = get_calibration(g)
    assert gpu.gemm_time_ns(np.int64(64), np.float32(64), 64, gpu=g, calib=cal) == \
        gpu.gemm_time_ns(64, 64, 64, gpu=g, calib=cal)


def test_memory_limit_env_is_validated(monkeypatch):
    from sieve.validate import check_memory, memory_limit_bytes

    monkeypatch.setenv(MEMORY_LIMIT_ENV, "8G")
    assert memory_limit_bytes() == 8 << 30
    with pytest.raises(ConfigError, match="needs about 16.0 GiB, more than the 8.0 GiB of "
                                          r"\$SIEVE_MEMORY_LIMIT; lower it"):
        check_memory("x", 16 << 30, "lower it")
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "lots")
    with pytest.raises(ConfigError, match="SIEVE_MEMORY_LIMIT: 'lots' is not a size"):
        memory_limit_bytes()
    monkeypatch.delenv(MEMORY_LIMIT_ENV)
    assert memory_limit_bytes() > 1 << 20


# --------------------------------------------------------------------------------------------
# Fuzz: spec overrides
# --------------------------------------------------------------------------------------------

_SPEC_KEYS = ["nRCDRD", "nRP", "nRFC", "nREFI", "nBL", "tCK_ps", "ticks_per_ck", "nCCDAB",
              "channels", "rows", "columns", "banks", "access_bytes", "stacks", "refresh",
              "name", "description", "pim", "pim.lanes", "pim.gbuf_bytes", "pim.banks_per_pu",
              "pim.dual_row_buffer", "pim.pu_dtype", "bus_ck.ACT", "bus_ck.RD", "bus_ck.XYZ",
              "nRCDXX", "", "pim.", "bus_ck."]
_VALUES = st.one_of(
    st.integers(-(2**40), 2**40),  # 2**62 and up overflow the tick table: engine helper's item
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.booleans(),
    st.none(),
    st.lists(st.integers(0, 4), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(0, 4), max_size=2),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.sampled_from(["hbm3-6400", "b200-hbm3e-pim", "samsung-hbm2-pim"]),
       overrides=st.dictionaries(st.one_of(st.sampled_from(_SPEC_KEYS), st.integers(0, 3)),
                                 _VALUES, max_size=3))
def test_fuzz_spec_overrides_validate_or_refuse_in_one_line(base, overrides):
    from sieve.dram.presets import get_spec

    try:
        spec = get_spec(base, overrides)
    except ConfigError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("DRAM spec")
        return
    spec.validate()
    arrays = spec.to_arrays()  # the engine boundary accepts whatever validated
    assert arrays["cons_lat"].dtype == np.int64


# --------------------------------------------------------------------------------------------
# Fuzz: LoadStore trace lines against an independent reference parser
# --------------------------------------------------------------------------------------------

_ADDR = re.compile(rb"(0[xX][0-9a-fA-F]+|[0-9]+)\Z")


def _reference_parse(lines: list[bytes]):
    """(addresses, writes) or the 1-based number of the first bad line (0 = no requests)."""
    addrs, writes = [], []
    for i, raw in enumerate(lines, 1):
        if not raw.isascii() or len(raw) > 4095:
            return i
        s = raw.strip()
        if not s or s.startswith(b"#"):
            continue
        parts = s.split()
        if len(parts) != 2 or parts[0] not in (b"LD", b"ST") or not _ADDR.match(parts[1]):
            return i
        a = parts[1]
        v = int(a[2:], 16) if a[:2].lower() == b"0x" else int(a)
        if v >= 2**63:
            return i
        addrs.append(v)
        writes.append(parts[0] == b"ST")
    return (addrs, writes) if addrs else 0


_ADDR_TEXT = st.one_of(
    st.integers(0, 2**64).map(lambda v: str(v)),
    st.integers(0, 2**64).map(lambda v: hex(v)),
    st.integers(0, 2**40).map(lambda v: f"0X{v:X}"),
    st.sampled_from(["0x_1", "1_000", "0o17", "0b11", "+64", "-64", "0x", "", "1e3", "٣",
                     "\uff11", "0x1g", " 64", "64 "]),
    st.text(max_size=6),
)
_LINE = st.one_of(
    st.builds(lambda op, sep, a: f"{op}{sep}{a}",
              st.sampled_from(["LD", "ST", "ld", "XX", "LD ST", ""]),
              st.sampled_from([" ", "\t", "  ", "", " \u00a0"]), _ADDR_TEXT),
    st.sampled_from(["", "   ", "# comment", "#", "\r"]),
    st.text(max_size=10),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_LINE, min_size=0, max_size=6))
def test_fuzz_trace_lines_match_reference_or_name_the_first_bad_line(tmp_path_factory, lines):
    from sieve.dram.memtrace import load_loadstore_trace

    raw = [ln.encode("utf-8") for ln in lines]
    path = tmp_path_factory.mktemp("fz") / "f.trace"
    path.write_bytes(b"\n".join(raw) + b"\n")
    expected = _reference_parse([r for part in raw for r in part.split(b"\n")])
    try:
        tr = load_loadstore_trace(path)
    except TraceFormatError as exc:
        msg = str(exc)
        assert "\n" not in msg
        assert expected == 0 and "no requests" in msg or f"line {expected}:" in msg, \
            (msg, expected)
        return
    assert not isinstance(expected, int), expected
    assert tr.addr.tolist() == expected[0] and tr.is_write.tolist() == expected[1]


# --------------------------------------------------------------------------------------------
# Routing-trace .npz files: damaged, hostile, pickled
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def good_trace(tmp_path_factory) -> Path:
    from sieve.workload.router import generate_trace

    p = tmp_path_factory.mktemp("npz") / "good.npz"
    generate_trace("gpt-oss-20b", 4, 3, seed=1).save(p)
    return p


def _rewrite(src: Path, dst: Path, **changes) -> Path:
    with np.load(src) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(arrays["header"].tobytes())
    for k, v in changes.items():
        if k.startswith("meta."):
            header["meta"][k[5:]] = v
        elif k in ("meta", "format", "version"):
            header[k] = v
        elif k == "header_raw":
            arrays["header"] = np.frombuffer(v, dtype=np.uint8)
            continue
        else:
            arrays[k] = v
    if "header_raw" not in changes:
        arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    with open(dst, "wb") as fh:
        np.savez(fh, **arrays)  # np.savez pickles object arrays: a hostile writer can
    return dst


@pytest.mark.parametrize("mmap", [False, True])
@pytest.mark.parametrize("make, msg", [
    (lambda g, d: (d / "e.npz").write_bytes(b"") and d / "e.npz" or d / "e.npz",
     "cannot read as .npz"),
    (lambda g, d: _rewrite(g, d / "m.npz", meta="a string"), "field 'header.meta' invalid"),
    (lambda g, d: _rewrite(g, d / "m.npz", **{"meta.n_experts": "many"}),
     "n_experts must be an integer"),
    (lambda g, d: _rewrite(g, d / "m.npz", **{"meta.layer_ids": 5}), "layer_ids must be a list"),
    (lambda g, d: _rewrite(g, d / "m.npz", **{"meta.top_k": 1000}), "top_k must be in"),
    (lambda g, d: _rewrite(g, d / "p.npz", expert_ids=np.array([object()] * 3, dtype=object)),
     "holds Python objects (a pickle); sieve never unpickles files"),
    (lambda g, d: _rewrite(g, d / "h.npz", header_raw=b"[1, 2]"), "must be a JSON object"),
    (lambda g, d: _rewrite(g, d / "h.npz", header_raw=b"\xff\xfe"), "invalid JSON"),
    (lambda g, d: _rewrite(g, d / "v.npz", version=99), "field 'header.version' is 99"),
    (lambda g, d: _rewrite(g, d / "f.npz", step_offsets=np.array([0.0, 1.5])),
     "field 'step_offsets' has dtype float64"),
])
def test_hostile_trace_files_raise_trace_format_error(good_trace, tmp_path, make, msg, mmap):
    from sieve.workload.trace import load_trace

    path = make(good_trace, tmp_path)
    with pytest.raises(TraceFormatError) as exc:
        load_trace(path, mmap=mmap)
    assert msg in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize("mmap", [False, True])
def test_crc_corrupt_trace_is_refused(good_trace, tmp_path, mmap):
    from sieve.workload.trace import load_trace

    data = bytearray(good_trace.read_bytes())
    with zipfile.ZipFile(good_trace) as zf:
        info = zf.getinfo("expert_ids.npy")
    data[info.header_offset + 30 + len(info.filename) + 200] ^= 0xFF  # inside the array data
    bad = tmp_path / "crc.npz"
    bad.write_bytes(bytes(data))
    if mmap:  # a memory map reads no CRC; the damaged ids are still range-checked when used
        t = load_trace(bad, mmap=True)
        assert t.n_tokens == 12
        ids = np.asarray(t.expert_ids)
        if ids.min() < 0 or ids.max() >= t.n_experts:  # the flipped byte made an id invalid
            bad_steps = [s for s in range(t.n_steps)
                         if not (0 <= ids[t.step_slice(s)]).all()
                         or not (ids[t.step_slice(s)] < t.n_experts).all()]
            with pytest.raises(TraceFormatError, match=f"step {bad_steps[0]}: expert ids"):
                t.counts(bad_steps[0])
            with pytest.raises((TraceFormatError, ConfigError)):
                t.steps(bad_steps[0], bad_steps[0] + 1)
        return
    with pytest.raises(TraceFormatError, match="field 'expert_ids' unreadable"):
        load_trace(bad)


@settings(max_examples=150, deadline=None)
@given(pos=st.floats(0, 1), value=st.integers(0, 255), truncate=st.booleans())
@example(pos=0.007004034403256478, value=14, truncate=False)  # the sniffer met EOFError
def test_fuzz_damaged_trace_files_load_or_refuse(good_trace, tmp_path_factory, pos, value,
                                                 truncate):
    from sieve.workload.trace import load_trace

    data = bytearray(good_trace.read_bytes())
    i = min(int(pos * len(data)), len(data) - 1)
    if truncate:
        data = data[:i]
    else:
        data[i] = value
    p = tmp_path_factory.mktemp("dmg") / "t.npz"
    p.write_bytes(bytes(data))
    for mmap in (False, True):
        try:
            load_trace(p, mmap=mmap)
        except SieveError as exc:
            assert "\n" not in str(exc)


def test_memory_mapped_ids_are_range_checked_when_a_step_is_read(good_trace, tmp_path):
    from sieve.workload.trace import load_trace

    with np.load(good_trace) as z:
        ids = np.array(z["expert_ids"])
    ids.flat[-1] = 10_000  # last token of the last step
    bad = _rewrite(good_trace, tmp_path / "ids.npz", expert_ids=ids)
    with pytest.raises(TraceFormatError, match="must lie in"):
        load_trace(bad)  # read whole: checked at load
    t = load_trace(bad, mmap=True)  # mapped: checked when the step is read
    last = t.n_steps - 1
    t.counts(0) if last else None
    with pytest.raises(TraceFormatError, match=rf"step {last}: expert ids must lie in \[0, "
                                               rf"{t.n_experts}\), found 0..10000"):
        t.counts(last)
    with pytest.raises(SieveError, match="must lie in"):
        t.steps(last, last + 1)
