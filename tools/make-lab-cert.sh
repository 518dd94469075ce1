#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Makes a self-signed TLS certificate and key for a lab's DASP runs (spec.security.tls):
# the certificate names the given hosts (DNS names or IP addresses) plus localhost and
# 127.0.0.1, so clients can check it whichever of them they dial. The key is written with
# mode 0600. Prints the spec snippet that uses the pair.
#
# usage: tools/make-lab-cert.sh [-o DIR] [-d DAYS] [HOST|IP ...]
#   -o DIR   where lab-cert.pem and lab-key.pem go (default: ./lab-tls)
#   -d DAYS  validity (default: 825)
# Copy lab-cert.pem to every host that runs a node; lab-key.pem only to the server's.
set -euo pipefail

out=./lab-tls
days=825
while getopts "o:d:h" opt; do
  case $opt in
    o) out=$OPTARG ;;
    d) days=$OPTARG ;;
    h) sed -n '3,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: $0 [-o DIR] [-d DAYS] [HOST|IP ...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))

if ! command -v openssl >/dev/null 2>&1; then
  echo "make-lab-cert: openssl is not installed (Debian: apt-get install openssl)" >&2
  exit 1
fi
case $days in
  ''|*[!0-9]*) echo "make-lab-cert: -d takes a number of days (got '$days')" >&2; exit 2 ;;
esac

# Subject alternative names: the arguments, then localhost and 127.0.0.1 (no duplicates).
names=("$@" localhost 127.0.0.1)
san=""
seen=" "
for name in "${names[@]}"; do
  [ -n "$name" ] || continue
  case "$name" in
    *[!A-Za-z0-9.:*-]*) echo "make-lab-cert: '$name' is not a host name or an IP address" >&2; exit 2 ;;
  esac
  case "$seen" in *" $name "*) continue ;; esac
  seen="$seen$name "
  if [[ $name =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ || $name == *:* ]]; then
    san="${san:+$san,}IP:$name"
  else
    san="${san:+$san,}DNS:$name"
  fi
done
common=${1:-localhost}

mkdir -p "$out"
cert="$out/lab-cert.pem"
key="$out/lab-key.pem"
(
  umask 077
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 \
    -days "$days" -subj "/CN=$common" -addext "subjectAltName=$san" \
    -keyout "$key" -out "$cert" 2>/dev/null
)
chmod 600 "$key"
chmod 644 "$cert"
certAbs=$(cd "$(dirname "$cert")" && pwd)/$(basename "$cert")
keyAbs=$(cd "$(dirname "$key")" && pwd)/$(basename "$key")

echo "make-lab-cert: wrote $certAbs and $keyAbs (names: ${san//,/, }; valid $days days)"
cat <<EOF
Add to the experiment spec:
  "security": {
    "tls": true,
    "tls_cert": "$certAbs",
    "tls_key": "$keyAbs"
  }
EOF
