#!/bin/bash
# Entry point of ragd-local/opensearch: writes opensearch.yml from defaults
# and the environment variables named like settings (lower case with dots,
# as the official image maps them: discovery.type=single-node), and runs
# the node as the opensearch user (OpenSearch refuses root) on the JRE the
# image has. OPENSEARCH_JAVA_OPTS reaches the JVM through bin/opensearch.
set -euo pipefail
cmd=${1:-opensearch}
[ "$cmd" = opensearch ] || exec "$@"
if [ "$(id -u)" = 0 ]; then
  chown -R opensearch:opensearch "$OPENSEARCH_HOME/data" "$OPENSEARCH_HOME/logs" "$OPENSEARCH_PATH_CONF"
  exec setpriv --reuid=opensearch --regid=opensearch --init-groups "${BASH_SOURCE[0]}" "$@"
fi

declare -A conf=(
  [network.host]=0.0.0.0
  # One node unless told otherwise; single-node discovery also spares the
  # production bootstrap checks (vm.max_map_count) a container cannot pass.
  [discovery.type]=single-node
  # A shared machine's disk may be fuller than the watermarks allow.
  [cluster.routing.allocation.disk.threshold_enabled]=false
)
# Settings are not valid shell names, so read them from env's output.
while IFS='=' read -r key value; do
  if [[ $key =~ ^[a-z0-9_]+(\.[a-z0-9_-]+)+$ ]]; then conf[$key]=$value; fi
done < <(env)
: > "$OPENSEARCH_PATH_CONF/opensearch.yml"
for key in "${!conf[@]}"; do printf '%s: %s\n' "$key" "${conf[$key]}" >> "$OPENSEARCH_PATH_CONF/opensearch.yml"; done

OPENSEARCH_JAVA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
export OPENSEARCH_JAVA_HOME
export OPENSEARCH_JAVA_OPTS=${OPENSEARCH_JAVA_OPTS:--Xms512m -Xmx512m}
exec "$OPENSEARCH_HOME/bin/opensearch"
