package e2e_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// graphCatchUpDocs is how many documents are written while the graph is
// dormant, each with graphCatchUpEntities entities: enough that the
// catch-up takes many applies (crashConfigBase sets 500 entries each)
// and the kill falls between or inside them.
const (
	graphCatchUpDocs     = 12000
	graphCatchUpEntities = 24
)

// TestCrashDuringGraphCatchUp writes documents while the embedded graph is
// dormant (rag.yaml's defaults: nothing reads it), then kills ragd with
// SIGKILL while the graph catches up from the change log, twice:
//
//   - woken by the configuration (the graph source switched on in rag.yaml),
//     restarted with the same file;
//   - woken by a query that asks for the graph, restarted with the defaults
//     (the graph dormant again) and asked again.
//
// Each time the restarted graph must converge: it answers, and once ragd
// is stopped it holds exactly the record's ids at the record's versions, as
// does the keyword index.
func TestCrashDuringGraphCatchUp(t *testing.T) {
	startBuild()
	for _, by := range []string{"configuration", "query"} {
		t.Run("woken by "+by, func(t *testing.T) {
			dir := t.TempDir()
			dataDir := filepath.Join(dir, "data")
			off, on := filepath.Join(dir, "off.yaml"), filepath.Join(dir, "on.yaml")
			for path, cfg := range map[string]string{off: crashConfigBase(dataDir, "", nil), on: crashConfig(dataDir, "", nil)} {
				if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			p := startRagd(t, off)
			c := newClient(p.addr, "")
			ids := writeDormant(t, c, graphCatchUpDocs)
			c.close()
			p.stop(t)

			cfg := on
			if by == "query" {
				cfg = off
			}
			p = startRagd(t, cfg)
			c = newClient(p.addr, "")
			if by == "query" {
				askGraph(t, c)
			}
			applied, head := killMidCatchUp(t, p, c)
			c.close()
			t.Logf("killed with the graph at %d of %d", applied, head)

			restart := time.Now()
			p = startRagd(t, cfg)
			c = newClient(p.addr, "")
			for !askGraph(t, c) {
				if time.Since(restart) > convergeBound {
					t.Fatalf("the graph did not answer within %v of the restart", convergeBound)
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Logf("the graph answered %v after the restart", time.Since(restart).Round(time.Millisecond))
			waitConverged(t, c, restart, convergeBound)
			c.close()
			p.stop(t)

			snap := readStores(t, dataDir, "", nil, ids)
			if len(snap.record) != len(ids) {
				t.Fatalf("the record holds %d documents, want %d", len(snap.record), len(ids))
			}
			for name, got := range snap.derived {
				if !maps.Equal(got, snap.record) {
					n := 0
					for id, v := range snap.record {
						if got[id] != v {
							n++
						}
					}
					t.Errorf("%s holds %d documents, %d of the record's %d differ or are missing", name, len(got), n, len(snap.record))
				}
			}
		})
	}
}

// writeDormant writes n documents with entities and checks that the
// results call the graph dormant.
func writeDormant(t *testing.T, c *client, n int) []string {
	t.Helper()
	var ids []string
	for start := 0; start < n; start += 250 {
		var docs []document
		for i := start; i < min(n, start+250); i++ {
			id := fmt.Sprintf("doc-%05d", i)
			ids = append(ids, id)
			ents := []string{"flutter"}
			for k := range graphCatchUpEntities - 1 {
				ents = append(ents, fmt.Sprintf("panel %d", (i*7+k*131)%5000))
			}
			docs = append(docs, document{ID: id, Title: "wing " + id, Text: fmt.Sprintf("flutter of wing panel %d at mach %d", i, i%7),
				Entities: ents})
		}
		var resp batchResponse
		st, body, err := c.call(context.Background(), http.MethodPost, "/v1/documents", upsertRequest{Documents: docs}, &resp)
		if err != nil || st != http.StatusOK || resp.OK != len(docs) {
			t.Fatalf("write: %d %v %s", st, err, body)
		}
		if g := resp.Results[0].Stores["graph"]; g != "dormant" {
			t.Fatalf("the graph is %q in a write's result, want dormant", g)
		}
	}
	return slices.Sorted(slices.Values(ids))
}

// askGraph sends one query that asks for the graph and reports whether
// the graph answered it.
func askGraph(t *testing.T, c *client) bool {
	t.Helper()
	on := true
	var res queryResult
	st, _, err := c.call(context.Background(), http.MethodPost, "/v1/query",
		queryRequest{Text: "flutter of wing panel", Sources: map[string]sourceOptions{"graph": {Enabled: &on}}}, &res)
	return err == nil && st == http.StatusOK && res.Sources["graph"].Status == "ok"
}

// killMidCatchUp waits until the graph has applied part of the log, not
// all of it, and kills ragd.
func killMidCatchUp(t *testing.T, p *ragdProc, c *client) (applied, head uint64) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		var h healthResponse
		st, _, err := c.call(context.Background(), http.MethodGet, "/v1/status/health", nil, &h)
		if err == nil && st == http.StatusOK && h.Log != nil {
			for _, s := range h.Log.Stores {
				if s.Store != "graph" || s.Dormant {
					continue
				}
				if s.Applied >= h.Log.Head {
					t.Fatalf("the graph caught up (%d of %d) before the kill: the trial needs more documents", s.Applied, h.Log.Head)
				}
				if s.Applied > 0 {
					if err := p.cmd.Process.Kill(); err != nil {
						t.Fatal(err)
					}
					<-p.done
					return s.Applied, h.Log.Head
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the graph did not start catching up within 2 minutes")
	return 0, 0
}
