package main

import (
	"bytes"
	"go/format"
	"os"
	"testing"
)

// The committed unpack_gen.go is what the generator writes today.
func TestGeneratedFileIsCurrent(t *testing.T) {
	want, err := format.Source(generate())
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../unpack_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("unpack_gen.go is stale: run go generate in backends/keyword")
	}
}
