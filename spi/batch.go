package spi

import (
	"fmt"
	"sort"
	"strings"
)

// BatchError reports the documents of a batch write that failed, by id.
// Documents not listed were written. It unwraps to every per-document error,
// so errors.Is(err, ErrUnavailable) holds when any document failed for that
// reason.
type BatchError struct {
	Failed map[string]error
}

func (e *BatchError) Error() string {
	ids := make([]string, 0, len(e.Failed))
	for id := range e.Failed {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b strings.Builder
	fmt.Fprintf(&b, "spi: %d document(s) failed", len(ids))
	for i, id := range ids {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(ids)-3)
			break
		}
		fmt.Fprintf(&b, "; %s: %v", id, e.Failed[id])
	}
	return b.String()
}

// Unwrap returns the per-document errors in id order.
func (e *BatchError) Unwrap() []error {
	ids := make([]string, 0, len(e.Failed))
	for id := range e.Failed {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	errs := make([]error, len(ids))
	for i, id := range ids {
		errs[i] = e.Failed[id]
	}
	return errs
}
