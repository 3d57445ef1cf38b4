#!/usr/bin/env bash
# Installs with apt-get whatever scripts/system-packages.txt lists that is not installed yet, plus
# the Tesseract packs of FACTSIEVE_OCR_LANGUAGES beyond the listed default ones. One dpkg-query
# when everything is there, so `make install` and `make up` can run it every time.
#
# usage: scripts/system-packages.sh [--list]   (--list: print the packages it would ensure)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LIST="$ROOT/scripts/system-packages.txt"
FACTSIEVE_OCR_LANGUAGES="${FACTSIEVE_OCR_LANGUAGES:-}"

log() { printf '[system] %s\n' "$*" >&2; }

packages() {
  # the first column of every line that is not a comment or blank
  sed -e 's/#.*//' "$LIST" | awk -F'|' 'NF > 1 { gsub(/[ \t]+/, "", $1); if ($1 != "") print $1 }'
  # an operator's own OCR languages (Tesseract names: eng, spa, chi_sim, ...) need their packs too
  local l
  for l in ${FACTSIEVE_OCR_LANGUAGES//,/ }; do
    echo "tesseract-ocr-$(echo "$l" | tr '[:upper:]_' '[:lower:]-')"
  done
}

if [ "${1:-}" = "--list" ]; then packages | sort -u; exit 0; fi

mapfile -t wanted < <(packages | sort -u)
missing=()
for p in "${wanted[@]}"; do
  status="$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)"
  [ "${status:0:2}" = "ii" ] || missing+=("$p")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

log "installing with apt-get: ${missing[*]}"
if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
$SUDO apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >&2
