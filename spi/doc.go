// Package spi is ragd's provider contract: the interfaces a retrieval backend,
// an embedder or a document store implements so the retriever can use it.
//
// spi relates to package retriever as database/sql/driver relates to
// database/sql: backends implement these small interfaces, the retriever
// consumes them, and neither knows the other's concrete types. Required
// interfaces are kept tiny; extra capabilities (a full scan for index
// rebuilds, a dimension report) are optional interfaces discovered by type
// assertion.
//
// Every method takes a context first. Unless a method's comment says
// otherwise:
//   - when ctx is cancelled or its deadline passes, the method returns promptly
//     with an error that wraps ctx.Err() (or context.Cause(ctx));
//   - an unreachable or failing backend is reported with an error wrapping
//     ErrUnavailable;
//   - a request the backend can never satisfy (bad vector, bad filter,
//     malformed query syntax the caller asked for) wraps ErrInvalidQuery and
//     must not be retried;
//   - a valid request with nothing to search (a text with no word the
//     backend indexes) returns ErrNothingToSearch, and only when the
//     backend was not contacted: an answer that proves nothing about the
//     backend must not look like one that does;
//   - methods are safe for concurrent use.
package spi
