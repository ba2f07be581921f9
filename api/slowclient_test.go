package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/retriever"
)

// serveTCP serves e on a loopback listener until the test ends and returns
// the listener's address.
func serveTCP(t *testing.T, e *env) string {
	t.Helper()
	srv := e.server.HTTPServer()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(e.server.Listener(ln)) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close() // stalled test sockets do not finish on their own
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// stall opens a connection that sends a query's headers, announcing a
// body it never sends.
func stall(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /v1/query HTTP/1.1\r\nHost: ragd\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"te", adminKey)
	return c
}

func post(t *testing.T, client *http.Client, url, key, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestStalledBodiesDoNotHoldTheService is issue 12 item 7: more clients
// than max_in_flight that send headers and then stall the body do not make
// the server answer 429 to everyone else.
func TestStalledBodiesDoNotHoldTheService(t *testing.T) {
	e := newEnv(t, func(c *api.Config) { c.Server.MaxInFlight, c.Server.ReadTimeoutS = 4, 60 })
	addr := serveTCP(t, e)
	stalled := make([]net.Conn, 6)
	for i := range stalled {
		stalled[i] = stall(t, addr)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	// Wait until the server is inside all six requests (the in-flight
	// gauge counts them, and the scrape itself).
	waitInFlight(t, client, addr, len(stalled)+1)
	for i := 0; i < 20; i++ {
		code, body := post(t, client, "http://"+addr+"/v1/query", adminKey, `{"text":"a"}`)
		if code != http.StatusOK {
			t.Fatalf("query %d with %d stalled clients: %d %s", i, len(stalled), code, body)
		}
		rec, err := client.Get("http://" + addr + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		rec.Body.Close()
		if rec.StatusCode != http.StatusOK {
			t.Fatalf("readyz with stalled clients only: %d", rec.StatusCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReadyzReflectsSaturation: when every in-flight slot is busy with
// real work, /readyz says so (a load balancer should send elsewhere), and
// recovers when the work ends.
func TestReadyzReflectsSaturation(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 8)
	e := newEnv(t, func(c *api.Config) { c.Server.MaxInFlight = 2 })
	e.searcher.RetrieveFn = func(ctx context.Context, q retriever.Query) (*retriever.Result, error) {
		entered <- struct{}{}
		<-release
		return &retriever.Result{Missing: []string{}, Sources: map[string]retriever.SourceStatus{}}, nil
	}
	addr := serveTCP(t, e)
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	done := make(chan int, 2)
	for range 2 {
		go func() {
			code, _ := post(t, client, "http://"+addr+"/v1/query", adminKey, `{"text":"a"}`)
			done <- code
		}()
	}
	<-entered
	<-entered
	resp, err := client.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	ready := decodeResponse[api.ReadyResponse](t, resp)
	if resp.StatusCode != http.StatusServiceUnavailable || ready.Status != "not_ready" || !strings.Contains(ready.Reason, "in flight") {
		t.Fatalf("readyz while saturated: %d %+v", resp.StatusCode, ready)
	}
	close(release)
	for range 2 {
		if code := <-done; code != http.StatusOK {
			t.Fatalf("query: %d", code)
		}
	}
	resp, err = client.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	if ready := decodeResponse[api.ReadyResponse](t, resp); resp.StatusCode != http.StatusOK {
		t.Fatalf("readyz after the work ended: %d %+v", resp.StatusCode, ready)
	}
}

// TestStalledHeadersAreCutOff: a client that never finishes its headers is
// disconnected after server.read_header_timeout_s.
func TestStalledHeadersAreCutOff(t *testing.T) {
	e := newEnv(t, func(c *api.Config) { c.Server.ReadHeaderTimeoutS = 1 })
	addr := serveTCP(t, e)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: ragd\r\n") // no blank line
	// The server must close the connection; the bound is generous so a
	// loaded machine cannot fail the test, and far below read_timeout_s.
	_ = c.SetReadDeadline(time.Now().Add(4 * time.Second))
	_, err = bufio.NewReader(c).ReadString('\n')
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept a connection with unfinished headers open: %v", err)
	}
}

func decodeResponse[T any](t *testing.T, resp *http.Response) T {
	t.Helper()
	defer resp.Body.Close()
	var v T
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %T: %v: %s", v, err, b)
	}
	return v
}

// waitInFlight waits until ragd_http_requests_in_flight reaches n.
func waitInFlight(t *testing.T, client *http.Client, addr string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := client.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var got float64
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "ragd_http_requests_in_flight "); ok {
				fmt.Sscan(v, &got)
			}
		}
		if got >= float64(n) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("in flight %v, want %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
