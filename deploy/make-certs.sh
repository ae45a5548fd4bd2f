#!/usr/bin/env bash
# Makes everything a remote traind needs for TLS and bearer tokens: a private CA, a server
# certificate for HOSTNAME (and any IPs given), a client certificate for mutual TLS and a random
# token. Then prints the traind and trainctl command lines that use them.
#
#   deploy/make-certs.sh [-o DIR] [--port N] [--no-localhost] [--force] HOSTNAME [IP...]
#
# Output (DIR: -o, else $TRAIND_CERTS_DIR, else ./certs; created mode 0700):
#   ca.pem ca.key            self-signed CA, 10 years (ca.key is only needed to issue more certs)
#   server.pem server.key    serverAuth, SAN DNS:HOSTNAME (+ localhost, 127.0.0.1, ::1) + IP:...
#   client.pem client.key    clientAuth, for traind --tls-client-ca
#   tokens.txt               for traind --token-file: "TOKEN admin admin" (TOKEN NAME ROLE; add
#                            "TOKEN NAME user" lines for people who manage only their own jobs)
#   token                    the same token, for trainctl --token-file
# Keys are EC P-256; leaf certificates are valid 825 days. Private keys and token files are 0600.
# Existing files are never overwritten without --force.
set -euo pipefail

prog=$(basename "$0")
usage() {
  cat <<EOF
usage: $prog [-o DIR] [--port N] [--no-localhost] [--force] HOSTNAME [IP...]

Creates a CA, a server certificate for HOSTNAME, a client certificate and a bearer token for
traind over TLS, and prints the traind and trainctl commands that use them.

  HOSTNAME        the DNS name clients put in --addr (an IP address is accepted too)
  IP...           more addresses clients may connect to (IPv4 or IPv6), added as IP SANs
  -o, --out DIR   output directory (default: \$TRAIND_CERTS_DIR, else ./certs)
  --port N        port shown in the printed commands (default 50051)
  --no-localhost  do not add DNS:localhost, IP:127.0.0.1 and IP:::1 to the server certificate
  --force         overwrite existing files in DIR
  -h, --help      this help
EOF
}
die_usage() { echo "$prog: $*" >&2; usage >&2; exit 2; }

is_ipv4() {
  local ip=$1 part parts=()
  [[ $ip =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]] || return 1
  IFS=. read -r -a parts <<<"$ip"
  for part in "${parts[@]}"; do
    [[ $part =~ ^(0|[1-9][0-9]*)$ ]] && ((part <= 255)) || return 1
  done
}

