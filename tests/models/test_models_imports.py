"""`tvm_cost.models` is pure torch + PyG: it must never import tvm."""

import subprocess
import sys
from pathlib import Path

import tvm_cost.models

MODELS_DIR = Path(tvm_cost.models.__file__).parent


def test_models_source_never_imports_tvm():
    for path in MODELS_DIR.glob("*.py"):
        for line in path.read_text().splitlines():
            words = line.split()
            assert not (words[:2] in (["import", "tvm"], ["from", "tvm"]) or
                        (len(words) > 1 and words[0] in ("import", "from") and words[1].startswith("tvm."))), \
                f"{path.name}: {line.strip()}"


def test_importing_models_and_train_loads_no_tvm():
    code = ("import sys, tvm_cost.models, tvm_cost.train; "
            "bad = [m for m in sys.modules if m == 'tvm' or m.startswith('tvm.')]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
