package graph_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/ragd/ragd/ingest/keyphrase"
	"github.com/ragd/ragd/internal/benchutil"
	"github.com/ragd/ragd/internal/testenv"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

// BenchmarkApplyChanges applies the change log of new documents as the
// servers deployment does (ragd ingest with keyphrase entities): Cranfield's
// documents, or those of the JSONL file RAG_BENCH_APPLY_CORPUS (id, title,
// text: the synthetic corpus of scripts/bench.sh scale, whose copies bring
// new entities), repeated under new ids until RAG_BENCH_APPLY_DOCS (5,600),
// iteration i taking the corpus from document i × RAG_BENCH_APPLY_DOCS, in
// batches of 256, 500, 1,000 and 2,000 entries (RAG_BENCH_APPLY_BATCHES: a
// comma-separated list). It reports documents/s, ragd's CPU per document
// and, when the server's process is found (its bolt port's listener), the
// server's CPU per document and its JIT compiler threads' share of it: the
// bound on a servers deployment's "every store current".
// Needs a Neo4j (RAG_TEST_NEO4J_URI); the run's documents are deleted
// afterwards. The shared test server's CPU counts other tests' work too:
// RAG_BENCH_NEO4J_DEDICATED=1 starts a server of the benchmark's own
// (testenv.DedicatedNeo4j).
//
//	go test -run '^$' -bench ApplyChanges -benchtime 1x ./backends/graph/
func BenchmarkApplyChanges(b *testing.B) {
	var conn testenv.Neo4jConn
	if os.Getenv("RAG_BENCH_NEO4J_DEDICATED") != "" {
		conn = testenv.DedicatedNeo4j(b).Neo4jConn
	} else {
		conn = testenv.Neo4j(b)
	}
	dir := spitest.CranfieldDir(b)
	n := benchutil.EnvInt(b, "RAG_BENCH_APPLY_DOCS", 5600)
	src, _ := spitest.CranfieldGraph(b, dir, "")
	if path := os.Getenv("RAG_BENCH_APPLY_CORPUS"); path != "" {
		src = nil
		benchutil.EachDocument(b, path, -1, func(d spi.Document) { src = append(src, d) })
	}
	kp, err := keyphrase.New(keyphrase.Config{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := range src {
		if src[i].Entities, err = kp.Extract(ctx, src[i]); err != nil {
			b.Fatal(err)
		}
	}
	pid := listenerPID(conn.URI)
	batches := []int{256, 500, 1000, 2000}
	if s := os.Getenv("RAG_BENCH_APPLY_BATCHES"); s != "" {
		batches = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatal(err)
			}
			batches = append(batches, n)
		}
	}
	for _, batch := range batches {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			be := openBackendB(b, conn)
			for it := range b.N {
				log := "log-" + uniq(b)
				cleanupLog(b, conn, log)
				changes := make([]spi.Change, n)
				for i := range changes {
					d := src[(it*n+i)%len(src)]
					d.ID = fmt.Sprintf("%s-%d", log, i)
					d.Tenant = "t" + strconv.Itoa(i%3)
					changes[i] = spi.Change{Seq: uint64(i + 1), Op: spi.OpUpsert, ID: d.ID, Doc: &d, Version: uint64(i + 1)}
				}
				cpu0, jit0, self0 := procCPU(pid), jitCPU(pid), procCPU(os.Getpid())
				start := time.Now()
				for lo := 0; lo < n; lo += batch {
					hi := min(lo+batch, n)
					if err := be.ApplyChanges(ctx, log, changes[lo:hi], uint64(hi)); err != nil {
						b.Fatal(err)
					}
				}
				el := time.Since(start)
				b.ReportMetric(float64(n)/el.Seconds(), "docs/s")
				b.ReportMetric(float64((procCPU(os.Getpid())-self0).Microseconds())/1000/float64(n), "ragd-cpu-ms/doc")
				if pid > 0 {
					b.ReportMetric(float64((procCPU(pid)-cpu0).Microseconds())/1000/float64(n), "server-cpu-ms/doc")
					b.ReportMetric(float64((jitCPU(pid)-jit0).Microseconds())/1000/float64(n), "server-jit-cpu-ms/doc")
				}
			}
		})
	}
}

func openBackendB(b *testing.B, conn testenv.Neo4jConn) spitest.AppliedStore {
	return openBackend(b, conn, nil)
}

// cleanupLog deletes one log's documents, versions and checkpoint.
func cleanupLog(tb testing.TB, conn testenv.Neo4jConn, log string) {
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		drv, err := neo4j.NewDriverWithContext(conn.URI, neo4j.BasicAuth(conn.User, conn.Password, ""))
		if err != nil {
			tb.Logf("cleanup: %v", err)
			return
		}
		defer drv.Close(ctx)
		sess := drv.NewSession(ctx, neo4j.SessionConfig{})
		defer sess.Close(ctx)
		for _, q := range []string{
			`MATCH (d:Document) WHERE d.ragd_log = $log CALL (d) { DETACH DELETE d } IN TRANSACTIONS OF 1000 ROWS`,
			`MATCH (v:RagdVersion) WHERE v.log = $log CALL (v) { DELETE v } IN TRANSACTIONS OF 5000 ROWS`,
			`MATCH (c:RagdCheckpoint {log: $log}) DELETE c`,
		} {
			res, err := sess.Run(ctx, q, map[string]any{"log": log})
			if err == nil {
				_, err = res.Consume(ctx)
			}
			if err != nil {
				tb.Logf("cleanup: %v", err)
			}
		}
	})
}

// listenerPID returns the process listening on uri's port, 0 when unknown.
func listenerPID(uri string) int {
	port := uri[strings.LastIndex(uri, ":")+1:]
	out, err := exec.Command("ss", "-ltnpH", "sport = :"+port).Output()
	if err != nil {
		return 0
	}
	s := string(out)
	i := strings.Index(s, "pid=")
	if i < 0 {
		return 0
	}
	s = s[i+4:]
	if j := strings.IndexAny(s, ",)"); j > 0 {
		s = s[:j]
	}
	pid, _ := strconv.Atoi(s)
	return pid
}

// procCPU is the CPU time process pid has used (0 when unknown).
func procCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	return statCPU(fmt.Sprintf("/proc/%d/stat", pid))
}

// statCPU is user + system time from a /proc stat file (0 when unreadable).
func statCPU(path string) time.Duration {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * (time.Second / 100)
}

// jitCPU is the CPU time of process pid's JIT compiler threads alive now
// (a JVM's "C1/C2 CompilerThread"s; 0 when unknown).
func jitCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	var sum time.Duration
	for _, t := range tasks {
		comm, err := os.ReadFile(t + "/comm")
		if err != nil || !strings.Contains(string(comm), "CompilerThre") {
			continue
		}
		sum += statCPU(t + "/stat") // /proc/TID/stat would sum the whole process
	}
	return sum
}
