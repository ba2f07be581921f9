package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ragd/ragd/internal/loadgen"
)

// queryFlags choose what each query sends and what is reported besides
// the row.
type queryFlags struct {
	send string
	took bool
}

func (f *queryFlags) register() {
	flag.StringVar(&f.send, "send", "text", "what each query sends: text, vector (the query line's \"vector\"; no text) or both")
	flag.BoolVar(&f.took, "took", false, "print each source's took_ms p50 / p99 (answers where it was ok) under the row")
}

// apply keeps the part of each query that -send names.
func (f *queryFlags) apply(texts []string, vecs [][]float32) ([]string, [][]float32, error) {
	switch f.send {
	case "text":
		for _, t := range texts {
			if t == "" {
				return nil, nil, fmt.Errorf("-send text: a query line has no text")
			}
		}
		return texts, nil, nil
	case "vector", "both":
		for _, v := range vecs {
			if v == nil {
				return nil, nil, fmt.Errorf("-send %s: a query line has no vector", f.send)
			}
		}
		if f.send == "vector" {
			texts = make([]string, len(vecs))
		}
		return texts, vecs, nil
	}
	return nil, nil, fmt.Errorf("-send %q: want text, vector or both", f.send)
}

func (f *queryFlags) report(w io.Writer, r *loadgen.Report) {
	if f.took {
		fmt.Fprintf(w, "\ntook_ms inside ragd, p50 / p99 (%s): %s\n", r.Label,
			strings.Join(loadgen.SourceTimesRow(loadgen.SourceTimes(r.Samples)), ", "))
	}
}
