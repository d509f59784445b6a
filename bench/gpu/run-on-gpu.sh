#!/usr/bin/env bash
# The run step on a Linux x64 host with an NVIDIA or AMD GPU, from the unpacked pack (bench/gpu/pack.sh);
# needs neither Node nor network there:
#
#   ./run-on-gpu.sh [--llama-gpu auto|cuda|vulkan|false] [--models "smollm2-135m llama-3.2-1b"] [--type q8_0]
#                   [--adapter gpu] [--label NAME] [--out DIR] [--no-limits] [--no-check]
#                   [--step-timeout SECONDS] [--lab] [--lab-no-products] [--lab-quick] [--no-bench] [-- more bench options]
#
# For each model preset it synthesizes the GGUF once (models/, random weights of the real shapes). Then the
# parity check (app/check.mjs): our engine on the adapter must give llama.cpp's (CPU) greedy tokens on the
# pack's real models (check-models/) and the synthesized ones. Then, per model, the bench: our engine on
# Dawn's Vulkan backend (--adapter gpu) beside llama.cpp on CUDA or Vulkan, with the adapter probes
# (--limits), the batching curve and the per-kernel profile of a prefill and a decode step (timestamps), by
# default
#   -p 512 -n 128 -r 3 --curve 1,4,8,16 --profile --threads <cores>
# Options after `--` go to the bench last and override those. --step-timeout stops any one step (a
# synthesis, the check, a bench) that runs longer, so a lease-bound run still reaches the next step.
# --lab first runs the kernel lab (app/lab.mjs: the adapter's limits and experimental features, the decode
# matrix-vector kernels in each workgroup shape on 1B-class products, decode attention whole and split,
# a 1B prefill's products in each tile, and each model's steps kernel by kernel) into DIR/lab.json;
# --lab-no-products skips the lab's workgroup shapes (its part 2); --lab-quick runs only its limits, prefill
# tiles and subgroup matrices (a minute: room for the check and benches in the same lease); --no-bench stops
# after it and the check.
# Writes into DIR (default ./results): check.json, one results JSON and log per model, and host.txt (GPU,
# driver, Vulkan drivers found, what llama.cpp could load). Copy DIR back.
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
CHECK=1
LAB=0
LAB_ARGS=()
BENCH=1
STEP_TIMEOUT=
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
    --no-check) CHECK=0; shift ;;
    --lab) LAB=1; shift ;;
    --lab-no-products) LAB=1; LAB_ARGS+=(--no-products); shift ;;
    --lab-quick) LAB=1; LAB_ARGS+=(--no-products --no-attention --no-profiles); shift ;;
    --no-bench) BENCH=0; shift ;;
    --step-timeout) STEP_TIMEOUT=$2; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "run-on-gpu: unknown argument $1 (bench options go after --)" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT" "$HERE/models"
OUT=$(cd "$OUT" && pwd)
NOTES=()

"$NODE" --version >/dev/null || { echo "run-on-gpu: $NODE does not run here (it needs glibc >= 2.28 and libstdc++; dawn.node needs glibc >= 2.34)" >&2; exit 1; }

# The Vulkan loader and GLVND: the host's where it has them, else the pack's (Debian's libvulkan1 and
# libglvnd). NVIDIA's Vulkan driver (libGLX_nvidia.so.0) gives no vkCreateInstance without
# libGLdispatch.so.0, which containers that mount the driver often lack.
PACK_LIB=$(dirname "$(find "$HERE/vulkan" -name 'libvulkan.so.1' | head -1)")
MISSING_LIBS=
for lib in libvulkan.so.1 libGLdispatch.so.0 libGLX.so.0 libEGL.so.1; do
  ldconfig -p 2>/dev/null | grep -q "$lib " || MISSING_LIBS="$MISSING_LIBS $lib"
done
if [ -n "$MISSING_LIBS" ]; then
  export LD_LIBRARY_PATH="$PACK_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  VK_LOADER="pack ($PACK_LIB), as the host lacks:$MISSING_LIBS"
else
  VK_LOADER="host ($(ldconfig -p | awk '/libvulkan\.so\.1 / {print $NF; exit}'))"
fi

