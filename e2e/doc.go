// Package e2e holds ragd's end-to-end tests. It has no code of its own:
// the tests build the real ragd binary, run `ragd serve` against dedicated
// PostgreSQL and Neo4j servers (package internal/testenv), talk to it over
// HTTP only, and stop and restart the servers underneath it.
//
//   - servers_test.go: Cranfield ingest and queries, then Neo4j and
//     PostgreSQL outages one after the other (every query still answers,
//     breakers open and close again on their own, force-close, nothing
//     accepted is lost), and graceful shutdown on SIGTERM.
//   - load_test.go: a bounded loopback load with one backend stopped
//     halfway, run only with RAG_LOAD=1.
//   - deploy_test.go: deploy/rag.servers.yaml parses and names the
//     documented environment variables.
//
// See docs/e2e.md for how to run them and the measured figures.
package e2e
