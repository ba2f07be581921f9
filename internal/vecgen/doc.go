// Package vecgen makes benchmark vectors with the structure of a real
// embedding space, for corpora far larger than the real texts at hand.
//
// Neither of the two easy choices measures a vector index fairly. Uniform
// random unit vectors have no structure: every point is about as far from
// every other, the true nearest neighbours are barely nearer than the rest,
// and a graph index (HNSW) is at its worst. Near-copies (a few thousand
// documents repeated with small changes) are the opposite: each true top 10
// is a choice among hundreds of almost equal neighbours. Real embeddings sit
// between: a few hundred directions carry most of the variance, neighbours
// share topics, no two documents coincide.
//
// So the points are made from real ones. A pool of real vectors — the
// embeddings of ten thousand and more distinct texts (the sentences and
// titles of a BEIR-layout collection such as Cranfield, and variants of
// them with words swapped, see PoolTexts) made by the configured model
// (`ragd embed`) — is mixed and perturbed:
//
//	doc(i) = normalise(w1·home + w2·p2 [+ w3·p3] + noise)
//
// where home is a pool vector of the text the document's words come from
// (the document's source in the collection, so its text and its vector
// agree, as hybrid search needs), p2 is another of the same source or, as
// often, any pool vector, p3 (in about every other document) any pool vector, the
// weights are random with w1 the largest, and noise is Gaussian, Params.Noise
// per dimension. Every document is a distinct point, deterministic in
// (Params.Seed, i, source): the first N documents of a larger corpus are
// the corpus of N.
//
// Queries are new points: the collection's own queries embedded as queries,
// and pool sentences held out of every mixture (TextParams.HeldShare), each
// with its text. Exact answers (Exact) and the measures that tell this
// space from near-copies and from noise (nearest-neighbour similarities
// with Percentiles, the spectrum's effective dimension with SpectrumOf,
// TwoNN, and the queries' local intrinsic dimension and relative contrast
// with LID and RelativeContrast) are computed here too, for
// cmd/ragd-vectors and scripts/bench.sh scale.
package vecgen
