#!/usr/bin/env bash
# Stages a GPU lease from this checkout: the pack (bench/gpu/pack.sh --no-cuda --xz, about 48 MB, made
# once and kept) and fresh bundles of the current code (bench/gpu/bundle.ts, the *.mjs files only, about
# 3 MB) with the current run-on-gpu.sh in DIR (default .gpu/, which .git/info/exclude should list), so a
# device call that carries DIR runs
#
#   mkdir -p /tmp/p && tar -xJf .gpu/svc-gpu-small.tar.xz -C /tmp/p && cp .gpu/app/*.mjs /tmp/p/svc-gpu-small/app/ \
#     && cp .gpu/app/run-on-gpu.sh /tmp/p/svc-gpu-small/ \
#     && cd /tmp/p/svc-gpu-small && ./run-on-gpu.sh --out $OUT --step-timeout 170 [--lab] [-- bench options]
#
# with the code as it is now and no new pack. Rerun after every code change (only the bundles are redone).
#
#   bench/gpu/stage.sh [--dir DIR] [--repack]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DIR=$ROOT/.gpu
REPACK=0
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) DIR=$2; shift 2 ;;
    --repack) REPACK=1; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "stage: unknown argument $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$DIR/app"
grep -qx '/.gpu/' "$ROOT/.git/info/exclude" 2>/dev/null || echo "stage: add /.gpu/ to .git/info/exclude, or the pack travels as an untracked file too" >&2
if [ "$REPACK" = 1 ] || [ ! -s "$DIR/svc-gpu-small.tar.xz" ]; then
  "$ROOT/bench/gpu/pack.sh" --no-cuda --xz --out /tmp/svc-gpu-small
  cp /tmp/svc-gpu-small.tar.xz "$DIR/svc-gpu-small.tar.xz"
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
node --import "$ROOT/bin/register.mjs" "$ROOT/bench/gpu/bundle.ts" --out "$TMP/app" --no-cuda >/dev/null
rm -f "$DIR"/app/*.mjs
cp "$TMP"/app/*.mjs "$DIR/app/"
cp "$ROOT/bench/gpu/run-on-gpu.sh" "$DIR/app/"
echo "stage: $DIR ready ($(du -sh "$DIR" | cut -f1)); pack from $(tar -xJOf "$DIR/svc-gpu-small.tar.xz" svc-gpu-small/MANIFEST.txt 2>/dev/null | sed -n 's/^commit: //p'), bundles from $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- bench engine kernels || echo ' with uncommitted changes')" >&2
