package ingest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ragd/ragd/spi"
)

// Result codes: a Result whose Status is "failed" carries one.
const (
	CodeInvalidID       = "invalid_id"         // empty, too long, control characters or invalid UTF-8
	CodeDuplicateID     = "duplicate_id"       // the id appears earlier in the same batch
	CodeInvalidTenant   = "invalid_tenant"     // too long or control characters
	CodeTooLarge        = "too_large"          // title or text above the limit
	CodeInvalidText     = "invalid_text"       // title or text is not valid UTF-8 or holds a NUL byte
	CodeEmptyDocument   = "empty_document"     // no title, no text and no vector
	CodeInvalidMetadata = "invalid_metadata"   // too many keys, empty or long keys, long values, NUL bytes
	CodeInvalidVector   = "invalid_vector"     // wrong dimension, NaN or Inf, all zeros
	CodeInvalidEntities = "invalid_entities"   // too many, empty or long entities
	CodeInvalidLinks    = "invalid_links"      // too many links, or a link that is not a valid document id
	CodeInvalidUpdated  = "invalid_updated_at" // updated_at outside the years 1-9999 in UTC

	CodeEmbedderUnavailable = "embedder_unavailable" // the embedder failed (down, breaker open, bad output)
	CodeEmbedderRejected    = "embedder_rejected"    // the embedder refused this text (spi.ErrInvalidQuery)

	CodeTenantForbidden = "tenant_forbidden" // the document names a tenant other than the writer's
	CodeIDConflict      = "id_conflict"      // the id cannot be used (another tenant holds it; not said)

	CodeStoreUnavailable = "store_unavailable" // the record store failed with spi.ErrUnavailable; not written
	CodeStoreRejected    = "store_rejected"    // the record store refused the document (spi.ErrInvalidQuery)
	CodeStoreFailed      = "store_failed"      // the record store failed otherwise; not written
	CodeOutcomeUnknown   = "outcome_unknown"   // the commit was sent, its answer lost: it may have been written
	CodeCanceled         = "canceled"          // ctx ended before the document was written
)

// Limits bound one document. Zero fields take the Default* values.
type Limits struct {
	MaxIDBytes            int `yaml:"max_id_bytes" json:"max_id_bytes"`
	MaxTitleBytes         int `yaml:"max_title_bytes" json:"max_title_bytes"`
	MaxTextBytes          int `yaml:"max_text_bytes" json:"max_text_bytes"`
	MaxMetadataKeys       int `yaml:"max_metadata_keys" json:"max_metadata_keys"`
	MaxMetadataKeyBytes   int `yaml:"max_metadata_key_bytes" json:"max_metadata_key_bytes"`
	MaxMetadataValueBytes int `yaml:"max_metadata_value_bytes" json:"max_metadata_value_bytes"`
	MaxMetadataListItems  int `yaml:"max_metadata_list_items" json:"max_metadata_list_items"`
	MaxEntities           int `yaml:"max_entities" json:"max_entities"`
	MaxLinks              int `yaml:"max_links" json:"max_links"`
	MaxEntityBytes        int `yaml:"max_entity_bytes" json:"max_entity_bytes"`
}

// Default limits.
const (
	DefaultMaxIDBytes            = spi.MaxNameBytes
	DefaultMaxTitleBytes         = 4 << 10
	DefaultMaxTextBytes          = 1 << 20
	DefaultMaxMetadataKeys       = 64
	DefaultMaxMetadataKeyBytes   = 128
	DefaultMaxMetadataValueBytes = 4 << 10
	DefaultMaxMetadataListItems  = 64
	DefaultMaxEntities           = 256
	DefaultMaxLinks              = 256
	DefaultMaxEntityBytes        = 256
)