is_ipv6() {
  local ip=$1 head tail groups=() g n max=8
  [[ $ip == *:* && $ip =~ ^[0-9A-Fa-f:.]+$ ]] || return 1
  if [[ $ip =~ ^(.*:)([0-9.]+)$ && ${BASH_REMATCH[2]} == *.* ]]; then  # trailing IPv4, ::ffff:1.2.3.4
    head=${BASH_REMATCH[1]}
    is_ipv4 "${BASH_REMATCH[2]}" || return 1
    ip=${head}0:0
  fi
  if [[ $ip == *::* ]]; then
    head=${ip%%::*} tail=${ip#*::}
    [[ $tail != *::* ]] || return 1
    max=7
    ip="$head${head:+${tail:+:}}$tail"
    [[ -n $ip ]] || return 0  # "::"
  fi
  [[ $ip != :* && $ip != *: ]] || return 1
  IFS=: read -r -a groups <<<"$ip"
  n=${#groups[@]}
  for g in "${groups[@]}"; do [[ $g =~ ^[0-9A-Fa-f]{1,4}$ ]] || return 1; done
  if ((max == 8)); then ((n == 8)); else ((n <= 7)); fi
}

is_hostname() {
  local name=$1 label labels=()
  ((${#name} <= 253)) && [[ $name =~ ^[A-Za-z0-9.-]+$ && $name != .* && $name != *. && $name != *..* ]] || return 1
  IFS=. read -r -a labels <<<"$name"
  for label in "${labels[@]}"; do
    [[ $label =~ ^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$ ]] || return 1
  done
  [[ ! $name =~ ^[0-9.]+$ ]]  # all digits and dots: a malformed IPv4, not a name
}

out=${TRAIND_CERTS_DIR:-./certs}
port=50051
localhost=1
force=0
args=()
while (($#)); do
  case $1 in
    -h | --help) usage; exit 0 ;;
    -o | --out) (($# >= 2)) || die_usage "$1 needs a directory"; out=$2; shift 2 ;;
    --out=*) out=${1#*=}; shift ;;
    --port) (($# >= 2)) || die_usage "--port needs a number"; port=$2; shift 2 ;;
    --port=*) port=${1#*=}; shift ;;
    --no-localhost) localhost=0; shift ;;
    --force) force=1; shift ;;
    --) shift; args+=("$@"); break ;;
    -*) die_usage "unknown option $1" ;;
    *) args+=("$1"); shift ;;
  esac
done
((${#args[@]} >= 1)) || die_usage "HOSTNAME is required"
[[ -n $out ]] || die_usage "the output directory is empty"
if [[ ! $port =~ ^[1-9][0-9]{0,4}$ ]] || ((port > 65535)); then die_usage "bad port '$port' (1-65535)"; fi
command -v openssl >/dev/null || { echo "$prog: openssl is not installed (apt-get install openssl)" >&2; exit 1; }

host=${args[0]}
dns=() ips=()
if is_ipv4 "$host" || is_ipv6 "$host"; then
  ips+=("$host")
elif is_hostname "$host"; then
  dns+=("$host")
else
  die_usage "bad HOSTNAME '$host' (letters, digits, '-' and '.'; or an IP address)"
fi
for ip in "${args[@]:1}"; do
  is_ipv4 "$ip" || is_ipv6 "$ip" || die_usage "bad IP address '$ip'"
  ips+=("$ip")
done
if ((localhost)); then
  dns+=(localhost) ips+=(127.0.0.1 ::1)
fi
# SAN entries, without duplicates (DNS names compare case-insensitively).
san="" seen=" "
for d in "${dns[@]}"; do
  key="DNS:${d,,}"; [[ $seen == *" $key "* ]] && continue; seen+="$key "; san+="${san:+, }DNS:$d"
done
for ip in "${ips[@]}"; do
  key="IP:${ip,,}"; [[ $seen == *" $key "* ]] && continue; seen+="$key "; san+="${san:+, }IP:$ip"
done

files=(ca.pem ca.key server.pem server.key client.pem client.key tokens.txt token)
if [[ -e $out && ! -d $out ]]; then
  echo "$prog: $out exists and is not a directory" >&2; exit 1
fi
if ((!force)); then
  existing=()
  for f in "${files[@]}"; do [[ -e $out/$f ]] && existing+=("$out/$f"); done
  if ((${#existing[@]})); then
    echo "$prog: refusing to overwrite ${existing[*]} (use --force, or -o another directory)" >&2
    exit 1
  fi
fi

umask 077
mkdir -p "$out"
out=$(cd "$out" && pwd -P)
work=$(mktemp -d "$out/.make-certs.XXXXXX")
trap 'rm -rf "$work"' EXIT

cat >"$work/openssl.cnf" <<EOF
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = $san
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF

ossl() {  # openssl, quiet unless it fails
  local log
  if ! log=$(openssl "$@" 2>&1); then
    echo "$prog: openssl $1 failed:" >&2; echo "$log" >&2; exit 1
  fi
}
newkey() { ossl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/$1.key"; }
serial() { echo "0x$(openssl rand -hex 16)"; }

newkey ca
ossl req -new -x509 -config "$work/openssl.cnf" -extensions ca -key "$work/ca.key" \
  -subj "/O=traind/CN=traind CA $(date -u +%Y-%m-%d) ${host:0:40}" -days 3650 -sha256 \
  -set_serial "$(serial)" -out "$work/ca.pem"

leaf() {  # leaf NAME CN EXTENSIONS
  newkey "$1"
  ossl req -new -config "$work/openssl.cnf" -key "$work/$1.key" -subj "/O=traind/CN=$2" \
    -out "$work/$1.csr"
  ossl x509 -req -in "$work/$1.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" \
    -set_serial "$(serial)" -days 825 -sha256 -extfile "$work/openssl.cnf" -extensions "$3" \
    -out "$work/$1.pem"
  rm -f "$work/$1.csr"
}
leaf server "${host:0:64}" server
leaf client trainctl client

ossl verify -CAfile "$work/ca.pem" -purpose sslserver "$work/server.pem"
ossl verify -CAfile "$work/ca.pem" -purpose sslclient "$work/client.pem"

token=$(openssl rand -hex 32)
printf '%s admin admin\n' "$token" >"$work/tokens.txt"  # TOKEN NAME ROLE
printf '%s\n' "$token" >"$work/token"

chmod 0600 "$work"/*.key "$work/tokens.txt" "$work/token"
chmod 0644 "$work"/*.pem
for f in "${files[@]}"; do mv -f "$work/$f" "$out/$f"; done

addr_host=$host
q=$(printf %q "$out")  # paths as a shell reads them back
listen=0.0.0.0:$port
if [[ $host == *:* ]]; then addr_host="[$host]" listen="[::]:$port"; fi  # IPv6 literal
cat <<EOF
$prog: wrote $out/{ca.pem,ca.key,server.pem,server.key,client.pem,client.key,tokens.txt,token}
server certificate: CN=$host, $san
Copy ca.pem, client.pem, client.key and token to the client machine; ca.key issues certificates,
keep it offline. The token is an admin's (it sees every job and may pause the queue); add a line
"TOKEN NAME user" to tokens.txt for each person who should manage only their own jobs
(e.g. TOKEN from \`openssl rand -hex 32\`), and restart traind.

On the server:
  traind --listen $listen --tls-cert $q/server.pem --tls-key $q/server.key --tls-client-ca $q/ca.pem --token-file $q/tokens.txt

On a client:
  trainctl --addr $addr_host:$port --tls-ca $q/ca.pem --tls-cert $q/client.pem --tls-key $q/client.key --token-file $q/token devices
or
  export TRAINCTL_ADDR=$addr_host:$port TRAINCTL_TLS_CA=$q/ca.pem TRAINCTL_TLS_CERT=$q/client.pem TRAINCTL_TLS_KEY=$q/client.key TRAINCTL_TOKEN_FILE=$q/token
  trainctl devices
EOF
