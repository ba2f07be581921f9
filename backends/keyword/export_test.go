package keyword

// UseBleveStats switches Retrieve to bleve's own BM25 collection
// statistics, for the tuning comparison.
func (b *Backend) UseBleveStats(on bool) { b.bleveStats = on }

// WithTitleBoost returns a view of b that shares its index but queries with
// another title boost.
func (b *Backend) WithTitleBoost(x float64) *Backend {
	cfg := b.cfg
	cfg.TitleBoost = x
	return &Backend{cfg: cfg, bleveStats: b.bleveStats, st: b.st, gen: b.gen}
}
