#!/usr/bin/env bash
# Writes seeds for rdb_parser_fuzz: real RDBs saved by redis-server, each
# behind the 8-byte prefix the fuzzer reads as its fragment-size seed (the RDB
# itself is the file from byte 9 on: `tail -c +9 FILE`).
# Usage: bash tests/fuzz/make-rdb-corpus.sh OUTDIR   (tests/fuzz/corpus/rdb is
# what is checked in)
#
# A throwaway redis-server (free loopback port, temp dir, no automatic saves)
# is filled through redis-cli with every type in its small and large
# encodings, then SAVEd under a few settings:
#   all-types             every type, small encodings, rdbcompression yes
#   all-types-no-checksum the same with rdbchecksum no (EOF checksum 0)
#   big-encodings         large encodings too (quicklist of several nodes and a
#                         plain node, hashtable sets and hash, skiplist zset,
#                         a long stream), LZF on every string that compresses
#   big-encodings-no-lzf  the same with rdbcompression no
#   one-key, empty        the smallest RDBs (no keys: AUX fields and EOF only)
set -euo pipefail
out=${1:?usage: make-rdb-corpus.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)

tmp=$(mktemp -d)
pid=""
stop_server() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  pid=""
}
trap 'stop_server; rm -rf "$tmp"' EXIT

# Starts an empty redis-server with extra settings "$@" (rdbchecksum cannot be
# changed at run time) on a random free port, trying again if it is taken.
start_server() {
  stop_server
  rm -f "$tmp/dump.rdb"
  for _ in $(seq 20); do
    port=$((20000 + RANDOM % 40000))
    redis-server --port "$port" --bind 127.0.0.1 --dir "$tmp" --dbfilename dump.rdb \
      --save '' --appendonly no --logfile "$tmp/redis.log" "$@" &
    pid=$!
    for _ in $(seq 50); do
      # Ours, not another redis-server that already had the port.
      redis-cli -p "$port" info server 2>/dev/null | grep -q "^process_id:$pid\b" && return 0
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    stop_server
  done
  echo "make-rdb-corpus: could not start redis-server" >&2
  cat "$tmp/redis.log" >&2
  exit 1
}

# Runs commands from stdin, one per line, on one connection; fails on any error.
cli() {
  local reply
  reply=$(redis-cli -p "$port")
  if grep -E '^(ERR|WRONGTYPE|NOSCRIPT|BUSY)' <<<"$reply" >&2; then
    echo "make-rdb-corpus: a command failed" >&2
    exit 1
  fi
}

# SAVEs and writes OUTDIR/NAME: the 8-byte prefix (hex, little-endian seed)
# and then dump.rdb. Seeds with (seed & 3) == 3 run with tiny limits.
save_as() {
  local name=$1 prefix=$2
  echo SAVE | cli
  { printf "$(sed 's/../\\x&/g' <<<"$prefix")"; cat "$tmp/dump.rdb"; } >"$out/$name"
  echo "make-rdb-corpus: $name $(stat -c %s "$out/$name") bytes" >&2
}

# Every type in its small encoding, TTLs, binary-safe names, several DBs, a
# function library, a stream with groups, pending entries and claims.
fill_small() {
  cli <<'EOF'
SELECT 0
SET str:small hello
SET str:int 12345
SET str:negint -987654321
SET str:bigint 12345678901234567890
SET str:empty ""
SET "bin\x00key\xff" "\x00\x01\x02\xff\xfe binary value"
SET str:ttl with-ttl EX 3600
SET str:pttl with-absolute-ttl PXAT 4102444800000
RPUSH list:small a b c 1 2 3 -17 "with space"
SADD set:intset 1 2 3 -4 100000 4294967296
SADD set:strings apple banana cherry
ZADD zset:small 1 a 2.5 b -3 c -inf lo +inf hi
HSET hash:small f1 v1 f2 2 f3 ""
HSET hash:ttl f v
EXPIRE hash:ttl 7200
XADD stream 1-1 name ann age 30
XADD stream 1-2 name bob age 31
XADD stream 2-0 name cid
XADD stream 3-0 other x y z
XADD stream 4-0 name dee age 33
XGROUP CREATE stream g1 0
XGROUP CREATE stream g2 $
XREADGROUP GROUP g1 alice COUNT 3 STREAMS stream >
XREADGROUP GROUP g1 bob COUNT 1 STREAMS stream >
XACK stream g1 1-1
XCLAIM stream g1 carol 0 1-2
XDEL stream 2-0
XGROUP CREATE stream:empty g 0 MKSTREAM
FUNCTION LOAD "#!lua name=corpuslib\nredis.register_function('echo', function(keys, args) return args[1] end)\nredis.register_function{function_name='ro', callback=function() return 1 end, flags={'no-writes'}}"
SELECT 1
SET db1:key db1-value
LPUSH db1:list x
SELECT 15
SET db15:key db15-value PX 86400000
HSET db15:hash a 1
EOF
}

# Large encodings (Redis 7.0 defaults): a quicklist of several 8 KB listpack
# nodes and one plain node (an element above 8 KB), hashtable sets (over 512
# integers; strings), a skiplist zset (over 128 members), a hashtable hash (a
# value over 64 bytes) and a 200-field listpack one, a long stream with
# pending entries, a long compressible string.
fill_big() {
  {
    echo SELECT 0
    printf 'SET str:compressible %s\n' "$(printf 'abcdefgh%.0s' $(seq 300))"
    # Pseudo-random but reproducible: LZF gains nothing on these.
    awk 'BEGIN {
      x = 12345
      for (i = 0; i < 400; i++) {
        s = ""
        for (j = 0; j < 12; j++) { x = (x * 1103515245 + 12345) % 2147483648; s = s sprintf("%08x", x) }
        printf "RPUSH list:big item-%d-%s\n", i, substr(s, 1, 40 + i % 60)
        if (i < 200) printf "ZADD zset:big %d.%d m%d-%s\n", i, i % 7, i, substr(s, 1, 8)
        if (i < 200) printf "HSET hash:big field-%d %s\n", i, substr(s, 1, 16)
        if (i < 150) printf "SADD set:big s-%s\n", substr(s, 1, 12)
        if (i < 100) printf "XADD stream:big %d-1 f %s n %d\n", i + 1, substr(s, 1, 20), i
      }
      for (i = 0; i < 600; i++) printf "SADD set:bigint %d\n", i * 7
      s = ""
      for (j = 0; j < 1200; j++) { x = (x * 1103515245 + 12345) % 2147483648; s = s sprintf("%08x", x) }
      printf "RPUSH list:plain before %s after\n", s
      printf "HSET hash:longvalue f %s\n", substr(s, 1, 100)
    }'
    echo "XGROUP CREATE stream:big g 0"
    echo "XREADGROUP GROUP g c1 COUNT 40 STREAMS stream:big >"
    echo "XREADGROUP GROUP g c2 COUNT 10 STREAMS stream:big >"
  } | cli
}

start_server --rdbcompression yes
fill_small
save_as all-types 0100000000000000
fill_big
save_as big-encodings 0400000000000000
echo "CONFIG SET rdbcompression no" | cli
save_as big-encodings-no-lzf 0500000000000000
printf 'FLUSHALL\nFUNCTION FLUSH\nSET k v\n' | cli
save_as one-key 0700000000000000
printf 'FLUSHALL\nFUNCTION FLUSH\n' | cli
save_as empty 0800000000000000

start_server --rdbchecksum no
fill_small
save_as all-types-no-checksum 0200000000000000