// WithDefaults returns l with zero fields set to the defaults.
func (l Limits) WithDefaults() Limits {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.MaxIDBytes, DefaultMaxIDBytes)
	def(&l.MaxTitleBytes, DefaultMaxTitleBytes)
	def(&l.MaxTextBytes, DefaultMaxTextBytes)
	def(&l.MaxMetadataKeys, DefaultMaxMetadataKeys)
	def(&l.MaxMetadataKeyBytes, DefaultMaxMetadataKeyBytes)
	def(&l.MaxMetadataValueBytes, DefaultMaxMetadataValueBytes)
	def(&l.MaxMetadataListItems, DefaultMaxMetadataListItems)
	def(&l.MaxEntities, DefaultMaxEntities)
	def(&l.MaxLinks, DefaultMaxLinks)
	def(&l.MaxEntityBytes, DefaultMaxEntityBytes)
	return l
}

// Validate rejects negative limits.
func (l Limits) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"max_id_bytes", l.MaxIDBytes}, {"max_title_bytes", l.MaxTitleBytes}, {"max_text_bytes", l.MaxTextBytes},
		{"max_metadata_keys", l.MaxMetadataKeys}, {"max_metadata_key_bytes", l.MaxMetadataKeyBytes},
		{"max_metadata_value_bytes", l.MaxMetadataValueBytes}, {"max_metadata_list_items", l.MaxMetadataListItems},
		{"max_entities", l.MaxEntities},
		{"max_links", l.MaxLinks}, {"max_entity_bytes", l.MaxEntityBytes},
	} {
		if f.v < 0 {
			return fmt.Errorf("%w: limits.%s must be >= 0, got %d", ErrConfig, f.name, f.v)
		}
	}
	return nil
}

// docError is a validation failure: a code and a message that never quotes
// the document's content.
type docError struct {
	code, msg string
}

func invalid(code, format string, args ...any) *docError {
	return &docError{code: code, msg: fmt.Sprintf(format, args...)}
}

// checkID checks a name an upsert introduces (id, tenant, link) by
// spi.ValidateName.
func checkID(what, id string, maxBytes int) *docError {
	return nameError(what, spi.ValidateName(id, maxBytes))
}

// checkStoredID checks an id a delete looks up by spi.ValidateStoredName,
// so documents stored under the earlier, looser rule can be deleted.
func checkStoredID(id string, maxBytes int) *docError {
	return nameError("id", spi.ValidateStoredName(id, maxBytes))
}

func nameError(what string, err error) *docError {
	if err == nil {
		return nil
	}
	return invalid(CodeInvalidID, "%s: %s", what, strings.TrimPrefix(err.Error(), spi.ErrInvalidQuery.Error()+": "))
}

func hasNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }

// checkVector checks a given or embedded vector: the dimension, finite
// values, and not all zeros (such a vector has no direction and matches
// nothing meaningfully).
func checkVector(v []float32, dim int) *docError {
	if err := spi.ValidateVector(v, dim); err != nil {
		return invalid(CodeInvalidVector, "%s", strings.TrimPrefix(err.Error(), spi.ErrInvalidQuery.Error()+": "))
	}
	for _, x := range v {
		if x != 0 {
			return nil
		}
	}
	return invalid(CodeInvalidVector, "the vector is all zeros")
}

func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}

