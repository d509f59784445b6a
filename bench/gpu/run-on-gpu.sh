#!/usr/bin/env bash
# The run step on a Linux x64 host with an NVIDIA or AMD GPU, from the unpacked pack (bench/gpu/pack.sh);
# needs neither Node nor network there:
#
#   ./run-on-gpu.sh [--llama-gpu auto|cuda|vulkan|false] [--models "smollm2-135m llama-3.2-1b"] [--type q8_0]
#                   [--adapter gpu] [--label NAME] [--out DIR] [--no-limits] [-- more bench options]
#
# For each model preset it synthesizes the GGUF once (models/, random weights of the real shapes), then runs
# the bench: our engine on Dawn's Vulkan backend (--adapter gpu) beside llama.cpp on CUDA or Vulkan, with
# the adapter probes (--limits) and the batching curve, by default
#   -p 512 -n 128 -r 3 --curve 1,4,8,16 --threads <cores>
# Options after `--` go to the bench last and override those. Writes into DIR (default ./results): one
# results JSON and log per model, and host.txt (GPU, driver, Vulkan drivers found, what llama.cpp could
# load). Copy DIR back.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NODE=$HERE/bin/node
LLAMA_GPU=auto
MODELS="smollm2-135m llama-3.2-1b"
TYPE=q8_0
ADAPTER=gpu
LABEL=
OUT=$HERE/results
LIMITS=--limits
EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --llama-gpu) LLAMA_GPU=$2; shift 2 ;;
    --models) MODELS=$2; shift 2 ;;
    --type) TYPE=$2; shift 2 ;;
    --adapter) ADAPTER=$2; shift 2 ;;
    --label) LABEL=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --no-limits) LIMITS=; shift ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "run-on-gpu: unknown argument $1 (bench options go after --)" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT" "$HERE/models"
OUT=$(cd "$OUT" && pwd)
NOTES=()

"$NODE" --version >/dev/null || { echo "run-on-gpu: $NODE does not run here (it needs glibc >= 2.28 and libstdc++; dawn.node needs glibc >= 2.34)" >&2; exit 1; }

# The Vulkan loader: the host's libvulkan.so.1 if it has one, else the pack's (Debian's libvulkan1).
if ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1 '; then
  VK_LOADER="host ($(ldconfig -p | awk '/libvulkan\.so\.1 / {print $NF; exit}'))"
else
  VK_LIB=$(dirname "$(find "$HERE/vulkan" -name 'libvulkan.so.1' | head -1)")
  export LD_LIBRARY_PATH="$VK_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  VK_LOADER="pack ($VK_LIB)"
fi

# Vulkan drivers (ICD manifests) where the loader looks for them. NVIDIA containers often carry the driver
# library but no manifest; then one is written for libGLX_nvidia.so.0 (the NVIDIA Vulkan driver).
manifests() {
  local d
  for d in $(echo "${XDG_CONFIG_DIRS:-/etc/xdg}:/etc:${XDG_DATA_DIRS:-/usr/local/share:/usr/share}:${HOME:-/root}/.local/share:/usr/local/nvidia/share" | tr ':' ' '); do
    ls "$d"/vulkan/icd.d/*.json 2>/dev/null
  done | sort -u
}
ICDS=$(manifests | tr '\n' ' ' | sed 's/ *$//')
if [ -z "${VK_ICD_FILENAMES:-}${VK_DRIVER_FILES:-}" ] && ! echo "$ICDS" | grep -Eq 'nvidia|radeon|amd|intel'; then
  NV=$( (ldconfig -p 2>/dev/null | awk '/libGLX_nvidia\.so\.0 / {print $NF; exit}'; ls /usr/lib/x86_64-linux-gnu/libGLX_nvidia.so.0 /usr/lib64/libGLX_nvidia.so.0 /usr/local/nvidia/lib64/libGLX_nvidia.so.0 2>/dev/null) | head -1)
  if [ -n "$NV" ]; then
    mkdir -p "$HERE/icd"
    printf '{"file_format_version":"1.0.0","ICD":{"library_path":"%s","api_version":"1.3.0"}}\n' "$NV" > "$HERE/icd/nvidia_icd.json"
    export VK_ICD_FILENAMES=$HERE/icd/nvidia_icd.json
    NOTES+=("no NVIDIA Vulkan manifest on the host: wrote one for $NV")
  else
    NOTES+=("no GPU Vulkan driver manifest found (looked in the loader's folders: ${ICDS:-none}); AMD needs Mesa RADV (mesa-vulkan-drivers) or AMDVLK installed")
  fi
fi
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}

# llama.cpp's CUDA prebuilt links the CUDA runtime and cuBLAS, which only a CUDA toolkit install brings;
# the pack cannot carry them. Without them CUDA cannot load: ask for auto (Vulkan, else CPU) and say so.
# A toolkit outside the linker's cache (/usr/local/cuda) is added to the library path, as node-llama-cpp
# itself would look there.
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-13*/lib64; do
  if [ -e "$d/libcudart.so.13" ] && ! ldconfig -p 2>/dev/null | grep -q 'libcudart\.so\.13 '; then
    export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
    NOTES+=("CUDA libraries from $d")
    break
  fi
done
CUDA_SO=$HERE/app/node_modules/@node-llama-cpp/linux-x64-cuda/bins/linux-x64-cuda/libggml-cuda.so
if [ -f "$CUDA_SO" ]; then
  CUDA_MISSING=$(ldd "$CUDA_SO" 2>/dev/null | awk '/not found/ {print $1}' | tr '\n' ' ' | sed 's/ *$//')
else
  CUDA_MISSING="(CUDA prebuilt left out of the pack)"
fi
if [ -n "$CUDA_MISSING" ]; then
  case "$LLAMA_GPU" in
    cuda) NOTES+=("llama.cpp CUDA requested but its prebuilt cannot load here (missing: $CUDA_MISSING): ran with --llama-gpu auto instead"); LLAMA_GPU=auto ;;
    auto) NOTES+=("llama.cpp CUDA prebuilt cannot load here (missing: $CUDA_MISSING): auto picks Vulkan, else CPU") ;;
  esac
