package spi

import (
	"fmt"
	"math"
)

// ValidateVector checks a query or document vector against a store's
// dimension: the length must equal dim and every component must be finite.
// The error wraps ErrInvalidQuery.
func ValidateVector(v []float32, dim int) error {
	if len(v) != dim {
		return fmt.Errorf("%w: vector has dimension %d, want %d", ErrInvalidQuery, len(v), dim)
	}
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("%w: vector component %d is not a finite number", ErrInvalidQuery, i)
		}
	}
	return nil
}

// CheckEmbeddings checks an embedder's answer to n texts: one vector per
// text, each of length dim with finite components (Embedder's contract).
// An answer that breaks it is the embedder's failure (a model whose
// weights hold NaN answers NaN without an error): the error wraps
// ErrUnavailable, so that a breaker in front of the embedder counts it.
func CheckEmbeddings(vecs [][]float32, n, dim int) error {
	if len(vecs) != n {
		return fmt.Errorf("%w: the embedder answered %d vectors for %d texts", ErrUnavailable, len(vecs), n)
	}
	for k, v := range vecs {
		if len(v) != dim {
			return fmt.Errorf("%w: the embedder answered a vector of dimension %d, want %d", ErrUnavailable, len(v), dim)
		}
		for i, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("%w: the embedder answered a vector (text %d) whose component %d is %v", ErrUnavailable, k, i, x)
			}
		}
	}
	return nil
}
