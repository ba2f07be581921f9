package faults_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/faults"
	"github.com/ragd/ragd/spi"
)

type okKeyword struct{ spi.KeywordRetrievalBackend }

func (okKeyword) Retrieve(context.Context, spi.KeywordRequest) ([]spi.Ref, error) {
	return []spi.Ref{{ID: "a"}}, nil
}

func TestInjector(t *testing.T) {
	in := faults.New()
	kw := in.Keyword(okKeyword{})
	ctx := context.Background()
	if refs, err := kw.Retrieve(ctx, spi.KeywordRequest{}); err != nil || len(refs) != 1 {
		t.Fatalf("no fault: %v, %v", refs, err)
	}
	if err := in.Set(spi.SourceKeyword, faults.Fault{Fail: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := kw.Retrieve(ctx, spi.KeywordRequest{}); !errors.Is(err, spi.ErrUnavailable) {
		t.Fatalf("fail fault: %v", err)
	}
	if err := in.Set(spi.SourceKeyword, faults.Fault{Hang: true}); err != nil {
		t.Fatal(err)
	}
	hctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := kw.Retrieve(hctx, spi.KeywordRequest{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hang fault: %v", err)
	}
	if got := in.List(); len(got) != 1 || !got[spi.SourceKeyword].Hang {
		t.Fatalf("List = %v", got)
	}
	if err := in.Set(spi.SourceKeyword, faults.Fault{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kw.Retrieve(ctx, spi.KeywordRequest{}); err != nil || len(in.List()) != 0 {
		t.Fatalf("cleared: %v, %v", err, in.List())
	}
	for _, bad := range []string{"nope", spi.SourceGraphExpand} {
		if err := in.Set(bad, faults.Fault{Fail: true}); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
	if err := in.Set(spi.SourceGraph, faults.Fault{DelayMS: -1}); err == nil {
		t.Error("negative delay accepted")
	}
}

// Clearing a hang releases the calls it holds, as SIGCONT does.
func TestHealReleasesHungCalls(t *testing.T) {
	in := faults.New()
	kw := in.Keyword(okKeyword{})
	if err := in.Set(spi.SourceKeyword, faults.Fault{Hang: true}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := kw.Retrieve(context.Background(), spi.KeywordRequest{})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a hung call returned: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	if err := in.Set(spi.SourceKeyword, faults.Fault{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("released call: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("healing did not release the hung call")
	}
}
