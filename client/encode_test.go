package client_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ragd/ragd/client"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/wire"
)

// TestInvalidValuesAreRefusedInPlainWords: a metadata value or a filter
// operand that is not a value (the zero spi.Value) is refused before
// anything is sent, with the server's words (which document, which key,
// why) and errors.Is matching the spi sentinel, not encoding/json's "error
// calling MarshalJSON for type spi.Value".
func TestInvalidValuesAreRefusedInPlainWords(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	c := mustClient(t, client.Config{BaseURL: srv.URL, MaxRetries: -1})
	docs := []spi.Document{
		{ID: "a", Text: "x", Metadata: spi.Metadata{"lang": spi.String("en")}},
		{ID: "b", Text: "x", Metadata: spi.Metadata{"page": spi.Int(3), "owner": {}}},
	}
	_, upsertErr := c.Upsert(context.Background(), docs, nil)
	err := upsertErr
	if !errors.Is(err, spi.ErrInvalidMetadata) {
		t.Fatalf("Upsert of a zero Value: %v, want spi.ErrInvalidMetadata", err)
	}
	for _, want := range []string{"documents[1]", `"owner"`, "no value"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Upsert error %q does not say %s", err, want)
		}
	}
	_, err = c.Query(context.Background(), wire.Query{Text: "x", Filter: spi.And(spi.Eq("lang", spi.String("en")), spi.Eq("owner", spi.Value{}))})
	if !errors.Is(err, spi.ErrInvalidQuery) {
		t.Fatalf("Query with a zero Value in its filter: %v, want spi.ErrInvalidQuery", err)
	}
	for _, want := range []string{"filter", "value must be"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Query error %q does not say %s", err, want)
		}
	}
	for _, err := range []error{upsertErr, err} {
		for _, goName := range []string{"spi.", "MarshalJSON", "json:"} {
			if strings.Contains(err.Error(), goName) {
				t.Errorf("error %q names Go (%s)", err, goName)
			}
		}
	}
	// A vector component that is not finite: encoding/json said "json:
	// unsupported value: NaN".
	_, nanErr := c.Upsert(context.Background(), []spi.Document{{ID: "v", Vector: []float32{1, float32(math.NaN())}}}, nil)
	if nanErr == nil || !strings.Contains(nanErr.Error(), "a number is NaN") || strings.Contains(nanErr.Error(), "json:") {
		t.Errorf("Upsert of a NaN vector: %v, want it said in plain words", nanErr)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
}
