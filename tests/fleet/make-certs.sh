#!/usr/bin/env bash
# make-certs.sh DIR CA NAME=SAN[,SAN...]...: a test CA (DIR/CA.pem, DIR/CA.key) and, for each
# NAME, a certificate signed by it (DIR/NAME.pem, DIR/NAME.key) with those subject alternative
# names (IP:10.0.0.1, DNS:node1) for both server and client use: what the man pages'
# CERTIFICATES section tells an administrator to do, done by the tests. Elliptic-curve keys
# (P-256), valid for two days.
set -euo pipefail
dir=$1 ca=$2
shift 2
mkdir -p "$dir"
umask 077
if [[ ! -f "$dir/$ca.pem" ]]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -keyout "$dir/$ca.key" -out "$dir/$ca.pem" -subj "/O=rankscope test/CN=$ca" 2>/dev/null
fi
for spec in "$@"; do
  name=${spec%%=*}
  sans=${spec#*=}
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$dir/$name.key" -out "$dir/$name.csr" -subj "/O=rankscope test/CN=$name" 2>/dev/null
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$sans" >"$dir/$name.ext"
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/$ca.pem" -CAkey "$dir/$ca.key" \
    -CAcreateserial -days 2 -extfile "$dir/$name.ext" -out "$dir/$name.pem" 2>/dev/null
  rm -f "$dir/$name.csr" "$dir/$name.ext"
done
