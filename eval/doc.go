// Package eval measures retrieval quality on BEIR-layout test collections
// (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv): it loads the dataset,
// ingests the corpus through an ingest.Pipeline, runs every judged query in
// several retrieval modes (keyword-only, vector-only, graph-only, hybrid)
// and reports nDCG@10, Recall@100 and MRR@10 with linear gains as
// pytrec_eval computes them, plus latency percentiles.
package eval