// validate checks one document against the limits and the vector dimension
// (dim 0 means vectors are not accepted: there is no vector store).
func validate(d *spi.Document, l Limits, dim int) *docError {
	if e := checkID("id", d.ID, l.MaxIDBytes); e != nil {
		return e
	}
	if d.Tenant != "" {
		if e := checkID("tenant", d.Tenant, l.MaxIDBytes); e != nil {
			e.code = CodeInvalidTenant
			return e
		}
	}
	if len(d.Title) > l.MaxTitleBytes {
		return invalid(CodeTooLarge, "title is %d bytes, at most %d allowed", len(d.Title), l.MaxTitleBytes)
	}
	if len(d.Text) > l.MaxTextBytes {
		return invalid(CodeTooLarge, "text is %d bytes, at most %d allowed", len(d.Text), l.MaxTextBytes)
	}
	if !utf8.ValidString(d.Title) || !utf8.ValidString(d.Text) {
		return invalid(CodeInvalidText, "title or text is not valid UTF-8")
	}
	if hasNUL(d.Title) || hasNUL(d.Text) {
		return invalid(CodeInvalidText, "title or text holds a NUL byte")
	}
	if err := spi.ValidateUpdatedAt(d.UpdatedAt); err != nil {
		return invalid(CodeInvalidUpdated, "%s", strings.TrimPrefix(err.Error(), spi.ErrInvalidQuery.Error()+": "))
	}
	if d.Title == "" && d.Text == "" && len(d.Vector) == 0 {
		return invalid(CodeEmptyDocument, "document has no title, text or vector")
	}
	if len(d.Metadata) > l.MaxMetadataKeys {
		return invalid(CodeInvalidMetadata, "metadata has %d keys, at most %d allowed", len(d.Metadata), l.MaxMetadataKeys)
	}
	if err := d.Metadata.Validate(); err != nil {
		return invalid(CodeInvalidMetadata, "%s", strings.TrimPrefix(err.Error(), spi.ErrInvalidMetadata.Error()+": "))
	}
	for _, k := range slices.Sorted(maps.Keys(d.Metadata)) {
		v := d.Metadata[k]
		var strs []string
		for _, it := range v.Scalars() {
			if it.Kind() == spi.KindString {
				strs = append(strs, it.Str())
			}
		}
		size := 0
		for _, s := range strs {
			size += len(s)
		}
		switch {
		case k == "":
			return invalid(CodeInvalidMetadata, "metadata key must not be empty")
		case len(k) > l.MaxMetadataKeyBytes:
			return invalid(CodeInvalidMetadata, "metadata key is %d bytes, at most %d allowed", len(k), l.MaxMetadataKeyBytes)
		case hasControl(k) || !utf8.ValidString(k):
			return invalid(CodeInvalidMetadata, "metadata key contains control characters or invalid UTF-8")
		case k[0] == '$':
			return invalid(CodeInvalidMetadata, "metadata key %q starts with $, which the filter language reserves for operators", k)
		case size > l.MaxMetadataValueBytes:
			return invalid(CodeInvalidMetadata, "metadata value of key %q is %d bytes, at most %d allowed", k, size, l.MaxMetadataValueBytes)
		case v.Kind() == spi.KindList && len(v.Items()) > l.MaxMetadataListItems:
			return invalid(CodeInvalidMetadata, "metadata list of key %q has %d items, at most %d allowed", k, len(v.Items()), l.MaxMetadataListItems)
		}
		for _, s := range strs {
			if !utf8.ValidString(s) || hasNUL(s) {
				return invalid(CodeInvalidMetadata, "metadata value of key %q is not valid UTF-8 or holds a NUL byte", k)
			}
		}
	}
	if len(d.Vector) > 0 {
		if dim == 0 {
			return invalid(CodeInvalidVector, "a vector was given but no vector store is configured")
		}
		if e := checkVector(d.Vector, dim); e != nil {
			return e
		}
	}
	if len(d.Entities) > l.MaxEntities {
		return invalid(CodeInvalidEntities, "%d entities, at most %d allowed", len(d.Entities), l.MaxEntities)
	}
	for i, e := range d.Entities {
		if e == "" || len(e) > l.MaxEntityBytes || !utf8.ValidString(e) || hasControl(e) {
			return invalid(CodeInvalidEntities, "entity %d must be 1 to %d bytes of UTF-8 without control characters", i, l.MaxEntityBytes)
		}
	}
	if len(d.Links) > l.MaxLinks {
		return invalid(CodeInvalidLinks, "%d links, at most %d allowed", len(d.Links), l.MaxLinks)
	}
	for i, id := range d.Links {
		if e := checkID(fmt.Sprintf("link %d", i), id, l.MaxIDBytes); e != nil {
			e.code = CodeInvalidLinks
			return e
		}
	}
	return nil
}
