package spi

import "context"

// DocCounter is an optional capability of a store: how many documents it
// holds, of every tenant, deleted ones not included. It may read the whole
// store (a COUNT over a table); callers that ask often cache the answer.
type DocCounter interface {
	DocCount(ctx context.Context) (int, error)
}
