"""A bounded mutation-fuzzing campaign over the native read paths, in child processes
(fuzz/fuzz_pages.py; run it with --cases N for long campaigns)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))

import fuzz_pages  # noqa: E402


def test_mutated_pages_give_rcfmt_errors_or_valid_arrow():
    result = fuzz_pages.run(cases=600, seed=20261124, timeout=900)
    assert result["cases"] == 600
    assert not result["failures"], "\n".join(result["failures"][:10])
    # the mutations reach the decoders, not only the checksums
    kinds = " ".join(result["outcomes"])
    assert "RcfmtError" not in kinds.split(), result["outcomes"]
    assert "ChecksumError" in kinds and "read without error" in kinds, result["outcomes"]
    assert sum(n for k, n in result["outcomes"].items() if k.startswith("CorruptFileError")) > 100, result["outcomes"]


def test_forged_metadata_gives_rcfmt_errors_or_valid_arrow():
    """Footers, schemas and page indexes forged with recomputed checksums, through every
    read path (issue: forged files), in child processes under an address-space limit."""
    result = fuzz_pages.run(cases=300, seed=20261125, timeout=900, metadata_only=True)
    assert result["cases"] == 300
    assert not result["failures"], "\n".join(result["failures"][:10])
    outcomes = result["outcomes"]
    assert "read without error" in outcomes, outcomes
    assert not any(k.startswith("RcfmtError") for k in outcomes), outcomes  # e.g. "file is closed": a harness bug
    assert sum(n for k, n in outcomes.items() if k.startswith("CorruptFileError")) > 100, outcomes
