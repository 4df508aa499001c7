#!/usr/bin/env bash
# Healthcheck for images without curl or wget: exits 0 if GET http://127.0.0.1:PORT/PATH answers
# 200 within 5 s, 1 otherwise. Uses only bash (its /dev/tcp redirection).
# Usage: http-ok.sh PORT [PATH]
set -u
port=${1:?usage: http-ok.sh PORT [PATH]}
path=${2:-/}
{ exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null || { echo "nothing answers on port $port" >&2; exit 1; }
printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n' "$path" "$port" >&3
IFS= read -r -t 5 status <&3 || { echo "no answer on port $port within 5 s" >&2; exit 1; }
[[ $status =~ ^HTTP/[0-9.]+\ 200[\ $'\r'] ]] || { echo "GET $path: $status" >&2; exit 1; }
