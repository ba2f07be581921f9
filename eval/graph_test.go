package eval_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	ragdapp "github.com/ragd/ragd/app"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/eval"
	"github.com/ragd/ragd/spi"
)

// The graph earns its place when users give entities and links: a document
// that shares no word with the query, but the entity the query names and a
// link from the document that matches it, is found only with the graph
// source and its expansion on. Measured through the real embedded stack
// (keyword, vector with the built-in embedder, graph), with the extractor
// off so that every entity and link is the user's.
func TestGraphHelpsWithUserEntities(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	off := false
	cfg.Auth.Enabled = &off
	cfg.DataDir = t.TempDir()
	cfg.Embedder.Kind = config.KindHashing
	cfg.Ingest.ExtractEntities = false
	inst, err := ragdapp.New(ctx, &cfg, ragdapp.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	// rag.yaml's defaults leave the graph dormant until something reads
	// it; build it with the corpus, as `ragd eval` does for graph modes.
	if err := inst.WakeGraph(ctx); err != nil {
		t.Fatal(err)
	}

	ds := &eval.Dataset{Name: "graph-case", Qrels: map[string]eval.Judgments{}}
	add := func(d spi.Document) { ds.Corpus = append(ds.Corpus, d) }
	// Three products, each with an overview that names it and a service
	// note that does not: the note is about the product only through the
	// entity and the overview's link.
	for _, p := range []struct{ id, name, note string }{
		{"falcon", "Falcon 7X", "Replace the cabin pressure controller every 4000 hours and check the outflow valve seals."},
		{"orca", "Orca drone", "Recalibrate the gimbal after each firmware update; inspect rotor arms for cracks."},
		{"lynx", "Lynx tractor", "Change hydraulic filters seasonally and grease the three-point hitch pins."},
	} {
		add(spi.Document{ID: p.id, Title: p.name + " overview", Text: "The " + p.name + " product overview and specifications.",
			Entities: []string{p.name}, Links: []string{p.id + "-note"}})
		add(spi.Document{ID: p.id + "-note", Title: "Service note", Text: p.note, Entities: []string{p.name}})
		ds.Queries = append(ds.Queries, eval.Query{ID: p.id, Text: p.name + " maintenance"})
		ds.Qrels[p.id] = eval.Judgments{p.id + "-note": 2, p.id: 1}
	}
	// Filler that shares the query words "maintenance" and the names'
	// words, so the notes are not found by default for lack of rivals.
	for i, txt := range []string{
		"General maintenance schedule for the workshop.", "Maintenance of falcon statues in the park.",
		"Orca whales and their maintenance in aquariums.", "Lynx habitats need little maintenance.",
		"Tractor maintenance checklist for beginners.", "Drone racing league maintenance rules.",
	} {
		add(spi.Document{ID: "filler-" + string(rune('a'+i)), Title: "Notes", Text: txt})
	}
	if st, err := eval.Ingest(ctx, ds, inst.Pipeline, eval.IngestOptions{}); err != nil {
		t.Fatalf("ingest: %v (%+v)", err, st)
	}
	modes, err := eval.ParseModes("hybrid,hybrid(graph=1 expand=1)")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := eval.Run(ctx, ds, inst.Retriever, modes, eval.Options{Limit: 10, Warmup: -1})
	if err != nil {
		t.Fatal(err)
	}
	without, with := rep.Modes[0], rep.Modes[1]
	t.Logf("nDCG@10 without the graph %.4f, with it %.4f", without.NDCG10, with.NDCG10)
	if without.Failed+with.Failed > 0 {
		t.Fatalf("failed queries: %+v", rep.Modes)
	}
	if with.NDCG10 < without.NDCG10+0.1 {
		t.Fatalf("the graph did not help: nDCG@10 %.4f with, %.4f without", with.NDCG10, without.NDCG10)
	}
}
