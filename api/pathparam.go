package api

import (
	"net/url"

	"github.com/labstack/echo/v4"
)

// routeEscaped makes echo route every request on its escaped path, as the
// client sent it. echo routes on URL.RawPath when net/http kept one and on
// the decoded URL.Path otherwise, so without this a parameter arrives
// decoded for "invoice%2541" (RawPath empty: "invoice%41") but encoded for
// "x%2Fy" (RawPath kept): no single decoding step is right for both.
// Routed on the escaped path, every parameter arrives encoded, and
// pathParam decodes it exactly once. An encoded "/" (%2F) stays inside its
// parameter.
func routeEscaped(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		u := c.Request().URL
		u.RawPath = u.EscapedPath()
		return next(c)
	}
}

// pathParam is the path parameter name, percent-decoded exactly once (see
// routeEscaped); ok is false for an invalid escape.
func pathParam(c echo.Context, name string) (v string, ok bool) {
	v, err := url.PathUnescape(c.Param(name))
	return v, err == nil
}
