package app_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ragd/ragd/app"
	"github.com/ragd/ragd/spi"
)

// TestLazyConnectIsNotBoundToOneRequest is issue 12 item 13: the request
// that happens to trigger a connect may go away; the connect goes on, and
// no other request inherits that request's cancellation as its own error
// (which the API would answer as 499 client closed request).
func TestLazyConnectIsNotBoundToOneRequest(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	l := app.NewLazy(func(ctx context.Context) (string, error) {
		close(started)
		select { // a driver honours its ctx while it dials
		case <-ctx.Done():
			return "", ctx.Err()
		case <-release:
			return "backend", nil
		}
	}, time.Now)

	first, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := l.Get(first)
		errc <- err
	}()
	<-started
	cancel() // the first request's client goes away mid-connect
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("the canceled request got %v, want its own cancellation", err)
	}

	// Another request while the connect is still under way fails fast
	// as unavailable, not as canceled.
	_, err := l.Get(context.Background())
	if errors.Is(err, context.Canceled) || !errors.Is(err, spi.ErrUnavailable) {
		t.Fatalf("an innocent request got %v, want spi.ErrUnavailable", err)
	}

	close(release) // the connect completes although its trigger is gone
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := l.Get(context.Background())
		if err == nil {
			if b != "backend" {
				t.Fatalf("got backend %q", b)
			}
			break
		}
		if errors.Is(err, context.Canceled) {
			t.Fatalf("an innocent request inherited another's cancellation: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("never connected: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
