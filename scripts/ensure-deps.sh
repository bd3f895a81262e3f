#!/usr/bin/env bash
# Makes a fresh clone runnable: the pinned pnpm (from package.json) and the locked dependencies. Quiet when done.
set -euo pipefail
cd "$(dirname "$0")/.."
want=$(node -p 'require("./package.json").packageManager.split("@")[1]')
if [ "$(pnpm --version 2>/dev/null || true)" != "$want" ]; then
  echo "› installing pnpm $want" >&2
  npm install --global --no-audit --no-fund "pnpm@$want" >&2
fi
if [ ! -f node_modules/.pnpm/lock.yaml ] || ! cmp -s pnpm-lock.yaml node_modules/.pnpm/lock.yaml; then
  echo "› installing dependencies (the first time builds better-sqlite3 from source: about a minute)" >&2
  pnpm install --frozen-lockfile >&2
fi
