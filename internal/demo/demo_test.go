package demo_test

import (
	"testing"

	"github.com/ragd/ragd/internal/demo"
)

func TestDocuments(t *testing.T) {
	docs, err := demo.Documents()
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 20 {
		t.Fatalf("sample corpus has %d documents, want at least 20", len(docs))
	}
	ids := map[string]bool{}
	for _, d := range docs {
		if d.ID == "" || d.Title == "" || d.Text == "" || len(d.Entities) == 0 {
			t.Errorf("incomplete sample document %+v", d)
		}
		if ids[d.ID] {
			t.Errorf("duplicate id %q", d.ID)
		}
		ids[d.ID] = true
	}
	for _, d := range docs {
		for _, l := range d.Links {
			if !ids[l] {
				t.Errorf("%s links to unknown document %q", d.ID, l)
			}
		}
	}
}
