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
//     stops the server process (clients see connection refused); Start
//     brings it back on the same port with the same data. An OpenSearch node
//     can also be paused (SIGSTOP: a hung server) and killed.
//
// Servers are found in this order:
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
//  2. A reachable Docker engine: containers pgvector/pgvector:pg16 and neo4j:5
//     are started with testcontainers-go.
//  3. Otherwise the test is skipped with a message naming the variables, or,
//     when RAG_REQUIRE_INTEGRATION=1, it fails.
//
// A variable that is set but names a server that does not answer is a test
// failure, never a skip: a misconfigured environment must not hide tests.
package testenv