fi

GPU_NAME=$( (nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null || lspci 2>/dev/null | grep -Ei 'vga|3d|display' | sed 's/.*: //') | head -1)
[ -n "$LABEL" ] || LABEL="gpu-$(echo "${GPU_NAME:-unknown}" | tr -cs 'A-Za-z0-9' '-' | sed 's/-*$//')"
NOTE="llama.cpp asked for --llama-gpu $LLAMA_GPU; Vulkan loader: $VK_LOADER; drivers: ${VK_ICD_FILENAMES:-${VK_DRIVER_FILES:-${ICDS:-none}}}"
for n in "${NOTES[@]}"; do NOTE="$NOTE; $n"; done

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "label: $LABEL"
  echo "kernel: $(uname -srm)"
  echo "os: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
  echo "glibc: $(ldd --version 2>/dev/null | head -1)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores"
  echo "memory: $(free -g 2>/dev/null | awk '/Mem:/ {print $2 " GiB"}')"
  echo "gpu: ${GPU_NAME:-none found}"
  nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.max,pcie.link.width.max --format=csv 2>/dev/null | sed 's/^/nvidia-smi: /'
  echo "vulkan loader: $VK_LOADER"
  echo "vulkan manifests found: ${ICDS:-none}"
  echo "VK_ICD_FILENAMES: ${VK_ICD_FILENAMES:-unset}"
  echo "llama.cpp CUDA prebuilt missing libraries: ${CUDA_MISSING:-none}"
  echo "llama.cpp backend asked for: $LLAMA_GPU"
  for n in "${NOTES[@]}"; do echo "note: $n"; done
  echo "--- pack"
  cat "$HERE/MANIFEST.txt" 2>/dev/null
} > "$OUT/host.txt"
cat "$OUT/host.txt"

STATUS=0
for preset in $MODELS; do
  MODEL=$HERE/models/$preset-$TYPE.gguf
  if [ ! -s "$MODEL" ]; then
    "$NODE" "$HERE/app/synth.mjs" --preset "$preset" --type "$TYPE" --out "$MODEL" || { echo "run-on-gpu: synthesizing $preset failed" >&2; STATUS=1; continue; }
  fi
  echo "=== $preset ($TYPE): our engine on --adapter $ADAPTER, llama.cpp on --llama-gpu $LLAMA_GPU" >&2
  "$NODE" "$HERE/app/bench.mjs" --model "$MODEL" --adapter "$ADAPTER" --llama-gpu "$LLAMA_GPU" --threads "$(nproc)" $LIMITS \
    --label "$LABEL" --note "$NOTE" --out "$OUT" -p 512 -n 128 -r 3 --curve 1,4,8,16 "${EXTRA[@]}" 2>&1 | tee "$OUT/$preset-$TYPE.log"
  [ "${PIPESTATUS[0]}" = 0 ] || { echo "run-on-gpu: bench on $preset failed (see $OUT/$preset-$TYPE.log)" >&2; STATUS=1; }
done
echo "run-on-gpu: results in $OUT (copy the folder back)" >&2
exit $STATUS
