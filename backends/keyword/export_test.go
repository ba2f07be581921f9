package keyword

// WithScoring returns a view of b that shares its index but queries with
// another title boost and BM25 k1 and b (zero keeps b's value).
func (b *Backend) WithScoring(titleBoost, k1, bb float64) *Backend {
	cfg := b.cfg
	if titleBoost != 0 {
		cfg.TitleBoost = titleBoost
	}
	if k1 != 0 {
		cfg.K1 = k1
	}
	if bb != 0 {
		cfg.B = bb
	}
	return &Backend{cfg: cfg, st: b.st, gen: b.gen}
}
