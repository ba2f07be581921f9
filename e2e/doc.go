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
// Parallel tests. TestCrashConvergence (and its three modes),
// TestOpenSearchFaults, TestHungGraphDoesNotHoldWrites and
// TestReplicasConverge call t.Parallel: they mostly wait on processes
// and servers, and each has its own temporary directory, ragd processes
// (listening on ports the kernel picks), PostgreSQL database
// (testenv.Postgres) or dedicated server, and ids and tenants under a
// random tag on the shared Neo4j (its graph's versions are read per
// change log). Every other test is sequential and so runs first, alone in
// this package: TestCrashDuringGraphCatchUp, whose graph catch-up is
// CPU-bound and must converge within 30 s of a restart (18 s measured
// alone at load 25), the browser tests, and those not reviewed for shared
// state.
//
// See docs/e2e.md for how to run them and the measured figures.
package e2e
