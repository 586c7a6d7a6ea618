"""Tests of the HELP loader: real files when present, tiny synthetic files for the error paths."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from tvm_cost.data.external.help import (
    HelpRecord,
    help_latency_matrix,
    load_help,
    load_help_archs,
    parse_help_device,
)
from tvm_cost.errors import TvmCostError

NB201_EXAMPLE = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("1080ti_32", ("1080ti", 32)),
        ("titan_rtx_256", ("titan_rtx", 256)),
        ("titan_xp_1", ("titan_xp", 1)),
        ("gold_6226", ("gold_6226", None)),  # a CPU model number, not a batch
        ("essential_ph_1", ("essential_ph_1", None)),  # a phone
        ("fpga", ("fpga", None)),
    ],
)
def test_parse_help_device(field: str, expected: tuple[str, int | None]) -> None:
    assert parse_help_device(field) == expected


# --- real data -----------------------------------------------------------------------------------------------


def test_real_archs(help_dir: Path) -> None:
    archs = load_help_archs(help_dir)
    spaces = [space for space, _ in archs]
    assert (spaces.count("nasbench201"), spaces.count("fbnet"), spaces.count("ofa")) == (15625, 5000, 5000)
    assert archs[("nasbench201", 1)] == NB201_EXAMPLE


def test_real_nasbench201_one_gpu_one_batch(help_dir: Path) -> None:
    recs = load_help(help_dir, space="nasbench201", device="1080ti_32")
    assert len(recs) == 15625
    assert {(r.device, r.batch, r.device_id) for r in recs} == {("1080ti", 32, "1080ti_32")}
    assert sorted(r.arch_index for r in recs) == list(range(15625))
    assert all(r.arch.startswith("|") and r.latency_ms > 0 for r in recs)
    assert recs[1].arch == NB201_EXAMPLE


def test_real_device_name_keeps_all_batches(help_dir: Path) -> None:
    recs = load_help(help_dir, space="ofa", device=["v100", "gold_6226"])
    assert {(r.device, r.batch) for r in recs} == {("v100", 1), ("v100", 32), ("v100", 64)}
    assert len(recs) == 15000


# --- synthetic files -----------------------------------------------------------------------------------------


def _write_synthetic(folder: Path, lat_rows: list[str], arch_rows: list[str] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    cell = "|skip_connect~0|+|none~0|none~1|+|none~0|none~1|skip_connect~2|"
    archs = arch_rows or [f"nasbench201,0,{cell}", "ofa,0,{}"]
    with gzip.open(folder / "help_archs.csv.gz", "wt") as f:
        f.write("space,arch_index,arch\n" + "\n".join(archs) + "\n")
    with gzip.open(folder / "help_lat.csv.gz", "wt") as f:
        f.write("space,arch_index,device,latency_ms\n" + "\n".join(lat_rows) + "\n")
    return folder


def test_synthetic_load_and_matrix(tmp_path: Path) -> None:
    folder = _write_synthetic(
        tmp_path, ["nasbench201,0,1080ti_1,2.5", "nasbench201,0,pixel3,40.0", "ofa,0,v100_64,7.0"]
    )
    recs = load_help(folder)
    assert recs[0] == HelpRecord("nasbench201", 0, recs[0].arch, "1080ti", 1, 2.5)
    assert [r.device_id for r in recs] == ["1080ti_1", "pixel3", "v100_64"]
    assert [r.device for r in load_help(folder, batch=64)] == ["v100"]
    archs, devices, matrix = help_latency_matrix(recs)
    assert archs == [("nasbench201", 0), ("ofa", 0)]
    assert devices == ["1080ti_1", "pixel3", "v100_64"]
    np.testing.assert_array_equal(matrix, [[2.5, 40.0, np.nan], [np.nan, np.nan, 7.0]])


def test_synthetic_missing_folder_and_file(tmp_path: Path) -> None:
    with pytest.raises(TvmCostError, match="HELP folder not found") as err:
        load_help(tmp_path / "nope")
    assert str(tmp_path / "nope") in str(err.value)
    folder = _write_synthetic(tmp_path / "h", ["nasbench201,0,1080ti_1,2.5"])
    (folder / "help_lat.csv.gz").unlink()
    with pytest.raises(TvmCostError, match="latency file not found"):
        load_help(folder)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("nasbench201,0,1080ti_1,fast", r"line 2: column 'latency_ms' is 'fast', expected float"),
        ("nasbench201,x,1080ti_1,1.0", r"line 2: column 'arch_index' is 'x', expected int"),
        ("nasbench201,0,1080ti_1", r"line 2: 3 fields, header has 4"),
        ("nasbench201,7,1080ti_1,1.0", r"line 2: nasbench201/7 is not in help_archs"),
        ("nasbench201,0,1080ti_1,-1", r"line 2: latency_ms -1.0 is not a positive number"),
        ("nasbench201,0,1080ti_1,nan", r"latency_ms nan is not a positive number"),
    ],
)
def test_synthetic_malformed_row(tmp_path: Path, row: str, message: str) -> None:
    folder = _write_synthetic(tmp_path, [row])
    with pytest.raises(TvmCostError, match=message) as err:
        load_help(folder)
    assert "\n" not in str(err.value)
    assert err.value.path == str(folder / "help_lat.csv.gz")


def test_synthetic_duplicate_arch_and_bad_header(tmp_path: Path) -> None:
    folder = _write_synthetic(tmp_path, ["ofa,0,v100_1,1.0"], ["ofa,0,{}", "ofa,0,{}"])
    with pytest.raises(TvmCostError, match="line 3: duplicate arch ofa/0"):
        load_help_archs(folder)
    with gzip.open(folder / "help_archs.csv.gz", "wt") as f:
        f.write("space,index,arch\nofa,0,{}\n")
    with pytest.raises(TvmCostError, match=r"missing column\(s\) \['arch_index'\]"):
        load_help_archs(folder)


def test_synthetic_corrupt_gzip(tmp_path: Path) -> None:
    folder = _write_synthetic(tmp_path, ["ofa,0,v100_1,1.0"])
    (folder / "help_lat.csv.gz").write_bytes(b"this is not gzip data")
    with pytest.raises(TvmCostError, match="cannot read"):
        load_help(folder)


def test_unknown_space_lists_choices(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="choices: nasbench201, fbnet, ofa"):
        load_help(tmp_path, space="darts")
