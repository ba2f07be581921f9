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
