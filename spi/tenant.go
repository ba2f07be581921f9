package spi

// Visible reports whether a document of tenant docTenant may be seen by a
// request scoped to tenant scope: an unscoped request (scope "") sees every
// document; a scoped one sees only documents of that very tenant — never
// another tenant's, nor a document without a tenant. It is the rule every
// retrieval backend applies to a request's Tenant, and the one place the
// retriever and the API apply it to documents they hold.
func Visible(scope, docTenant string) bool {
	return scope == "" || scope == docTenant
}
