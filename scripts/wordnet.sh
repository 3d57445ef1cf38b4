#!/usr/bin/env bash
# WordNet 3.0 for nltk (METEOR synonym matching in the AVeriTeC scorer), without nltk's downloader.
#
# nltk.download() cannot reach its host here, so the dictionary comes from Debian's
# `wordnet-base` + `wordnet-sense-index` packages (WordNet 3.0, the same database nltk ships).
# Debian leaves out the `lexnames` file that nltk's reader needs; it is rebuilt from the
# lexnames(5WN) man page in wordnet-base (or the standard 45 names below if that page is absent).
#
# Result: ${FACTSIEVE_CACHE:-<repo>/.cache}/nltk_data/corpora/wordnet/ — pass
# <cache>/nltk_data to plugin.verify.wordnet.ensure_wordnet(). Safe to re-run: does nothing
# when the folder is already complete.
#
# usage: scripts/wordnet.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${FACTSIEVE_CACHE:-$ROOT/.cache}"
DEST="$CACHE/nltk_data/corpora/wordnet"
PACKAGES=(wordnet-base wordnet-sense-index)
# Files nltk's WordNetCorpusReader opens (lexnames is the one Debian lacks).
REQUIRED=(lexnames index.noun index.verb index.adj index.adv data.noun data.verb data.adj data.adv
          noun.exc verb.exc adj.exc adv.exc index.sense)

log() { printf '[wordnet] %s\n' "$*" >&2; }

complete() {
  local f
  for f in "${REQUIRED[@]}"; do [ -s "$DEST/$f" ] || return 1; done
}

# The 45 WordNet 3.0 lexicographer files (lexnames(5WN)), used only when the man page is missing.
STANDARD_LEXNAMES="adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact
noun.attribute noun.body noun.cognition noun.communication noun.event noun.feeling noun.food
noun.group noun.location noun.motive noun.object noun.person noun.phenomenon noun.plant
noun.possession noun.process noun.quantity noun.relation noun.shape noun.state noun.substance
noun.time verb.body verb.change verb.cognition verb.communication verb.competition
verb.consumption verb.contact verb.creation verb.emotion verb.motion verb.perception
verb.possession verb.social verb.stative verb.weather adj.ppl"

category() {  # syntactic category number of a lexname: 1 noun, 2 verb, 3 adj, 4 adv
  case "$1" in
    noun.*) echo 1 ;; verb.*) echo 2 ;; adj.*) echo 3 ;; adv.*) echo 4 ;;
    *) log "unknown lexicographer file name: $1"; return 1 ;;
  esac
}

write_lexnames() {  # write_lexnames MANPAGE_GZ OUT
  local man="$1" out="$2" names n=0 name
  if [ -f "$man" ]; then
    # Table rows of the man page: "NN<TAB>name<TAB>contents" (some names carry trailing spaces).
    names="$(zcat "$man" | awk -F'\t' '/^[0-9][0-9]\t/ { gsub(/[ \t]+$/, "", $2); print $2 }')"
  else
    log "lexnames(5WN) man page not found; using the standard WordNet 3.0 list"
    names="$STANDARD_LEXNAMES"
  fi
  : > "$out.tmp"
  for name in $names; do
    printf '%02d\t%s\t%s\n' "$n" "$name" "$(category "$name")" >> "$out.tmp"
    n=$((n + 1))
  done
  if [ "$n" -ne 45 ]; then
    log "expected 45 lexicographer files, found $n"; rm -f "$out.tmp"; return 1
  fi
  mv "$out.tmp" "$out"
}

if complete; then
  log "already present: $DEST"
  exit 0
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
if ! apt-get download "${PACKAGES[@]}" >&2; then
  log "apt-get download failed; refreshing the package lists and retrying"
  apt-get update >&2
  apt-get download "${PACKAGES[@]}" >&2
fi
mkdir -p extract
for deb in ./*.deb; do dpkg-deb -x "$deb" extract; done

mkdir -p "$DEST"
cp extract/usr/share/wordnet/* "$DEST/"
write_lexnames extract/usr/share/man/man5/lexnames.5WN.gz "$DEST/lexnames"

if ! complete; then
  log "incomplete WordNet in $DEST"; exit 1
fi
log "WordNet 3.0 ready: $DEST"
