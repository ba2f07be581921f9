package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// foreign serves h, a handler of the standard library (pprof, the
// console's file server), as an echo handler whose errors are answered in
// the JSON error shape: an error status h writes (http.Error's plain-text
// "Unknown profile", FileServer's "404 page not found") is held back with
// its body, and the status is answered through the error handler instead;
// a 404 with notFound as its message.
func foreign(h http.Handler, notFound string) echo.HandlerFunc {
	return func(c echo.Context) error {
		w := &errorCatcher{ResponseWriter: c.Response()}
		h.ServeHTTP(w, c.Request())
		if w.status == 0 {
			return nil
		}
		// http.Error set a text Content-Type, which the JSON answer must
		// replace (echo keeps a Content-Type already set).
		c.Response().Header().Del(echo.HeaderContentType)
		switch w.status {
		case http.StatusNotFound:
			return newError(w.status, CodeNotFound, "%s", notFound)
		case http.StatusBadRequest:
			return newError(w.status, CodeInvalidParameter, "a request parameter is invalid")
		}
		return echo.NewHTTPError(w.status)
	}
}

// errorCatcher passes a response through unless its status is an error;
// then it records the status and drops the body.
type errorCatcher struct {
	http.ResponseWriter
	status int // the error status held back, 0 when none
	passed bool
}

func (w *errorCatcher) WriteHeader(code int) {
	if !w.passed && w.status == 0 && code >= http.StatusBadRequest {
		w.status = code
		return
	}
	if w.status == 0 {
		w.passed = true
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *errorCatcher) Write(p []byte) (int, error) {
	if w.status != 0 {
		return len(p), nil
	}
	w.passed = true
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (pprof's
// profile and trace extend the write deadline through it).
func (w *errorCatcher) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *errorCatcher) Flush() {
	if w.status == 0 {
		w.passed = true
		_ = http.NewResponseController(w.ResponseWriter).Flush() // best effort, like http.Flusher
	}
}