# Vulkan drivers (ICD manifests). The loader looks in the XDG folders and /etc; NVIDIA containers often
# mount the driver's manifest under /usr/local/nvidia/share instead, or carry the driver library with no
# manifest at all. Then the loader is pointed at the mounted manifest, or at one written here for
# libGLX_nvidia.so.0 (the NVIDIA Vulkan driver).
manifests() {
  local d
  for d in $(echo "${XDG_CONFIG_DIRS:-/etc/xdg}:/etc:${XDG_DATA_DIRS:-/usr/local/share:/usr/share}:${HOME:-/root}/.local/share" | tr ':' ' '); do
    ls "$d"/vulkan/icd.d/*.json 2>/dev/null
  done | sort -u
}
ICDS=$(manifests | tr '\n' ' ' | sed 's/ *$//')
for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
  if [ -e "$d/libGLX_nvidia.so.0" ] && ! ldconfig -p 2>/dev/null | grep -q 'libGLX_nvidia\.so\.0 '; then
    export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
    NOTES+=("NVIDIA driver libraries from $d")
  fi
done
if [ -z "${VK_ICD_FILENAMES:-}${VK_DRIVER_FILES:-}" ] && ! echo "$ICDS" | grep -Eq 'nvidia|radeon|amd|intel'; then
  MOUNTED=$(ls /usr/local/nvidia/share/vulkan/icd.d/*.json 2>/dev/null | tr '\n' ':' | sed 's/:$//')
  NV=$( (ldconfig -p 2>/dev/null | awk '/libGLX_nvidia\.so\.0 / {print $NF; exit}'; ls /usr/lib/x86_64-linux-gnu/libGLX_nvidia.so.0 /usr/lib64/libGLX_nvidia.so.0 /usr/local/nvidia/lib64/libGLX_nvidia.so.0 2>/dev/null) | head -1)
  if [ -n "$MOUNTED" ]; then
    export VK_ICD_FILENAMES=$MOUNTED
    NOTES+=("the NVIDIA Vulkan manifest is outside the loader's folders: VK_ICD_FILENAMES=$MOUNTED")
  elif [ -n "$NV" ]; then
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

# One step, stopped after --step-timeout seconds if given.
step() {
  if [ -n "$STEP_TIMEOUT" ]; then timeout -k 10 "$STEP_TIMEOUT" "$@"; else "$@"; fi
}

STATUS=0
BENCHED=()
for preset in $MODELS; do
  MODEL=$HERE/models/$preset-$TYPE.gguf
  if [ ! -s "$MODEL" ]; then
    step "$NODE" "$HERE/app/synth.mjs" --preset "$preset" --type "$TYPE" --out "$MODEL" || { echo "run-on-gpu: synthesizing $preset failed" >&2; rm -f "$MODEL"; STATUS=1; continue; }
  fi
  BENCHED+=("$preset")
done

if [ "$LAB" = 1 ]; then
  echo "=== kernel lab on --adapter $ADAPTER" >&2
  step "$NODE" "$HERE/app/lab.mjs" --adapter "$ADAPTER" --out "$OUT/lab.json" ${LAB_ARGS[@]+"${LAB_ARGS[@]}"} \
    --models $(for p in "${BENCHED[@]}"; do echo "$HERE/models/$p-$TYPE.gguf"; done) 2>&1 | tee "$OUT/lab.log"
  [ "${PIPESTATUS[0]}" = 0 ] || { echo "run-on-gpu: the kernel lab failed (see $OUT/lab.log)" >&2; STATUS=1; }
fi

if [ "$CHECK" = 1 ]; then
  echo "=== parity check: our engine on --adapter $ADAPTER against llama.cpp (CPU) greedy tokens" >&2
  step "$NODE" "$HERE/app/check.mjs" --adapter "$ADAPTER" --threads "$(nproc)" --out "$OUT/check.json" \
    --models $(ls "$HERE"/check-models/*.gguf 2>/dev/null) $(for p in "${BENCHED[@]}"; do echo "$HERE/models/$p-$TYPE.gguf"; done) \
    || { echo "run-on-gpu: the parity check failed (see $OUT/check.json)" >&2; STATUS=1; }
fi

[ "$BENCH" = 1 ] || BENCHED=()
for preset in "${BENCHED[@]}"; do
  MODEL=$HERE/models/$preset-$TYPE.gguf
  echo "=== $preset ($TYPE): our engine on --adapter $ADAPTER, llama.cpp on --llama-gpu $LLAMA_GPU" >&2
  step "$NODE" "$HERE/app/bench.mjs" --model "$MODEL" --adapter "$ADAPTER" --llama-gpu "$LLAMA_GPU" --threads "$(nproc)" $LIMITS \
    --label "$LABEL" --note "$NOTE" --out "$OUT" -p 512 -n 128 -r 3 --curve 1,4,8,16 --profile "${EXTRA[@]}" 2>&1 | tee "$OUT/$preset-$TYPE.log"
  [ "${PIPESTATUS[0]}" = 0 ] || { echo "run-on-gpu: bench on $preset failed (see $OUT/$preset-$TYPE.log)" >&2; STATUS=1; }
done
echo "run-on-gpu: results in $OUT (copy the folder back)" >&2
exit $STATUS
