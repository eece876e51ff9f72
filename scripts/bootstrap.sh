#!/usr/bin/env bash
# Installs everything the project needs on a fresh Debian 12 machine, and nothing twice:
#   - Debian packages: Redis (server + tools), Java 17 (JDK: the load driver compiles its bindings), Maven, rsync,
#     OpenSSH's server (the foreign-cluster tests' hosts), R with the irace package (the race module's
#     optional irace backend), PostgreSQL's server (the shared history's tests start one of their own), and
#     Prometheus with its node and Redis exporters (the monitoring stack of the lab, docs/monitoring.md);
#   - a Python virtual environment in .venv with the pinned requirements.txt;
#   - the collection link .collections/ansible_collections/tactician/nosql -> the checkout;
#   - FerretDB, the MongoDB-compatible server of the MongoDB tests, built with Go into .lab/ferretdb (when Go is there).
# The Cassandra jars are resolved from Maven Central by the cassandra_node role when a node is first started.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

need_apt=()
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need_apt+=(redis-tools)
command -v javac >/dev/null 2>&1 || need_apt+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || need_apt+=(maven)
command -v rsync >/dev/null 2>&1 || need_apt+=(rsync)
# The foreign-cluster tests reach their hosts over SSH, as Ansible reaches an operator's nodes.
[ -x /usr/sbin/sshd ] || need_apt+=(openssh-server)
Rscript -e 'library(irace)' >/dev/null 2>&1 || need_apt+=(r-cran-irace)
# The shared history's tests start a PostgreSQL server of their own from the package's binaries.
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || need_apt+=(postgresql)
# The monitoring stack: the collection runs these binaries itself (role prometheus_server and the exporter roles)
# on loopback ports of its own, and neither uses nor touches the packages' services (docs/monitoring.md names the
# one port a running packaged service would share with the lab's defaults: 9121).
[ -x /usr/bin/prometheus ] || need_apt+=(prometheus)
[ -x /usr/bin/prometheus-node-exporter ] || need_apt+=(prometheus-node-exporter)
[ -x /usr/bin/prometheus-redis-exporter ] || need_apt+=(prometheus-redis-exporter)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "bootstrap: installing Debian packages: ${need_apt[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(0 if (3, 11) <= sys.version_info[:2] < (3, 14) else 1)'; then
  echo "bootstrap: $python is $("$python" -V 2>&1); Python 3.11 to 3.13 is needed (set PYTHON=...)" >&2
  exit 1
fi
stamp=.venv/.requirements.sha256
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "bootstrap: creating .venv with the pinned requirements"
  [ -x .venv/bin/python ] || "$python" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r requirements.txt
  echo "$want" > "$stamp"
fi

mkdir -p .collections/ansible_collections/tactician
ln -sfn ../../.. .collections/ansible_collections/tactician/nosql
mkdir -p .ansible/tmp
# FerretDB, the MongoDB-compatible server of the MongoDB tests (docs/testing-mongodb.md): built with Go from
# tests/ferretdb into .lab/ferretdb (about 1.5 minutes the first time, reused after). Without Go it is skipped here
# and the FerretDB tests skip, saying why.
ferretdb_rc=0
ferretdb_log=.lab/ferretdb-build.log
mkdir -p .lab
if scripts/build-ferretdb.sh --check 2>/dev/null; then :; elif [ $? -eq 1 ]; then
  echo "bootstrap: building FerretDB with Go (about 1.5 minutes the first time; log $ferretdb_log)"
fi
scripts/build-ferretdb.sh >"$ferretdb_log" 2>&1 || ferretdb_rc=$?
case $ferretdb_rc in
  0) ferretdb="FerretDB $(tail -n1 "$ferretdb_log" | sed "s|^$root/||")" ;;
  2) ferretdb="no FerretDB: $(tail -n1 "$ferretdb_log" | sed 's/^build-ferretdb: //')" ;;
  *) echo "bootstrap: building FerretDB failed (scripts/build-ferretdb.sh):" >&2; tail -n 20 "$ferretdb_log" >&2; exit 1 ;;
esac
echo "bootstrap: ready ($(.venv/bin/ansible --version | sed -n 1p), $(java -version 2>&1 | head -n1), $(redis-server --version | cut -d' ' -f1-3), $ferretdb)"
