package retriever

// StageOne exposes the stage-1 source list to the black-box tests.
func StageOne() []string { return stage1[:] }
