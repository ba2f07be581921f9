package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ragd/ragd/retriever"
)

// query serves POST /v1/query: the body is a retriever.Query, the answer a
// retriever.Result.
func (s *Server) query() echo.HandlerFunc {
	return func(c echo.Context) error {
		var q retriever.Query
		if err := s.decodeJSON(c, &q); err != nil {
			return err
		}
		p := principal(c)
		if p.Tenant != "" {
			if q.Tenant != "" && q.Tenant != p.Tenant {
				e := newError(http.StatusForbidden, CodeTenantForbidden, "this API key is bound to another tenant")
				e.Detail.Field = "tenant"
				return e
			}
			q.Tenant = p.Tenant
		}
		if strings.TrimSpace(q.Text) == "" && len(q.Vector) == 0 {
			return fieldError(CodeEmptyQuery, "text", "text or vector is required")
		}
		if err := q.Validate(s.cfg.Searcher.Limits()); err != nil {
			return err
		}
		res, err := s.cfg.Searcher.Retrieve(c.Request().Context(), q)
		if err != nil {
			return err
		}
		if res == nil {
			return errors.New("api: searcher returned neither a result nor an error")
		}
		return s.writeJSON(c, http.StatusOK, res)
	}
}
