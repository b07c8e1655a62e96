#!/usr/bin/env bash
# Makes throw-away certificates for TLS tests and demos in DIR (default ./certs), with the openssl command: a CA
# (ca.pem, ca.key), a server certificate it signed for localhost and 127.0.0.1 (server.pem: leaf then CA, server.key),
# a client certificate for mutual TLS (client.pem, client.key), three to be chosen by SNI (api: api.test, wildcard:
# *.apps.test, cn-only.test: no subject alternative name), and, for the tests of refusals, one expired
# (expired.pem/.key), one for another name (other-name.pem/.key) and one self-signed (self-signed.pem/.key). EC
# P-256 keys, made anew each run: never commit them.
set -euo pipefail
dir=${1:-certs}
mkdir -p "$dir"
cd "$dir"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

key ca.key
openssl req -x509 -new -key ca.key -sha256 -days 30 -subj "/CN=hotpath test CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" -out ca.pem

# leaf NAME DAYS SAN USAGE: NAME.key and NAME.pem (the leaf, then the CA), signed by the CA; its common name is NAME,
# and an empty SAN leaves the name to it.
leaf() {
    local name=$1 days=$2 san=$3 usage=$4
    key "$name.key"
    openssl req -new -key "$name.key" -subj "/CN=$name" -out "$name.csr"
    printf 'basicConstraints=CA:FALSE\nextendedKeyUsage=%s\n' "$usage" >"$name.ext"
    [ -z "$san" ] || printf 'subjectAltName=%s\n' "$san" >>"$name.ext"
    openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -sha256 -days "$days" \
        -extfile "$name.ext" -out "$name.leaf" 2>/dev/null
    cat "$name.leaf" ca.pem >"$name.pem"
    rm -f "$name.csr" "$name.ext" "$name.leaf"
}
leaf server 30 "DNS:localhost,IP:127.0.0.1" serverAuth
leaf client 30 "DNS:hotpath-test-client" clientAuth
leaf other-name 30 "DNS:elsewhere.invalid" serverAuth
# Served by name (SNI) beside the first: one name, a wildcard, a common name only.
leaf api 30 "DNS:api.test" serverAuth
leaf wildcard 30 "DNS:*.apps.test" serverAuth
leaf cn-only.test 30 "" serverAuth
# Expired: signed with -days -1, its end a day before its start (openssl 3.0 has no -not_after).
key expired.key
openssl req -new -key expired.key -subj "/CN=expired" -out expired.csr
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >expired.ext
openssl x509 -req -in expired.csr -CA ca.pem -CAkey ca.key -CAcreateserial -sha256 -days -1 \
    -extfile expired.ext -out expired.leaf 2>/dev/null
cat expired.leaf ca.pem >expired.pem
rm -f expired.csr expired.ext expired.leaf
key self-signed.key
openssl req -x509 -new -key self-signed.key -sha256 -days 30 -subj "/CN=localhost" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -out self-signed.pem
rm -f ca.srl
echo "make-test-certs: CA, server, client, api, wildcard, cn-only.test, expired, other-name and self-signed certificates in $(pwd)"
