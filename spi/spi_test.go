package spi_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/ragd/ragd/spi"
)

func TestValidateVector(t *testing.T) {
	if err := spi.ValidateVector([]float32{1, 2, 3}, 3); err != nil {
		t.Fatal(err)
	}
	for _, v := range [][]float32{{1, 2}, {1, 2, float32(math.NaN())}, {float32(math.Inf(1)), 0, 0}} {
		if err := spi.ValidateVector(v, 3); !errors.Is(err, spi.ErrInvalidQuery) {
			t.Errorf("ValidateVector(%v) = %v, want ErrInvalidQuery", v, err)
		}
	}
}

func TestBatchError(t *testing.T) {
	err := error(&spi.BatchError{Failed: map[string]error{
		"b": fmt.Errorf("x: %w", spi.ErrUnavailable),
		"a": fmt.Errorf("y: %w", spi.ErrInvalidQuery),
	}})
	if !errors.Is(err, spi.ErrUnavailable) || !errors.Is(err, spi.ErrInvalidQuery) {
		t.Fatalf("BatchError must unwrap to each cause: %v", err)
	}
	if errors.Is(err, spi.ErrNotFound) {
		t.Fatal("BatchError matched an unrelated sentinel")
	}
	want := "spi: 2 document(s) failed; a: y: spi: invalid query; b: x: spi: backend unavailable"
	if err.Error() != want {
		t.Fatalf("Error() = %q, want %q", err.Error(), want)
	}
}

func TestLastByID(t *testing.T) {
	docs := []spi.Document{{ID: "a", Title: "1"}, {ID: "b", Title: "2"}, {ID: "a", Title: "3"}, {ID: "c", Title: "4"}, {ID: "b", Title: "5"}}
	got := spi.LastByID(docs, spi.DocumentID)
	var s []string
	for _, d := range got {
		s = append(s, d.ID+d.Title)
	}
	if fmt.Sprint(s) != "[a3 c4 b5]" {
		t.Fatalf("LastByID = %v, want [a3 c4 b5] (each id's last, in the order of the last ones)", s)
	}
	distinct := docs[:2]
	if got := spi.LastByID(distinct, spi.DocumentID); &got[0] != &distinct[0] || len(got) != 2 {
		t.Fatal("LastByID copied a batch without repeated ids")
	}
}
