#!/usr/bin/env bash
# One-step install on Debian/Ubuntu: the system packages the software WebGPU adapters and browser tests
# need, then the exact npm dependencies from package-lock.json.
#   - libegl1 libegl-mesa0 libgles2 libgl1-mesa-dri: Mesa llvmpipe for Dawn's OpenGL ES backend
#     (compatibility mode), the default adapter without a GPU (the faster CPU one);
#   - libvulkan1 + chromium (its chromium-common ships SwiftShader's Vulkan ICD): the core WebGPU
#     software adapter (the last resort, and the GPU kernel variants' test bed), and the browser for
#     the in-browser tests;
#   - postgresql: the server binaries (/usr/lib/postgresql/<version>/bin, and the `postgres` user they
#     run as when the tests run as root) for the tests of the PostgreSQL store, which start their own
#     throwaway cluster (test/helpers/postgres-server.ts); production points --store at its own server;
#   - redis-server: the same for the tests of the limits shared on Redis (test/helpers/redis-server.ts).
# On a machine with a GPU, its Vulkan driver is used instead; these packages do no harm there.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(libvulkan1 chromium libegl1 libegl-mesa0 libgles2 libgl1-mesa-dri ca-certificates postgresql redis-server)

if command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "install: system packages: ${missing[*]}" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "install: system packages already present" >&2
  fi
else
  echo "install: no apt-get here; install the equivalents of: ${PACKAGES[*]}" >&2
fi

echo "install: npm ci" >&2
npm ci --no-audit --no-fund
