package vcache

import (
	"crypto/sha256"
	"encoding/binary"
)

// Roles of a text: the same text embeds differently as a query and as a
// document for models that mark them (e5's "query: " and "passage: ").
const (
	RoleDocument = "document"
	RoleQuery    = "query"
)

// Key is the content address of one embedding.
type Key [32]byte

// KeyOf is the SHA-256 of identity, role and text, each length-prefixed so
// that no two triples share an encoding: the key of a text of no tenant.
func KeyOf(identity, role, text string) Key { return TenantKey(identity, role, "", text) }

// TenantKey is the key of text embedded for tenant: KeyOf's for the empty
// tenant (so the entries of a cache written before tenants had keys of
// their own stay the untenanted ones), else the SHA-256 of identity, role,
// tenant and text, each length-prefixed. No four-part encoding equals a
// three-part one (the third length prefix of a three-part encoding counts
// exactly the bytes after it, a four-part one's counts fewer), so no
// tenant's text shares a key with another tenant's or with an untenanted
// one: a cache keyed by TenantKey answers a tenant only what it sent.
func TenantKey(identity, role, tenant, text string) Key {
	h := sha256.New()
	var n [8]byte
	parts := []string{identity, role, tenant, text}
	if tenant == "" {
		parts = []string{identity, role, text}
	}
	for _, s := range parts {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	var k Key
	h.Sum(k[:0])
	return k
}
