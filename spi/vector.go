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
