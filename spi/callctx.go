package spi

import "context"

// tenantKey carries the tenant a call is made for in a context.
type tenantKey struct{}

// WithTenant returns ctx marked as a call made for tenant ("" for a call
// of no tenant). The requests of this package carry their tenant where a
// backend needs it to answer; the context carries it to what sits between
// a caller and a backend and keeps something from call to call, such as
// the embedder's vector caches, which keep what each tenant sent apart so
// that a hit cannot tell one tenant what another sent.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

// TenantFrom is the tenant WithTenant marked ctx with, or "".
func TenantFrom(ctx context.Context) string {
	t, _ := ctx.Value(tenantKey{}).(string)
	return t
}

// operatorKey marks a call an operator made.
type operatorKey struct{}

// AsOperator returns ctx marked as a call an operator made: a request with
// an admin key bound to no tenant (or with auth off), or the server acting
// on its operator's configuration or command. What only an operator
// decides for every tenant, because it costs every tenant, is allowed to
// such a call only: waking a dormant store (building the embedded graph a
// configuration left unread costs CPU, heap and disk for everyone) is one.
func AsOperator(ctx context.Context) context.Context {
	return context.WithValue(ctx, operatorKey{}, true)
}

// IsOperator reports whether ctx is marked by AsOperator.
func IsOperator(ctx context.Context) bool {
	v, _ := ctx.Value(operatorKey{}).(bool)
	return v
}
