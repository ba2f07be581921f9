// Package testenv gives integration tests real PostgreSQL (with pgvector),
// Neo4j and OpenSearch servers.
//
// Two kinds of server are offered:
//
//   - Shared servers, cheap and isolated per test: Postgres creates a fresh
//     database (with the vector extension) for the calling test and drops it
//     at cleanup; Neo4j returns the connection details of a shared server
//     (Neo4j Community has a single database, so tests isolate themselves by
//     unique ids or tenants and clean up after themselves).
//   - Dedicated servers, private to one test, which may stop and restart them:
//     DedicatedPostgres, DedicatedNeo4j and DedicatedOpenSearch. Stop really
//     stops the server process (clients see connection refused); Kill ends
//     it as a crash; Start brings it back on the same port with the same
//     data; Pause freezes it (its port accepts connections and nothing
//     answers, as a hung server) until Unpause.
//
// A dedicated server is a process or a container; the faults are the same
// operations on either: stop = docker stop, kill = SIGKILL, pause =
// docker pause (the cgroup freezer) or SIGSTOP to the process and its
// workers.
//
// RAG_TESTENV=containers makes every PostgreSQL and Neo4j server a
// container (OpenSearch nodes stay processes) started with
// testcontainers-go, whatever the variables below say (it fails when no
// Docker engine answers). The images are RAG_PG_IMAGE (default
// pgvector/pgvector:pg17) and RAG_NEO4J_IMAGE (default neo4j:5.26);
// `eval "$(scripts/images.sh env)"` names the ones scripts/images.sh builds
// from Debian's packages. Ports are published on 127.0.0.1 only. Containers
// carry the label org.ragd.testenv and are removed when the test process
// ends, however it ends (testcontainers-go's own reaper, whose image comes
// from Docker Hub, is off unless TESTCONTAINERS_RYUK_DISABLED says otherwise).
//
// Otherwise (RAG_TESTENV unset or "processes") servers are found in this
// order:
//
//  1. Environment variables. RAG_TEST_PG_DSN is an admin (superuser) DSN of a
//     shared PostgreSQL server with pgvector installed; RAG_TEST_NEO4J_URI,
//     RAG_TEST_NEO4J_USER and RAG_TEST_NEO4J_PASSWORD name a shared Neo4j
//     server. Dedicated servers are started from installed binaries:
//     RAG_TEST_PG_BIN is a PostgreSQL bin directory (initdb, postgres) and
//     RAG_TEST_NEO4J_HOME a Neo4j home whose lib/ holds the server's jars.
//     RAG_TEST_OPENSEARCH_URL names a shared OpenSearch node, and
//     RAG_TEST_OPENSEARCH_HOME an install dedicated nodes run from (as
//     RAG_TEST_OPENSEARCH_USER when the test runs as root). OpenSearch has
//     no Docker fallback here.
//     `eval "$(scripts/services.sh env)"` sets all of them.
//  2. A reachable Docker engine: containers of RAG_PG_IMAGE and
//     RAG_NEO4J_IMAGE are started with testcontainers-go.
//  3. Otherwise the test is skipped with a message naming the variables, or,
//     when RAG_REQUIRE_INTEGRATION=1, it fails.
//
// A variable that is set but names a server that does not answer is a test
// failure, never a skip: a misconfigured environment must not hide tests.
package testenv
