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
// that no two triples share an encoding.
func KeyOf(identity, role, text string) Key {
	h := sha256.New()
	var n [8]byte
	for _, s := range [...]string{identity, role, text} {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	var k Key
	h.Sum(k[:0])
	return k
}
